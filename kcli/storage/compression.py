"""The compression codecs of Kafka's record formats, as the Java client writes and reads them.

    id  codec   on the wire
    0   none
    1   gzip    a gzip stream (RFC 1952)
    2   snappy  xerial snappy-java framing: magic ``\\x82SNAPPY\\0``, int32 version 1, int32
                min compatible version 1, then blocks of int32 length + raw snappy, each block
                holding at most 32 KiB of input. Readers also meet plain raw snappy.
    3   lz4     an LZ4 frame: magic 0x184D2204, FLG 0x60 (version 1, independent blocks),
                BD 0x40 (64 KiB blocks), HC, blocks, end mark. Kafka before 0.10 computed HC
                over magic + descriptor instead of the descriptor alone.
    4   zstd    a zstd frame

Decompression is bounded while it runs: output beyond ``max_size`` is never materialised, so a
small crafted payload cannot exhaust memory. ``open_stream`` inflates on demand, a few bytes at a
time, so a reader that learns from the first bytes that the rest is not wanted (the record
framing is already wrong) stops there. Every failure is a ``CorruptRecordError``.
"""

from __future__ import annotations

import enum
import struct
import threading
import zlib

import lz4.frame
import snappy
import zstandard

from kcli.errors import CorruptRecordError, UsageError

DEFAULT_MAX_DECOMPRESSED_BYTES = 128 * 1024 * 1024

_READ_SIZE = 1024 * 1024  # decompressors allocate their whole output limit up front


class CompressionType(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def label(self) -> str:
        """The name Kafka's tools print: ``none``, ``gzip``, ``snappy``, ``lz4`` or ``zstd``."""
        return self.name.lower()

    @classmethod
    def from_name(cls, name: str) -> CompressionType:
        try:
            return cls[name.upper()]
        except KeyError:
            names = ", ".join(c.label for c in cls)
            raise UsageError(f"unknown compression type {name!r} (expected one of: {names})") from None


def compress(codec: CompressionType | int, data: bytes) -> bytes:
    """``data`` compressed the way Apache Kafka's Java client does it."""
    codec = _codec(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        deflater = zlib.compressobj(wbits=31)
        return deflater.compress(data) + deflater.flush()
    if codec is CompressionType.SNAPPY:
        return _xerial_compress(data)
    if codec is CompressionType.LZ4:
        return lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
    return _zstd_contexts().compressor.compress(data)


def decompress(
    codec: CompressionType | int,
    data: bytes | memoryview,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    *,
    legacy_lz4: bool = False,
) -> bytes:
    """``data`` decompressed; at most ``max_size`` bytes are accepted, and only produced.

    ``legacy_lz4`` also accepts the LZ4 header checksum written by Kafka before 0.10.
    """
    if _codec_or_corrupt(codec) is CompressionType.NONE:
        _check_size(len(data), max_size, CompressionType.NONE)
        return bytes(data)
    stream = open_stream(codec, data, max_size, legacy_lz4=legacy_lz4)
    parts = []
    while part := stream.read(_READ_SIZE):
        parts.append(part)
    return b"".join(parts)


class DecompressionStream:
    """Inflates one compressed payload on demand. ``read(n)`` gives the next bytes (see read), b""
    at the end of a whole stream; past ``max_size`` bytes in total, or on corrupt or truncated
    input, it raises CorruptRecordError. ``produced`` counts the bytes given out."""

    def __init__(self, codec: CompressionType, max_size: int) -> None:
        self.codec = codec
        self.max_size = max_size
        self.produced = 0

    def read(self, n: int) -> bytes:
        """The next bytes: at least 1 (b"" at the end), at most ``n``, except that an LZ4 stream
        hands out whole blocks (``n`` rounded up to LZ4_WHOLE_BLOCKS)."""
        want = min(n, self.max_size - self.produced + 1)
        try:
            part = self._read(max(want, 1))
        except (zlib.error, snappy.UncompressError, RuntimeError, zstandard.ZstdError) as e:
            # python-snappy's UncompressError carries its message on the cause.
            raise CorruptRecordError(f"corrupt {self.codec.label} data: {e.__cause__ or e}") from None
        self.produced += len(part)
        _check_size(self.produced, self.max_size, self.codec)
        return part

    def _read(self, n: int) -> bytes:
        raise NotImplementedError


def open_stream(
    codec: CompressionType | int,
    data: bytes | memoryview,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES,
    *,
    legacy_lz4: bool = False,
) -> DecompressionStream:
    """A stream over ``data`` compressed with ``codec`` (not NONE)."""
    codec = _codec_or_corrupt(codec)
    view = memoryview(data)
    if codec is CompressionType.GZIP:
        return _GzipStream(view, max_size)
    if codec is CompressionType.SNAPPY:
        return _SnappyStream(view, max_size)
    if codec is CompressionType.LZ4:
        return _Lz4Stream(view, max_size, legacy_lz4)
    if codec is CompressionType.ZSTD:
        return _ZstdStream(view, max_size)
    raise ValueError("an uncompressed payload has no decompression stream")


def _codec_or_corrupt(codec: CompressionType | int) -> CompressionType:
    try:
        return _codec(codec)
    except ValueError:
        raise CorruptRecordError(f"unknown compression codec {int(codec)}") from None


def _codec(codec: CompressionType | int) -> CompressionType:
    return codec if isinstance(codec, CompressionType) else CompressionType(codec)


def _check_size(size: int, max_size: int, codec: CompressionType) -> None:
    if size > max_size:
        raise CorruptRecordError(f"{codec.label} data decompresses to more than {max_size} bytes")


def _corrupt(codec: CompressionType, what: str) -> CorruptRecordError:
    return CorruptRecordError(f"corrupt {codec.label} data: {what}")


# -- gzip -----------------------------------------------------------------------------------------


class _GzipStream(DecompressionStream):
    def __init__(self, data: memoryview, max_size: int) -> None:
        super().__init__(CompressionType.GZIP, max_size)
        self._inflater = zlib.decompressobj(wbits=31)
        self._input: bytes | memoryview = data

    def _read(self, n: int) -> bytes:
        while True:
            inflater = self._inflater
            if inflater.eof:
                # Concatenated gzip members form one stream, as Java's GZIPInputStream reads them.
                if not inflater.unused_data:
                    return b""
                self._input = inflater.unused_data
                self._inflater = inflater = zlib.decompressobj(wbits=31)
            part = inflater.decompress(self._input, n)
            self._input = inflater.unconsumed_tail
            if part:
                return part
            if not inflater.eof and not self._input:
                raise _corrupt(CompressionType.GZIP, "truncated stream")


# -- snappy ---------------------------------------------------------------------------------------

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = struct.Struct(">i")


def _xerial_compress(data: bytes) -> bytes:
    view = memoryview(data)
    out = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = snappy.compress(view[start : start + _XERIAL_BLOCK_SIZE])
        out.append(_INT32.pack(len(block)))
        out.append(block)
    return b"".join(out)


class _SnappyStream(DecompressionStream):
    """snappy-java's rule: a full 16-byte header starting with the magic means xerial framing;
    anything else is one raw snappy block. A block is inflated whole, once its declared length
    is known to fit."""

    def __init__(self, data: memoryview, max_size: int) -> None:
        super().__init__(CompressionType.SNAPPY, max_size)
        self._data = data
        self._xerial = len(data) >= len(_XERIAL_HEADER) and data[: len(_XERIAL_MAGIC)] == _XERIAL_MAGIC
        self._pos = len(_XERIAL_HEADER) if self._xerial else 0
        self._block = b""
        self._block_pos = 0
        self._inflated = 0  # bytes of the blocks inflated so far

    def _read(self, n: int) -> bytes:
        while self._block_pos == len(self._block):
            if not self._next_block():
                return b""
        part = self._block[self._block_pos : self._block_pos + n]
        self._block_pos += len(part)
        return part

    def _next_block(self) -> bool:
        data, pos = self._data, self._pos
        if not self._xerial:
            if pos > 0:
                return False
            self._pos = len(data)
            block = data
        else:
            if pos >= len(data):
                return False
            if pos + 4 > len(data):
                raise _corrupt(CompressionType.SNAPPY, "truncated block length")
            (length,) = _INT32.unpack_from(data, pos)
            pos += 4
            if length < 0 or pos + length > len(data):
                raise _corrupt(CompressionType.SNAPPY, f"block of {length} bytes at {pos - 4} overruns the data")
            block = data[pos : pos + length]
            self._pos = pos + length
        self._block = _raw_snappy(block, self.max_size, self._inflated)
        self._inflated += len(self._block)
        self._block_pos = 0
        return True


def _raw_snappy(block: memoryview, max_size: int, before: int = 0) -> bytes:
    """One raw snappy block, refused before decompressing if its declared length is too big."""
    length = 0
    for i in range(5):
        if i >= len(block):
            raise _corrupt(CompressionType.SNAPPY, "truncated length preamble")
        length |= (block[i] & 0x7F) << (7 * i)
        if block[i] < 0x80:
            break
    else:
        raise _corrupt(CompressionType.SNAPPY, "length preamble longer than 5 bytes")
    _check_size(before + length, max_size, CompressionType.SNAPPY)
    return snappy.uncompress(block)


# -- lz4 ------------------------------------------------------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
# An LZ4 stream inflates in multiples of this: the block size of Kafka's and librdkafka's frames.
# A block decoded whole goes straight to the output; part of one goes through the codec's own
# buffer, which nearly doubled the cost of inflating a batch in steps.
LZ4_WHOLE_BLOCKS = 64 * 1024
_LZ4_CONTENT_SIZE_FLAG = 0x08
_LZ4_DICT_ID_FLAG = 0x01


class _Lz4Stream(DecompressionStream):
    def __init__(self, data: memoryview, max_size: int, legacy: bool) -> None:
        super().__init__(CompressionType.LZ4, max_size)
        self._data = data
        self._legacy = legacy
        self._pos = 0
        self._context = None  # the frame being read

    def _read(self, n: int) -> bytes:
        data = self._data
        while True:
            if self._context is None:
                # Concatenated frames form one stream, as the LZ4 frame format allows.
                if self._pos == len(data) and self._pos > 0:
                    return b""
                header = _lz4_header(data[self._pos :], self._legacy)
                self._context = lz4.frame.create_decompression_context()
                lz4.frame.decompress_chunk(self._context, header)
                self._pos += len(header)
            whole_blocks = -(-min(n, _READ_SIZE) // LZ4_WHOLE_BLOCKS) * LZ4_WHOLE_BLOCKS
            part, used, end_of_frame = lz4.frame.decompress_chunk(self._context, data[self._pos :], max_length=whole_blocks)
            self._pos += used
            if end_of_frame:
                self._context = None
            elif not (used or part):
                raise _corrupt(CompressionType.LZ4, "truncated frame")
            if part:
                return part


def _lz4_header(data: memoryview, legacy: bool) -> bytes:
    """The frame's magic and descriptor, with HC corrected if it is old Kafka's (when allowed)."""
    if data[:4] != _LZ4_MAGIC:
        raise _corrupt(CompressionType.LZ4, "bad frame magic")
    if len(data) < 7:
        raise _corrupt(CompressionType.LZ4, "truncated frame descriptor")
    flg = data[4]
    hc_pos = 6 + (8 if flg & _LZ4_CONTENT_SIZE_FLAG else 0) + (4 if flg & _LZ4_DICT_ID_FLAG else 0)
    if len(data) <= hc_pos:
        raise _corrupt(CompressionType.LZ4, "truncated frame descriptor")
    header = bytes(data[:hc_pos])
    hc = (xxh32(header[4:]) >> 8) & 0xFF
    if data[hc_pos] != hc and not (legacy and data[hc_pos] == (xxh32(header) >> 8) & 0xFF):
        raise _corrupt(CompressionType.LZ4, "frame descriptor checksum mismatch")
    return header + bytes((hc,))


_PRIME32_1 = 0x9E3779B1
_PRIME32_2 = 0x85EBCA77
_PRIME32_3 = 0xC2B2AE3D
_PRIME32_4 = 0x27D4EB2F
_PRIME32_5 = 0x165667B1
_MASK32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK32


def xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, for LZ4 frame header checksums (a few bytes; pure Python is slow on more)."""
    n = len(data)
    pos = 0
    if n >= 16:
        lanes = [
            (seed + _PRIME32_1 + _PRIME32_2) & _MASK32,
            (seed + _PRIME32_2) & _MASK32,
            seed,
            (seed - _PRIME32_1) & _MASK32,
        ]
        while pos + 16 <= n:
            for i in range(4):
                word = int.from_bytes(data[pos : pos + 4], "little")
                lanes[i] = _rotl32((lanes[i] + word * _PRIME32_2) & _MASK32, 13) * _PRIME32_1 & _MASK32
                pos += 4
        h = _rotl32(lanes[0], 1) + _rotl32(lanes[1], 7) + _rotl32(lanes[2], 12) + _rotl32(lanes[3], 18)
    else:
        h = seed + _PRIME32_5
    h = (h + n) & _MASK32
    while pos + 4 <= n:
        word = int.from_bytes(data[pos : pos + 4], "little")
        h = _rotl32((h + word * _PRIME32_3) & _MASK32, 17) * _PRIME32_4 & _MASK32
        pos += 4
    while pos < n:
        h = _rotl32((h + data[pos] * _PRIME32_5) & _MASK32, 11) * _PRIME32_1 & _MASK32
        pos += 1
    h = (h ^ (h >> 15)) * _PRIME32_2 & _MASK32
    h = (h ^ (h >> 13)) * _PRIME32_3 & _MASK32
    return h ^ (h >> 16)


# -- zstd -----------------------------------------------------------------------------------------

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50  # the low 4 bits are free
_zstd_local = threading.local()


def _zstd_contexts() -> threading.local:
    # Contexts cost more to create than a small batch costs to code, and are not thread-safe.
    if not hasattr(_zstd_local, "compressor"):
        _zstd_local.compressor = zstandard.ZstdCompressor(level=3)
        _zstd_local.decompressor = zstandard.ZstdDecompressor()
    return _zstd_local


class _ZstdStream(DecompressionStream):
    def __init__(self, data: memoryview, max_size: int) -> None:
        super().__init__(CompressionType.ZSTD, max_size)
        # python-zstandard's stream reader ends quietly on a truncated frame, so check that the
        # input is whole frames first; the reader then bounds the output.
        _check_zstd_frames(data)
        self._reader = _zstd_contexts().decompressor.stream_reader(data, read_across_frames=True)

    def _read(self, n: int) -> bytes:
        return self._reader.read(min(n, _READ_SIZE))


def _check_zstd_frames(data: memoryview) -> None:
    """Raise unless ``data`` is one or more complete zstd frames (RFC 8878 section 3.1)."""
    pos = 0
    end = len(data)
    if end == 0:
        raise _corrupt(CompressionType.ZSTD, "no frame")
    while pos < end:
        if pos + 8 > end:
            raise _corrupt(CompressionType.ZSTD, "truncated frame")
        magic = int.from_bytes(data[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == _ZSTD_SKIPPABLE_MAGIC:
            pos += 8 + int.from_bytes(data[pos + 4 : pos + 8], "little")
            continue
        if magic != _ZSTD_MAGIC:
            raise _corrupt(CompressionType.ZSTD, f"bad frame magic at {pos}")
        descriptor = data[pos + 4]
        single_segment = descriptor & 0x20
        content_size_bytes = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
        dict_id_bytes = (0, 1, 2, 4)[descriptor & 0x03]
        pos += 5 + (0 if single_segment else 1) + dict_id_bytes + content_size_bytes
        last = False
        while not last:
            if pos + 3 > end:
                raise _corrupt(CompressionType.ZSTD, "truncated frame")
            block = int.from_bytes(data[pos : pos + 3], "little")
            last = bool(block & 1)
            block_type = (block >> 1) & 0x03
            # An RLE block stores one byte, whatever its decompressed size.
            pos += 3 + (1 if block_type == 1 else block >> 3)
        if descriptor & 0x04:
            pos += 4
    if pos != end:
        raise _corrupt(CompressionType.ZSTD, "truncated frame")
