"""A rate over sampled windows, as Kafka's metrics measure it for quotas.

Kafka's ``SampledStat`` keeps ``samples`` windows of ``sample_ms`` each: a value is added to the
current window, a window is complete once ``sample_ms`` has passed since it started (the next
value then starts the next window, reusing the oldest slot), and a window older than
``samples × sample_ms`` is reset before a measurement. The rate is the sum of the windows divided
by the time they span. Kafka has two spans:

- ``SimpleRate`` (the replication quotas'): the time since the oldest window started, at least
  one window;
- ``Rate`` (the client quotas'): the same time, at least ``samples - 1`` whole windows, so a
  short burst is spread over the full span.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(slots=True)
class _Sample:
    start_ms: int
    value: float = 0.0


class SampledRate:
    """Bytes (or any amount) per second over the last ``samples`` windows of ``sample_ms``."""

    def __init__(self, samples: int = 11, sample_ms: int = 1000, *, simple: bool = True) -> None:
        if samples < 1 or sample_ms < 1:
            raise ValueError("a rate needs at least one window of at least 1 ms")
        self.samples = samples
        self.sample_ms = sample_ms
        self.simple = simple
        self._windows: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.sample_ms:
            self._current = (self._current + 1) % self.samples
            if self._current >= len(self._windows):
                sample = _Sample(now_ms)
                self._windows.append(sample)
            else:
                sample = self._windows[self._current]
                sample.start_ms, sample.value = now_ms, 0.0
        sample.value += value

    def measure(self, now_ms: int) -> float:
        """The rate per second at ``now_ms``."""
        self._purge_obsolete(now_ms)
        total = sum(sample.value for sample in self._windows)
        return total / (self._span_ms(now_ms) / 1000)

    def ms_until_at_most(self, bound: float, now_ms: int) -> int:
        """How long, with nothing more recorded, until the rate is at most ``bound`` per second;
        0 when it is already. SimpleRate: until the windows held span ``total / bound`` (windows
        expiring meanwhile can only make it sooner). Rate: Kafka's QuotaUtils.throttleTime, the
        excess over the bound, as a share of it, times the span measured."""
        self._purge_obsolete(now_ms)
        total = sum(sample.value for sample in self._windows)
        span_ms = self._span_ms(now_ms)
        rate = total / (span_ms / 1000)
        if rate <= bound:
            return 0
        if not self.simple:
            return max(1, math.ceil((rate - bound) / bound * span_ms))
        oldest = min(sample.start_ms for sample in self._windows)
        return max(1, math.ceil(total / bound * 1000 - (now_ms - oldest)))

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._windows:
            self._windows.append(_Sample(now_ms))
        return self._windows[self._current]

    def _purge_obsolete(self, now_ms: int) -> None:
        expire_ms = self.samples * self.sample_ms
        for sample in self._windows:
            if now_ms - sample.start_ms >= expire_ms:
                sample.start_ms, sample.value = now_ms, 0.0

    def _span_ms(self, now_ms: int) -> int:
        oldest = min(sample.start_ms for sample in self._windows) if self._windows else now_ms
        elapsed = now_ms - oldest
        if self.simple:
            return max(elapsed, self.sample_ms)
        full_windows = elapsed // self.sample_ms
        if full_windows < self.samples - 1:
            elapsed += (self.samples - 1 - full_windows) * self.sample_ms
        return max(elapsed, 1)
