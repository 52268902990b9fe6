"""The soak tests: abusive peers beside normal clients against a real broker, bounded in time."""

from __future__ import annotations


def pytest_configure(config) -> None:
    config.addinivalue_line("markers", "soak: abuse beside normal clients for a bounded time (part of the normal run; -m 'not soak' skips it)")
