"""CPU of recall's fusion and boosts, two source trees A/B, replayed on captured inputs.

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/cpu_replay_ab.py \
        --a /path/to/baseline/tree --b . --size 100000 [--reranker learned]

Runs the 50 bench queries once (this tree's engine) and captures every call of
``reciprocal_rank_fusion`` and ``apply_boosts`` (their arguments). Then loads each tree's
``fusion.py`` and ``boosts.py`` as modules of their own and times every captured call in both,
interleaved (A, B; B, A), best of ``--rounds`` thread-CPU times per call, summed and divided by
the 50 recalls; and checks that both return the same thing (every field of every candidate, the
sums to the bit, the mappings' order). CPU times of pure functions on the same inputs: less
sensitive to other jobs than a recall's wall time (a loaded host still slows both sides).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

Call = tuple[tuple[Any, ...], dict[str, Any]]


def _load(tree: Path, relative: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, tree / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def interleaved(
    fa: Callable[..., Any], fb: Callable[..., Any], calls: Sequence[Call], rounds: int
) -> tuple[float, float]:
    """Summed best-of-``rounds`` thread CPU (ms) of every call, A and B in turn."""
    best_a = [float("inf")] * len(calls)
    best_b = [float("inf")] * len(calls)
    for r in range(rounds):
        for i, (args, kwargs) in enumerate(calls):
            for side in (0, 1) if (r + i) % 2 == 0 else (1, 0):
                fn, best = (fa, best_a) if side == 0 else (fb, best_b)
                started = time.thread_time_ns()
                fn(*args, **kwargs)
                best[i] = min(best[i], (time.thread_time_ns() - started) / 1e6)
    return sum(best_a), sum(best_b)


def _fields(out: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Every slot of every returned object (mappings as item lists, floats exact)."""

    def value(v: Any) -> Any:
        if hasattr(v, "items"):
            return list(v.items())
        return v.hex() if isinstance(v, float) else v

    return [tuple(value(getattr(o, f)) for f in o.__slots__) for o in out]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", type=Path, required=True)
    p.add_argument("--b", type=Path, required=True)
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--reranker", default="none")
    p.add_argument("--rounds", type=int, default=40)
    args = p.parse_args(argv)

    from _corpus import CORPUS_VERSION, make_queries

    import shared_core.recall.pipeline as pipeline
    from shared_core import EngineConfig, MemoryEngine

    captured: dict[str, list[Call]] = {"fusion": [], "boosts": []}
    fuse, boost = pipeline.reciprocal_rank_fusion, pipeline.apply_boosts

    def fusing(arms: Any, **kwargs: Any) -> Any:
        captured["fusion"].append((({a: list(h) for a, h in arms.items()},), kwargs))
        return fuse(arms, **kwargs)

    def boosting(*a: Any, **kwargs: Any) -> Any:
        captured["boosts"].append((a, kwargs))
        return boost(*a, **kwargs)

    pipeline.reciprocal_rank_fusion, pipeline.apply_boosts = fusing, boosting  # type: ignore[assignment]
    queries = make_queries()
    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    with MemoryEngine(
        data_dir=os.environ["HINDSIGHT_BENCH_PGDATA"],
        config=EngineConfig(extract_entities=False, extract_dates=False),
    ) as engine:
        for text in queries.texts:
            engine.recall(text, bank=bank, query_timestamp=queries.query_time, reranker=args.reranker)
    recalls = len(queries.texts)
    print(
        f"{recalls} recalls ({args.reranker}) captured: {len(captured['fusion'])} fusions, "
        f"{len(captured['boosts'])} boosts; load {os.getloadavg()[0]:.2f}"
    )
    for label, relative, function in (
        ("fusion", "shared_core/recall/fusion.py", "reciprocal_rank_fusion"),
        ("boosts", "shared_core/recall/boosts.py", "apply_boosts"),
    ):
        fa = getattr(_load(args.a.resolve(), relative, f"_a_{label}"), function)
        fb = getattr(_load(args.b.resolve(), relative, f"_b_{label}"), function)
        calls = captured[label]
        same = all(_fields(fa(*a, **k)) == _fields(fb(*a, **k)) for a, k in calls)
        ms_a, ms_b = interleaved(fa, fb, calls, args.rounds)
        print(
            f"  {function}: A {ms_a / recalls:.3f} ms | B {ms_b / recalls:.3f} ms a recall "
            f"({ms_b / ms_a:.2f}x), best of {args.rounds}; identical {same}"
        )
    print(f"  load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
