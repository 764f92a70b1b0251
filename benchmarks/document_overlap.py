"""The 1 MB document's CPU preparation: embedding, then extraction, against extraction in a
worker process while this process embeds (issue 15.3, a feasibility measurement).

    XDG_DATA_HOME=/tmp/bulk-xdg .venv/bin/python benchmarks/document_overlap.py \
        --out docs/benchmarks/document_overlap.json

The units of ``retain.py``'s generated document (``prose_document``, split as retain splits
it) are embedded by the default embedder in length-sorted batches (``flow.embed``) and their
entities and windows computed (``raw_extract``): one after the other in this process, then
with the extraction sent to one worker process (``ExtractionProcesses``, started at the same
moment, its model loading included) while this process embeds. Rounds alternate the order;
wall time and the load average are recorded. No database; the results are compared.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _report import write_json
from retain import prose_document


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--megabytes", type=float, default=1.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument(
        "--overlap-torch-threads",
        type=int,
        default=None,
        help="torch's intra-op threads while the extraction process runs (default: unchanged, "
        "torch's own one per core); the other variants keep torch's default",
    )
    p.add_argument(
        "--split-processes",
        type=int,
        default=0,
        help="also time embedding first, then the extraction in this many worker processes (0: not timed)",
    )
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    from types import SimpleNamespace

    import torch

    from shared_core.config import EngineConfig
    from shared_core.extraction.processes import ExtractionProcesses, RawResult, raw_extract
    from shared_core.models import Models
    from shared_core.retain.flow import embed
    from shared_core.retain.prepare import coerce_items, prepare_units
    from shared_core.retain.progress import RetainProgress
    from shared_core.types import MemoryItem

    cfg, models = EngineConfig(), Models()
    now = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
    items = coerce_items([MemoryItem(text=prose_document(int(args.megabytes * 1_000_000)))], document_id="d")
    units, _ = prepare_units(
        items,
        now=now,
        unit_max_tokens=cfg.unit_max_tokens,
        window_tokens=cfg.sentence_window_tokens,
        counter=models.token_counter,
    )
    texts = [u.text for u in units]
    dated = [(u.text, u.mentioned_at) for u in units]
    ctx = SimpleNamespace(models=models, config=cfg)
    extractor, parser = models.entity_extractor, models.date_parser
    embed(ctx, texts[:8], RetainProgress(False))  # type: ignore[arg-type]
    raw_extract(extractor, parser, texts[:8], dated[:8])

    def serial() -> RawResult:
        embed(ctx, texts, RetainProgress(False))  # type: ignore[arg-type]
        return raw_extract(extractor, parser, texts, dated)

    def overlapped() -> RawResult:
        out: dict[str, Any] = {}
        with ExtractionProcesses(processes=1, entity_extractor=extractor, date_parser=parser) as w:
            thread = threading.Thread(target=lambda: out.update(r=w.run(texts, dated)))
            thread.start()  # the thread waits on the pipe: the GIL is this process's embedding's
            threads = torch.get_num_threads()
            if args.overlap_torch_threads is not None:
                torch.set_num_threads(args.overlap_torch_threads)
            try:
                embed(ctx, texts, RetainProgress(False))  # type: ignore[arg-type]
            finally:
                torch.set_num_threads(threads)
            thread.join()
        result: RawResult = out["r"]
        return result

    def split() -> RawResult:
        embed(ctx, texts, RetainProgress(False))  # type: ignore[arg-type]
        with ExtractionProcesses(
            processes=args.split_processes, entity_extractor=extractor, date_parser=parser
        ) as w:
            return w.run(texts, dated)

    rounds: list[dict[str, Any]] = []
    results = {}
    for r in range(args.rounds):
        row: dict[str, Any] = {"round": r + 1, "load_start": _load()}
        variants = [("serial", serial), ("extraction_in_a_process", overlapped)]
        if args.split_processes:
            variants.append((f"extraction_in_{args.split_processes}_processes_after", split))
        for name, fn in variants if r % 2 == 0 else variants[::-1]:
            t0 = time.perf_counter()
            results[name] = fn()
            row[f"{name}_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        embed(ctx, texts, RetainProgress(False))  # type: ignore[arg-type]
        row["embedding_alone_s"] = round(time.perf_counter() - t0, 2)
        row["load_end"] = _load()
        rounds.append(row)
        print(row, flush=True)
    same = all(r == results["serial"] for r in results.values())
    print(f"{len(units)} units; same entities and windows: {same}")
    if args.out:
        write_json(
            args.out,
            {
                "units": len(units),
                "same_results": same,
                "overlap_torch_threads": args.overlap_torch_threads,
                "rounds": rounds,
            },
        )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
