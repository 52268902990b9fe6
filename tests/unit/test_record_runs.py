"""The column-at-a-time decoder for runs of same-shaped records must read exactly what the
record-by-record decoder reads, and must be the one reading uniform batches."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from kcli.errors import CorruptRecordError
from kcli.storage import records
from kcli.storage.record_runs import decode_run
from kcli.storage.records import NewRecord, decode_record_columns, decode_record_fields, encode_record

BASE_TS = 1_700_000_000_000


def one_by_one(data: bytes, count: int) -> list[records.RecordFields]:
    rows, pos = records._decode_rows(data, 0, count)
    if pos != len(data):
        raise CorruptRecordError(f"{len(data) - pos} bytes after the records")
    return rows


def section(rows: list[tuple[int, int, bytes | None, bytes | None, tuple]]) -> bytes:
    return b"".join(encode_record(NewRecord(k, v, BASE_TS + tsd, h), od, BASE_TS) for od, tsd, k, v, h in rows)


def uniform(count: int, value_size: int = 100, key: bytes | None = None, ts_step: float = 0.001, first_od: int = 0) -> list:
    return [(first_od + i, int(i * ts_step), key, b"v" * value_size, ()) for i in range(count)]


@st.composite
def shaped_rows(draw) -> list:
    """Groups of records that share a shape, with every kind of field a group can vary in."""
    rows: list = []
    od = draw(st.integers(0, 9000))
    ts = draw(st.integers(-70_000, 70_000))
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 80))
        key_len = draw(st.sampled_from([-1, 0, 3, 200]))
        value_len = draw(st.sampled_from([-1, 0, 1, 100, 1000]))
        headers = draw(st.sampled_from([(), (("h", b"x"),), (("k", None), ("", b""))]))
        od_gap = draw(st.sampled_from([1, 1, 2, 100]))
        ts_step = draw(st.sampled_from([0, 1, -1, 70, 9000, 1_100_000]))
        for i in range(n):
            key = None if key_len < 0 else bytes([i % 256]) * key_len
            value = None if value_len < 0 else bytes([(i * 7) % 256]) * value_len
            rows.append((od, ts, key, value, headers))
            od += od_gap
            ts += ts_step
    return rows


@settings(max_examples=300, deadline=None)
@given(shaped_rows())
def test_decoders_read_what_was_written(rows):
    data = section(rows)
    assert decode_record_fields(data, len(rows)) == rows
    assert one_by_one(data, len(rows)) == rows
    columns = decode_record_columns(data, len(rows))
    assert [list(c) for c in zip(*rows)] == [list(c) for c in columns]


@pytest.mark.parametrize(
    ("rows", "read_one_by_one"),
    [
        (uniform(9500), 0),  # offset delta widths 1, 2 and 3 bytes: three runs
        (uniform(300, key=b"key-1"), 0),
        (uniform(300, value_size=0), 0),
        (uniform(300, ts_step=100), 1),  # a lone first record, then 2- and 3-byte timestamp deltas
        (uniform(50, first_od=2_000_000), 50),  # deltas wider than the run decoder takes
    ],
)
def test_uniform_records_are_read_as_runs(rows, read_one_by_one):
    data = section(rows)
    pieces = list(records._decode_pieces(data, len(rows)))
    assert sum(len(p) for p in pieces if type(p) is list) == read_one_by_one
    assert decode_record_fields(data, len(rows)) == rows


def test_run_stops_where_the_shape_changes():
    rows = uniform(20) + [(20, 0, None, b"w" * 99, ())] + uniform(20, first_od=21)
    data = section(rows)
    run = decode_run(data, 0, len(rows))
    assert run is not None and run.count == 20
    assert data[run.end :].startswith(encode_record(NewRecord(None, b"w" * 99, BASE_TS, ()), 20, BASE_TS))
    assert decode_record_fields(data, len(rows)) == rows


def test_records_with_headers_are_not_a_run():
    rows = [(i, 0, None, b"v", (("h", b"1"),)) for i in range(10)]
    assert decode_run(section(rows), 0, 10) is None


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_corrupted_section_decodes_as_the_one_by_one_decoder_does(data):
    rows = uniform(data.draw(st.integers(4, 200)), value_size=data.draw(st.sampled_from([0, 5, 100])))
    buffer = bytearray(section(rows))
    for _ in range(data.draw(st.integers(1, 3))):
        buffer[data.draw(st.integers(0, len(buffer) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, 3))
    corrupted = bytes(buffer[: len(buffer) - cut])
    try:
        expected = one_by_one(corrupted, len(rows))
    except CorruptRecordError:
        with pytest.raises(CorruptRecordError):
            decode_record_fields(corrupted, len(rows))
        with pytest.raises(CorruptRecordError):
            decode_record_columns(corrupted, len(rows))
    else:
        assert decode_record_fields(corrupted, len(rows)) == expected
        assert [list(c) for c in decode_record_columns(corrupted, len(rows))] == [list(c) for c in zip(*expected)]


def test_too_few_records_for_the_section_is_an_error():
    data = section(uniform(10))
    with pytest.raises(CorruptRecordError, match="bytes after its 9 records"):
        decode_record_fields(data, 9)
    with pytest.raises(CorruptRecordError):
        decode_record_fields(data, 11)


@settings(max_examples=200, deadline=None)
@given(first=st.sampled_from([0, 1, 60, 63, 64, 65, 8000, 8191, 8192, 9000, 131_000, 131_072, 1_048_000]),
       count=st.integers(4, 300), wrong=st.one_of(st.none(), st.integers(0, 299)), claimed_shift=st.sampled_from([0, 0, 0, 1, -1]))
def test_offset_deltas_compared_as_bytes_agree_with_the_decoded_deltas(first, count, wrong, claimed_shift):
    """offset_deltas_run_from compares byte columns with the expected encodings; it must say what
    decoding every delta and comparing the numbers says, across varint widths, past the table of
    expected bytes, with one delta wrong, and for a run asked to start elsewhere."""
    from kcli.storage.record_runs import find_run, offset_deltas, offset_deltas_run_from

    rows = uniform(count, value_size=20, first_od=first)
    if wrong is not None and wrong < count:
        od, tsd, k, v, h = rows[wrong]
        rows[wrong] = (od ^ 1, tsd, k, v, h)  # the same varint width, so the same shape
    data = section(rows)
    run = find_run(data, 0, len(data), count)
    assume(run is not None)  # fewer than MIN_RUN records before the deltas change width: no run
    start = first + claimed_shift
    if start < 0:
        return
    assert offset_deltas_run_from(data, run, start) == (offset_deltas(data, run) == list(range(start, start + run.count)))
