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

    __slots__ = ("_nested", "_started", "timings")

    def __init__(self) -> None:
        self._started = time.perf_counter()
        self.timings: dict[str, float] = {}
        self._nested: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str, *, within: str | None = None) -> Iterator[None]:
        """Time the block as ``name`` (a plan may ``yield`` inside it: I/O counts too).

        A stage run inside another one names it as ``within``: its time is taken out of that
        stage's, so the stages never count a millisecond twice (the graph's second round, a
        statement, runs inside the reranker's CPU stage).

        >>> watch = Stopwatch()
        >>> with watch.stage("rerank"):
        ...     with watch.stage("graph_neighbours", within="rerank"):
        ...         time.sleep(0.01)
        >>> watch.timings["rerank"] < watch.timings["graph_neighbours"]
        True
        """
        started = time.perf_counter()
        try:
            yield
        finally:
            ms = (time.perf_counter() - started) * 1e3
            self.timings[name] = ms - self._nested.pop(name, 0.0)
            if within is not None:
                self._nested[within] = self._nested.get(within, 0.0) + ms

    def record(self, name: str, ms: float) -> None:
        """Record a stage timed elsewhere (e.g. in a worker thread)."""
        self.timings[name] = ms

    def total(self) -> dict[str, float]:
        """The timings with ``total`` (since the stopwatch started) added."""
        self.timings["total"] = (time.perf_counter() - self._started) * 1e3
        return self.timings

    def __repr__(self) -> str:
        return f"Stopwatch({', '.join(f'{k}={v:.1f}ms' for k, v in self.timings.items())})"
