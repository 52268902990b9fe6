"""A clean-shutdown marker is not trusted over a last segment that does not end on a whole batch."""

from __future__ import annotations

import logging
import os

import pytest

from kcli.storage.log import Log
from kcli.storage.log_config import LogConfig
from kcli.storage.records import NewRecord, build_batch, iter_batches

CONFIG = LogConfig(index_interval_bytes=1000)


def batch(i: int) -> bytes:
    return build_batch([NewRecord(b"k", f"value-{i}-".encode().ljust(300, b"x"), 1_000 + i), NewRecord(b"k", b"second", 1_000 + i)])


def offsets_read(log: Log) -> list[int]:
    data = log.read(0, 1 << 20).read()
    return [r.offset for b in iter_batches(data) for r in b.records()]


def written_log(tmp_path, batches: int = 10) -> tuple[Log, list[int]]:
    """A closed log of ``batches`` two-record batches; returns it and where each batch starts."""
    log = Log.open(tmp_path / "t-0", CONFIG)
    for i in range(batches):
        log.append(batch(i))
    starts = [0]
    data = log.read(0, 1 << 20).read()
    for b in iter_batches(data):
        starts.append(starts[-1] + b.size_in_bytes)
    log.close()
    return log, starts


@pytest.mark.parametrize("cut_batch", [0, 5, 9], ids=["first batch", "middle batch", "last batch"])
def test_a_segment_cut_within_a_batch_after_a_clean_shutdown_is_recovered(tmp_path, caplog, cut_batch):
    log, starts = written_log(tmp_path)
    segment_file = log.segments[-1].log.path
    cut = starts[cut_batch] + 100
    os.truncate(segment_file, cut)

    with caplog.at_level(logging.WARNING):
        reopened = Log.open(tmp_path / "t-0", CONFIG, had_clean_shutdown=True)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and str(segment_file) in r.getMessage()]
    # The position named is where the check from the last index entry on found the file wrong.
    assert any("does not end on a whole, valid batch at position" in w for w in warnings), warnings
    assert reopened.log_end_offset == 2 * cut_batch
    assert offsets_read(reopened) == list(range(2 * cut_batch))

    # New records follow the last whole batch and are read back, also after another clean restart.
    assert reopened.append(batch(100)).first_offset == 2 * cut_batch
    reopened.close()
    again = Log.open(tmp_path / "t-0", CONFIG, had_clean_shutdown=True)
    assert again.log_end_offset == 2 * cut_batch + 2
    assert offsets_read(again) == list(range(2 * cut_batch + 2))
    again.close()


def test_trailing_bytes_that_are_no_batch_are_cut_too(tmp_path, caplog):
    log, starts = written_log(tmp_path)
    with open(log.segments[-1].log.path, "ab") as file:
        file.write(b"\0" * 30)
    with caplog.at_level(logging.WARNING):
        reopened = Log.open(tmp_path / "t-0", CONFIG, had_clean_shutdown=True)
    assert any(f"position {starts[-1]}" in r.getMessage() for r in caplog.records)
    assert reopened.log_end_offset == 20
    assert reopened.active_segment.size == starts[-1]
    reopened.close()


def test_an_intact_segment_after_a_clean_shutdown_is_not_recovered(tmp_path, caplog):
    written_log(tmp_path)
    with caplog.at_level(logging.INFO):
        reopened = Log.open(tmp_path / "t-0", CONFIG, had_clean_shutdown=True)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or "Recovering" in r.getMessage()]
    assert reopened.log_end_offset == 20
    reopened.close()
