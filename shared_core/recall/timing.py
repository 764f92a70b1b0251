"""Stage timing for the recall trace: one stopwatch, one ``with`` per stage.

>>> watch = Stopwatch()
>>> with watch.stage("fusion"):
...     pass
>>> list(watch.timings)
['fusion']
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["Stopwatch"]


class Stopwatch:
    """Milliseconds per named stage, in the order the stages ran, plus the total."""

    __slots__ = ("_started", "timings")

    def __init__(self) -> None:
        self._started = time.perf_counter()
        self.timings: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the block as ``name`` (a plan may ``yield`` inside it: I/O counts too)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = (time.perf_counter() - started) * 1e3

    def record(self, name: str, ms: float) -> None:
        """Record a stage timed elsewhere (e.g. in a worker thread)."""
        self.timings[name] = ms

    def total(self) -> dict[str, float]:
        """The timings with ``total`` (since the stopwatch started) added."""
        self.timings["total"] = (time.perf_counter() - self._started) * 1e3
        return self.timings

    def __repr__(self) -> str:
        return f"Stopwatch({', '.join(f'{k}={v:.1f}ms' for k, v in self.timings.items())})"
