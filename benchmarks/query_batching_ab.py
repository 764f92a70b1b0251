"""A/B of query micro-batching in one process: the embedder's QueryBatcher switched on and off
between rounds, 1 client and 8 clients each round, on the 100k bench bank.

    HINDSIGHT_BENCH_PGDATA=D .venv/bin/python benchmarks/query_batching_ab.py \
        --data-dir D --rounds 4 --out docs/benchmarks/query_batching_ab.json

Separate processes per side (the first A/B of batching) differ in more than the batcher: start-up,
cache warmth, the machine's state minutes apart. Here both sides share the process, the server,
the model and the warm caches; only ``SentenceTransformerEmbedder._queries`` changes. Rounds
alternate which side goes first (on, off / off, on / ...). Reports each round and the means.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_latency import CORPUS_VERSION, HEADLINE, make_queries, measure_ours

from shared_core import EngineConfig, MemoryEngine
from shared_core.config import DEFAULT_QUERY_BATCH_CAP
from shared_core.embedding import QueryBatcher, SentenceTransformerEmbedder

_KEYS = ("q1", "q8", "ratio", "p50_1", "embedding_p50_1")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", type=Path, required=True, help="the bench server's data directory")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--calls-1", type=int, default=60, help="recalls of the 1-client phase")
    p.add_argument("--calls-8", type=int, default=120, help="recalls of the 8-client phase")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    config = EngineConfig(extract_entities=False, extract_dates=False)
    engine = MemoryEngine(data_dir=args.data_dir, config=config)
    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    queries = make_queries(50)
    embedder = engine.embedder
    if not isinstance(embedder, SentenceTransformerEmbedder):
        raise SystemExit("the engine's embedder is not the built-in one")
    embedder.embed_query("warm up")
    batcher = QueryBatcher(embedder._embed_one, embedder._embed_many, max_batch=DEFAULT_QUERY_BATCH_CAP)
    rows: list[dict[str, Any]] = []
    try:
        for r in range(args.rounds):
            for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
                embedder._queries = batcher if mode == "on" else None
                gc.collect()
                one = measure_ours(engine, bank, queries, calls=args.calls_1, clients=1)
                eight = measure_ours(engine, bank, queries, calls=args.calls_8, clients=8)
                row = {
                    "round": r,
                    "batching": mode,
                    "load": round(os.getloadavg()[0], 2),
                    "q1": one["qps"],
                    "q8": eight["qps"],
                    "ratio": round(eight["qps"] / one["qps"], 3),
                    "p50_1": one["stages"][HEADLINE]["p50"],
                    "embedding_p50_1": one["stages"]["query_embedding"]["p50"],
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        engine.close()
    means = {
        mode: {k: round(sum(r[k] for r in rows if r["batching"] == mode) / args.rounds, 3) for k in _KEYS}
        for mode in ("on", "off")
    }
    print(json.dumps(means, indent=1))
    if args.out is not None:
        command = "python " + " ".join(["benchmarks/query_batching_ab.py", *(argv or sys.argv[1:])])
        args.out.write_text(json.dumps({"command": command, "rounds": rows, "means": means}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
