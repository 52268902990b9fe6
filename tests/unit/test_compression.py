"""Compression codecs against the format facts of Kafka's Java client and the codecs' specs."""

from __future__ import annotations

import random
import struct
import tracemalloc
import zlib
from collections.abc import Callable

import lz4.block
import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kcli.errors import CorruptRecordError, UsageError
from kcli.storage.compression import (
    DEFAULT_MAX_DECOMPRESSED_BYTES,
    CompressionType,
    compress,
    decompress,
    xxh32,
)

CODECS = list(CompressionType)
COMPRESSED = [c for c in CompressionType if c is not CompressionType.NONE]
MiB = 1024 * 1024


@st.composite
def payloads(draw: st.DrawFn, max_size: int = 300_000) -> bytes:
    """Random or repetitive bytes, cheap to draw even when large."""
    size = draw(st.integers(min_value=0, max_value=max_size))
    rng = random.Random(draw(st.integers(min_value=0, max_value=2**32)))
    if draw(st.booleans()):
        return rng.randbytes(size)
    unit = rng.randbytes(rng.randint(1, 64))
    return (unit * (size // len(unit) + 1))[:size]


# -- names ----------------------------------------------------------------------------------------


def test_codec_ids_and_labels() -> None:
    assert [(c.value, c.label) for c in CompressionType] == [
        (0, "none"),
        (1, "gzip"),
        (2, "snappy"),
        (3, "lz4"),
        (4, "zstd"),
    ]


@pytest.mark.parametrize("name", ["none", "GZIP", "Snappy", "lz4", "zstd"])
def test_from_name_is_case_insensitive(name: str) -> None:
    assert CompressionType.from_name(name).label == name.lower()


@pytest.mark.parametrize("name", ["", "deflate", "lz4hc", "label"])
def test_from_name_rejects_unknown_names(name: str) -> None:
    with pytest.raises(UsageError):
        CompressionType.from_name(name)


def test_default_bound() -> None:
    assert DEFAULT_MAX_DECOMPRESSED_BYTES == 128 * MiB


# -- round trips ----------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(CODECS), payloads())
def test_round_trip(codec: CompressionType, data: bytes) -> None:
    compressed = compress(codec, data)
    assert decompress(codec, compressed) == data
    assert decompress(int(codec), memoryview(compressed)) == data


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", [0, 1, 32 * 1024, 64 * 1024 + 1, 200_000])
def test_round_trip_at_block_edges(codec: CompressionType, size: int) -> None:
    data = random.Random(size).randbytes(size)
    assert decompress(codec, compress(codec, data)) == data


@pytest.mark.parametrize("codec", COMPRESSED)
def test_exactly_max_size_is_accepted(codec: CompressionType) -> None:
    compressed = compress(codec, b"k" * 1000)
    assert decompress(codec, compressed, max_size=1000) == b"k" * 1000
    with pytest.raises(CorruptRecordError):
        decompress(codec, compressed, max_size=999)


# -- gzip -----------------------------------------------------------------------------------------


def test_gzip_writes_a_gzip_stream() -> None:
    compressed = compress(CompressionType.GZIP, b"kafka" * 100)
    assert compressed[:3] == b"\x1f\x8b\x08"  # ID1, ID2, CM = deflate (RFC 1952)
    assert zlib.decompress(compressed, wbits=31) == b"kafka" * 100


def test_gzip_reads_concatenated_members() -> None:
    members = compress(CompressionType.GZIP, b"abc") + compress(CompressionType.GZIP, b"def")
    assert decompress(CompressionType.GZIP, members) == b"abcdef"


# -- snappy ---------------------------------------------------------------------------------------

XERIAL_HEADER = b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" + b"\x00\x00\x00\x01"


def xerial(*blocks: bytes) -> bytes:
    return XERIAL_HEADER + b"".join(struct.pack(">i", len(b)) + b for b in blocks)


def test_snappy_writes_xerial_framing_in_32k_blocks() -> None:
    data = random.Random(1).randbytes(100 * 1024)
    compressed = compress(CompressionType.SNAPPY, data)
    assert compressed[:16] == XERIAL_HEADER
    pos, sizes = 16, []
    while pos < len(compressed):
        (length,) = struct.unpack_from(">i", compressed, pos)
        sizes.append(len(snappy.uncompress(compressed[pos + 4 : pos + 4 + length])))
        pos += 4 + length
    assert pos == len(compressed)
    assert sizes == [32 * 1024] * 3 + [4 * 1024]


def test_snappy_of_nothing_is_the_header_alone() -> None:
    assert compress(CompressionType.SNAPPY, b"") == XERIAL_HEADER
    assert decompress(CompressionType.SNAPPY, XERIAL_HEADER) == b""


def test_snappy_reads_every_xerial_block() -> None:
    chunks = [b"first " * 50, b"second " * 3000, b"third"]
    stream = xerial(*(snappy.compress(c) for c in chunks))
    assert decompress(CompressionType.SNAPPY, stream) == b"".join(chunks)


def test_snappy_reads_raw_snappy() -> None:
    data = b"written by an old client " * 40
    assert decompress(CompressionType.SNAPPY, snappy.compress(data)) == data
    assert decompress(CompressionType.SNAPPY, snappy.compress(b"")) == b""


def test_snappy_checks_each_block_against_the_bound() -> None:
    stream = xerial(snappy.compress(b"a" * 600), snappy.compress(b"b" * 600))
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, stream, max_size=1000)


def test_snappy_rejects_a_negative_block_length() -> None:
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, XERIAL_HEADER + b"\xff\xff\xff\xff" + snappy.compress(b"x"))


# -- lz4 ------------------------------------------------------------------------------------------

# Magic 0x184D2204 little-endian; FLG 0x60: version 01, independent blocks, no checksums, no
# content size; BD 0x40: 64 KiB blocks.
LZ4_KAFKA_HEADER = b"\x04\x22\x4d\x18\x60\x40"


def test_lz4_writes_the_java_client_frame() -> None:
    compressed = compress(CompressionType.LZ4, b"kafka" * 100)
    assert compressed[:6] == LZ4_KAFKA_HEADER
    assert compressed[6] == (xxh32(b"\x60\x40") >> 8) & 0xFF == 0x82
    assert compressed[-4:] == b"\x00\x00\x00\x00"  # end mark, no content checksum after it


@pytest.mark.parametrize("make", [random.Random(2).randbytes, bytes], ids=["random", "zeros"])
def test_lz4_blocks_hold_at_most_64k(make: Callable[[int], bytes]) -> None:
    compressed = compress(CompressionType.LZ4, make(200_000))
    pos, sizes = 7, []
    while (word := struct.unpack_from("<I", compressed, pos)[0]) != 0:
        stored = word & 0x7FFFFFFF
        block = compressed[pos + 4 : pos + 4 + stored]
        # The high bit marks a block stored uncompressed.
        sizes.append(stored if word & 0x80000000 else len(lz4.block.decompress(block, uncompressed_size=1 << 16)))
        pos += 4 + stored
    assert pos + 4 == len(compressed)
    assert sizes == [65536, 65536, 65536, 200_000 - 3 * 65536]


def old_kafka_frame(data: bytes) -> bytes:
    frame = bytearray(compress(CompressionType.LZ4, data))
    frame[6] = (xxh32(bytes(frame[:6])) >> 8) & 0xFF
    return bytes(frame)


def test_lz4_legacy_header_checksum() -> None:
    legacy = old_kafka_frame(b"message set " * 10)
    assert legacy[6] != compress(CompressionType.LZ4, b"")[6]
    assert decompress(CompressionType.LZ4, legacy, legacy_lz4=True) == b"message set " * 10
    with pytest.raises(CorruptRecordError, match="checksum"):
        decompress(CompressionType.LZ4, legacy)


def test_lz4_legacy_mode_still_accepts_a_correct_header_and_rejects_others() -> None:
    correct = compress(CompressionType.LZ4, b"abc")
    assert decompress(CompressionType.LZ4, correct, legacy_lz4=True) == b"abc"
    wrong = correct[:6] + bytes((correct[6] ^ 0x01,)) + correct[7:]
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.LZ4, wrong, legacy_lz4=True)


@pytest.mark.parametrize(
    "options",
    [
        {},  # lz4.frame's defaults: linked blocks, content size in the header
        {"block_checksum": True, "content_checksum": True},
        {"block_size": lz4.frame.BLOCKSIZE_MAX4MB},
    ],
)
def test_lz4_reads_other_valid_frames(options: dict) -> None:
    data = random.Random(3).randbytes(1000) * 300
    assert decompress(CompressionType.LZ4, lz4.frame.compress(data, **options)) == data


def test_lz4_legacy_header_with_content_size() -> None:
    frame = bytearray(lz4.frame.compress(b"sized", block_linked=False))
    assert frame[4] & 0x08
    frame[14] = (xxh32(bytes(frame[:14])) >> 8) & 0xFF
    assert decompress(CompressionType.LZ4, bytes(frame), legacy_lz4=True) == b"sized"


# -- xxHash32 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "seed", "expected"),
    [
        (b"", 0, 0x02CC5D05),
        (b"a", 0, 0x550D7456),
        (b"abc", 0, 0x32D153FF),
        (b"", 1, 0x0B2CB792),
    ],
)
def test_xxh32_vectors(data: bytes, seed: int, expected: int) -> None:
    assert xxh32(data, seed) == expected


@settings(max_examples=50, deadline=None)
@given(st.binary(max_size=100))
def test_xxh32_matches_the_lz4_content_checksum(data: bytes) -> None:
    # An LZ4 frame's content checksum is xxh32(content, 0), little-endian, after the end mark.
    frame = lz4.frame.compress(data, content_checksum=True, store_size=False)
    assert xxh32(data) == int.from_bytes(frame[-4:], "little")


# -- zstd -----------------------------------------------------------------------------------------


def test_zstd_reads_streamed_frames_without_content_size() -> None:
    data = b"streamed " * 10_000
    writer = zstandard.ZstdCompressor(write_checksum=True).compressobj()
    frame = writer.compress(data) + writer.flush()
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(CompressionType.ZSTD, frame) == data
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.ZSTD, frame, max_size=len(data) - 1)


def test_zstd_reads_concatenated_and_skippable_frames() -> None:
    skippable = b"\x50\x2a\x4d\x18" + struct.pack("<I", 3) + b"pad"
    stream = compress(CompressionType.ZSTD, b"abc") + skippable + compress(CompressionType.ZSTD, b"def")
    assert decompress(CompressionType.ZSTD, stream) == b"abcdef"


# -- bounds ---------------------------------------------------------------------------------------


def bombs() -> list[tuple[str, CompressionType, bytes]]:
    zeros = bytes(10 * MiB)
    cases = [(c.label, c, compress(c, zeros)) for c in CompressionType]
    cases.append(("raw snappy", CompressionType.SNAPPY, snappy.compress(zeros)))
    return cases


@pytest.mark.parametrize(("label", "codec", "bomb"), bombs(), ids=lambda v: v if isinstance(v, str) else "")
def test_output_is_bounded_while_decompressing(label: str, codec: CompressionType, bomb: bytes) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError, match="more than 1048576 bytes"):
            decompress(codec, bomb, max_size=MiB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 3 * MiB
    assert decompress(codec, compress(codec, b"after")) == b"after"


# -- corruption -----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", COMPRESSED)
def test_empty_input_is_corrupt(codec: CompressionType) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(codec, b"")


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_corrupt(codec: int) -> None:
    with pytest.raises(CorruptRecordError, match=f"codec {codec}"):
        decompress(codec, compress(CompressionType.GZIP, b"x"))
    with pytest.raises(CorruptRecordError):
        decompress(codec, b"")


@pytest.mark.parametrize("codec", COMPRESSED)
@pytest.mark.parametrize("cut", [1, 5, "half"])
def test_truncation_is_corrupt(codec: CompressionType, cut: int | str) -> None:
    compressed = compress(codec, random.Random(4).randbytes(5000))
    end = len(compressed) // 2 if cut == "half" else len(compressed) - cut
    with pytest.raises(CorruptRecordError):
        decompress(codec, compressed[:end])


@pytest.mark.parametrize("codec", COMPRESSED)
def test_trailing_garbage_is_corrupt(codec: CompressionType) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(codec, compress(codec, b"payload" * 20) + b"\x01\x02\x03\x04\x05\x06\x07\x08\x09")


@st.composite
def mutated(draw: st.DrawFn) -> tuple[CompressionType, bytes]:
    codec = draw(st.sampled_from(COMPRESSED))
    data = bytearray(compress(codec, draw(payloads(max_size=3000))))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        pos = draw(st.integers(min_value=0, max_value=max(len(data) - 1, 0)))
        if kind == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(min_value=0, max_value=7))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif data:
            del data[pos]
    return codec, bytes(data)


@settings(max_examples=400, deadline=None)
@given(mutated(), st.sampled_from([100, 10_000, DEFAULT_MAX_DECOMPRESSED_BYTES]), st.booleans())
def test_mutated_input_decodes_or_is_corrupt(case: tuple[CompressionType, bytes], max_size: int, legacy: bool) -> None:
    codec, data = case
    try:
        out = decompress(codec, data, max_size, legacy_lz4=legacy)
    except CorruptRecordError:
        return
    assert isinstance(out, bytes) and len(out) <= max_size


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(COMPRESSED), st.binary(max_size=64), st.booleans())
def test_arbitrary_bytes_decode_or_are_corrupt(codec: CompressionType, data: bytes, legacy: bool) -> None:
    for candidate in (data, _magic(codec) + data):
        try:
            out = decompress(codec, candidate, 10_000, legacy_lz4=legacy)
        except CorruptRecordError:
            continue
        assert len(out) <= 10_000


def _magic(codec: CompressionType) -> bytes:
    return {
        CompressionType.GZIP: b"\x1f\x8b\x08\x00",
        CompressionType.SNAPPY: XERIAL_HEADER,
        CompressionType.LZ4: LZ4_KAFKA_HEADER,
        CompressionType.ZSTD: b"\x28\xb5\x2f\xfd",
    }[codec]
