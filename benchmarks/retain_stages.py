"""Where a bulk retain's time goes: every statement, COPY and CPU stage, summed over the run.

    XDG_DATA_HOME=/tmp/retain-xdg .venv/bin/python benchmarks/retain_stages.py --n 3000
    XDG_DATA_HOME=/tmp/retain-xdg .venv/bin/python benchmarks/retain_stages.py --n 3000 --bulk

LoCoMo turns as ``benchmarks/retain.py`` builds them (``<speaker> said, "<text>"``, cached
all-MiniLM-L6-v2 vectors given, extraction on), retained ``--batch`` per ``retain`` call (or
through ``retain_bulk`` with ``--bulk``) into a fresh bank of a dedicated embedded server
(``--data-dir``). Each database operation is timed in the runner, labelled by its statement's
first words, and each CPU stage of the preparation by its function (``_timing.timed_calls``):
wall time, so a ``COPY`` includes the server's work (its index inserts, triggers, foreign-key
checks) and the client's row formatting. With ``--bulk`` the preparation of the next batch runs
in a worker thread while these run, so the sums overlap. No database row is changed by timing.

``--fk-plans auto custom ...`` runs one load per value, in that order, each into a fresh bank:
``auto`` is the library (writes checked by foreign keys run with reusable check plans,
``retain/links.py fk_checked``), ``custom`` keeps the pool's ``force_custom_plan`` for them too
(the library before that change: the same statements, the mode switch made a no-op).

``--neighbour-plans index sort ...`` likewise (crossed with ``--fk-plans``): ``index`` is the
library (the stored-neighbour search with sorts off, so through the HNSW index whatever the
statistics say, ``links.SEMANTIC_NEIGHBOUR_SETTINGS``), ``sort`` its settings before that change
(sequential scans off only: with statistics that do not know the bank's rows, as in every
batch of a bulk load after the first, the planner read and sorted the bank's rows per unit).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import DEFAULT_DATA_PATH, locomo_missing
from _plain import data_root
from _report import write_json
from _timing import timed_calls
from retain import locomo_turns


def _statement_label(_conn: Any, op: Any) -> str:
    statement = op.statement
    text = statement.as_string(None) if hasattr(statement, "as_string") else str(statement)
    return ("COPY " if type(op).__name__ == "Copy" else "SQL ") + " ".join(text.split())[:60]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=3000, help="memories")
    p.add_argument("--batch", type=int, default=1000, help="memories per retain call (or bulk batch)")
    p.add_argument("--bulk", action="store_true", help="retain_bulk instead of one retain per batch")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--fk-plans", nargs="+", default=["auto"], choices=["auto", "custom"])
    p.add_argument("--neighbour-plans", nargs="+", default=["index"], choices=["index", "sort"])
    p.add_argument(
        "--processes",
        nargs="+",
        type=int,
        default=[0],
        help="retain_bulk's extraction processes per run, in order (0: in this process, the default)",
    )
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if locomo_missing(args.data):
        return 0

    from _peers import EmbeddingCache

    from shared_core import MemoryEngine
    from shared_core.extraction.processes import ExtractionProcesses
    from shared_core.retain import extract, flow, links
    from shared_core.storage import runner
    from shared_core.types import MemoryItem

    turns = locomo_turns(args.data, args.n)
    cache = EmbeddingCache()
    cache.ensure(t for t, _ in turns)
    cache.save()
    items = [
        MemoryItem(text=t, mentioned_at=when, metadata={"turn": i}, embedding=cache.get(t))
        for i, (t, when) in enumerate(turns)
    ]
    targets = {
        (runner, "_exec_sync"): _statement_label,
        (runner, "_copy_sync"): _statement_label,
        (flow, "prepare_retain"): "cpu prepare_retain (all of the below)",
        (flow, "extract"): "cpu   extract (dates, entities, resolution, signals)",
        (extract, "raw_extract"): "cpu     NER + dates in this process",
        (ExtractionProcesses, "run"): "cpu     NER + dates in the worker processes (wait)",
        (flow, "prepare_units"): "cpu   prepare_units (split)",
        (links, "link_weights"): "cpu link_weights (in-batch semantic pairs, temporal, causal)",
    }
    # A fresh server per run unless --data-dir names one: every load meets the statistics of a
    # new store. Each variant loads its own bank and the rows stay until the end: the cascaded
    # DELETE of a 10k bank ran for over 8 minutes at load 6, and after a TRUNCATE autovacuum
    # analysed the tables as empty and the next load's links COPY took 273 s instead of ~9 s.
    fresh = args.data_dir is None
    data_dir = args.data_dir or data_root(f"bench-retain-stages-pgdata-{os.getpid()}")
    generic = links.GENERIC_PLAN_CACHE_MODE
    neighbour_settings = links.SEMANTIC_NEIGHBOUR_SETTINGS
    sort_settings = {k: v for k, v in neighbour_settings.items() if k != "enable_sort"}
    cases = [(f, n, w) for w in args.processes for f in args.fk_plans for n in args.neighbour_plans]
    runs = []
    with MemoryEngine(data_dir=data_dir) as engine:
        engine.retain(items[:20], bank="retain-stages-warmup", progress=False)
        for variant, neighbours, workers in cases:
            links.SEMANTIC_NEIGHBOUR_SETTINGS = neighbour_settings if neighbours == "index" else sort_settings
            # "custom": the same statements, the switch to 'auto' replaced by a no-op.
            links.GENERIC_PLAN_CACHE_MODE = (
                generic
                if variant == "auto"
                else "SELECT set_config('plan_cache_mode', current_setting('plan_cache_mode'), true)"
            )
            bank = f"retain-stages-{time.time_ns()}"
            load_start = [round(x, 2) for x in os.getloadavg()]
            started = time.perf_counter()
            with timed_calls(targets) as stages:
                if args.bulk:
                    engine.retain_bulk(
                        items, bank=bank, batch_size=args.batch, progress=False, processes=workers
                    )
                else:
                    for s in range(0, args.n, args.batch):
                        engine.retain(items[s : s + args.batch], bank=bank, progress=False)
            seconds = time.perf_counter() - started
            links.GENERIC_PLAN_CACHE_MODE = generic
            links.SEMANTIC_NEIGHBOUR_SETTINGS = neighbour_settings
            run = {
                "fk_plans": variant,
                "neighbour_plans": neighbours,
                "processes": workers,
                "seconds": round(seconds, 2),
                "per_second": round(args.n / seconds, 1),
                "loadavg": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
                "stages_s": {
                    k: {"seconds": round(sum(v) / 1e3, 2), "calls": len(v)}
                    for k, v in sorted(stages.items(), key=lambda kv: -sum(kv[1]))
                },
            }
            runs.append(run)
            print(
                f"fk plans {variant}, neighbour plans {neighbours}, processes {workers}: "
                f"{args.n} memories in "
                f"{seconds:.1f} s ({args.n / seconds:.1f}/s), "
                f"load {run['loadavg']}"
            )
            for label, st in run["stages_s"].items():
                print(f"{st['seconds']:9.2f} s  x{st['calls']:<4d} {label}")
    if fresh:
        shutil.rmtree(data_dir, ignore_errors=True)
    report = {"n": args.n, "batch": args.batch, "bulk": args.bulk, "runs": runs}
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
