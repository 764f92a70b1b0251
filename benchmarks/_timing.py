"""Timing library functions in place: the one wrapper the retain benchmarks patch stages with.

:func:`timed_calls` replaces attributes (``module.function``, ``Class.method``) by wrappers that
append each call's wall time in milliseconds to ``stages[label]``, and puts the originals back
on exit. A label is a string or a function of the call's arguments (``Pipeline`` statements are
labelled by their text).

>>> import math
>>> with timed_calls({(math, "sqrt"): "sqrt", (math, "floor"): lambda x: f"floor {x}"}) as stages:
...     _ = math.sqrt(4.0), math.floor(1.5), math.sqrt(9.0)
>>> sorted((k, len(v)) for k, v in stages.items())
[('floor 1.5', 1), ('sqrt', 2)]
>>> math.sqrt.__name__  # restored
'sqrt'
"""

from __future__ import annotations

import contextlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["Label", "best_cpu_ms", "timed_calls"]

Label = str | Callable[..., str]


def _wrap(stages: defaultdict[str, list[float]], label: Label, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            name = label if isinstance(label, str) else label(*args, **kwargs)
            stages[name].append((time.perf_counter() - t0) * 1e3)

    return wrapper


@contextlib.contextmanager
def timed_calls(targets: Mapping[tuple[Any, str], Label]) -> Iterator[defaultdict[str, list[float]]]:
    """Time every call of each ``(owner, attribute)`` under its label while the block runs."""
    stages: defaultdict[str, list[float]] = defaultdict(list)
    saved = {target: getattr(*target) for target in targets}
    try:
        for (owner, name), label in targets.items():
            setattr(owner, name, _wrap(stages, label, saved[(owner, name)]))
        yield stages
    finally:
        for (owner, name), fn in saved.items():
            setattr(owner, name, fn)


def best_cpu_ms(fn: Callable[[int], Any], repeat: int) -> float:
    """The least CPU time (this thread's) of ``fn(i)`` over ``i`` in ``range(repeat)``, in ms:
    the best of several runs is what a pure function costs when nothing else takes its core.

    >>> best_cpu_ms(lambda i: sum(range(1000 * (i + 1))), 3) >= 0.0
    True
    """
    best = float("inf")
    for i in range(repeat):
        t0 = time.thread_time()
        fn(i)
        best = min(best, time.thread_time() - t0)
    return best * 1e3
