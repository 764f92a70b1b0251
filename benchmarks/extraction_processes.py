"""Extraction in worker processes against in-process: the same results, and the time (issue 15).

    XDG_DATA_HOME=/tmp/bulk-xdg .venv/bin/python benchmarks/extraction_processes.py \
        --out docs/benchmarks/extraction_processes.json

Every LoCoMo turn (``<speaker> said, "<text>"`` with its session time, as retain stores it)
through the per-text part of retain's extraction (``raw_extract``: spaCy NER with the
proper-noun fallback, and each turn's event window from Duckling and the rules), once in this
process and once spread over ``--processes`` worker processes
(``shared_core.extraction.processes.ExtractionProcesses``, the path ``retain_bulk`` takes). The
entity mentions and windows of every turn are compared; the check fails (exit 1) on any
difference. Then ``--rounds`` timed rounds of ``--batch``-sized calls alternate the two, with
the load average at the start and end of each (wall time: on a shared machine only the
same-round ratio means anything). No database.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import DEFAULT_DATA_PATH, locomo_missing
from _report import write_json
from retain import locomo_turns


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    p.add_argument("--turns", type=int, default=5_882, help="turns (LoCoMo has 5,882)")
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--batch", type=int, default=1000, help="turns per call in the timed rounds")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if locomo_missing(args.data):
        return 0

    from shared_core.extraction.dates import default_date_parser
    from shared_core.extraction.entities import SpacyEntityExtractor
    from shared_core.extraction.processes import ExtractionProcesses, raw_extract

    turns = locomo_turns(args.data, args.turns)
    texts = [t for t, _ in turns]
    extractor, parser = SpacyEntityExtractor(), default_date_parser()
    raw_extract(extractor, parser, texts[:20], turns[:20])  # load the models
    started = time.perf_counter()
    workers = ExtractionProcesses(processes=args.processes, entity_extractor=extractor, date_parser=parser)
    with workers:
        workers.run(texts[:2], turns[:2])
        startup = time.perf_counter() - started
        local = raw_extract(extractor, parser, texts, turns)
        remote = workers.run(texts, turns)
        differ_entities = [i for i, (a, b) in enumerate(zip(local[0], remote[0], strict=True)) if a != b]
        differ_windows = [i for i, (a, b) in enumerate(zip(local[1], remote[1], strict=True)) if a != b]
        print(
            f"{len(texts)} turns: entities differ in {len(differ_entities)}, windows in "
            f"{len(differ_windows)}; {sum(map(len, local[0]))} mentions, "
            f"{sum(w is not None for w in local[1])} dated; processes ready in {startup:.1f} s"
        )
        rounds: list[dict[str, Any]] = []
        for r in range(args.rounds):
            row: dict[str, Any] = {"round": r + 1, "load_start": _load()}
            variants = [("in_process", None), (f"processes_{args.processes}", workers)]
            for name, pool in variants if r % 2 == 0 else variants[::-1]:
                t0, c0 = time.perf_counter(), time.process_time()
                for s in range(0, len(texts), args.batch):
                    part = turns[s : s + args.batch]
                    if pool is None:
                        raw_extract(extractor, parser, [t for t, _ in part], part)
                    else:
                        pool.run([t for t, _ in part], part)
                row[name] = {
                    "seconds": round(time.perf_counter() - t0, 2),
                    "parent_cpu_s": round(time.process_time() - c0, 2),
                }
            row["load_end"] = _load()
            rounds.append(row)
            print(row)
    report = {
        "turns": len(texts),
        "processes": args.processes,
        "batch": args.batch,
        "startup_s": round(startup, 2),
        "entities_differ": len(differ_entities),
        "windows_differ": len(differ_windows),
        "mentions": sum(map(len, local[0])),
        "dated": sum(w is not None for w in local[1]),
        "rounds": rounds,
    }
    if args.out:
        write_json(args.out, report)
    return 1 if differ_entities or differ_windows else 0


if __name__ == "__main__":
    raise SystemExit(main())
