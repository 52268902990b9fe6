"""The line a Spark command (export, import, mirror, stats) ends with: its rates are true ones."""

from __future__ import annotations

from kcli.spark.pipeline import summary


def test_a_slow_job_reports_its_true_rate_not_zero():
    assert summary("Exported", 3, 333, "to out (json)", 32.2) == "Exported 3 records (333 B) to out (json) in 32.2 s (0.0932 records/s, 10.3 B/s)"
    assert summary("Read", 3, 3, "in 1 partitions", 29.2) == "Read 3 records (3 B) in 1 partitions in 29.2 s (0.103 records/s, 0.103 B/s)"


def test_a_job_too_short_to_measure_reports_no_rate():
    assert summary("Mirrored", 5, None, "from a to b", 0.01) == "Mirrored 5 records from a to b in 0.0 s"


def test_fast_jobs_keep_whole_rates_with_separators():
    assert summary("Exported", 1_000_000, 100_000_000, "to out", 2.5) == "Exported 1000000 records (100.0 MB) to out in 2.5 s (400,000 records/s, 40.0 MB/s)"
    assert summary("Imported", 12, None, "into t", 0.5) == "Imported 12 records into t in 0.5 s (24.0 records/s)"
    assert summary("Exported", 0, 0, "to out", 3.0) == "Exported 0 records (0 B) to out in 3.0 s (0 records/s, 0 B/s)"
