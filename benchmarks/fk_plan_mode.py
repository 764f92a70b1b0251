"""What the plan cache mode costs a write checked by foreign keys: the links of 1,000 memories.

    XDG_DATA_HOME=/tmp/retain-xdg .venv/bin/python benchmarks/fk_plan_mode.py \
        --out docs/benchmarks/fk_plan_mode.json

1,000 LoCoMo turns (cached vectors, extraction off) are retained into a scratch bank of a
dedicated embedded server; their links among themselves (~31k rows) are then copied again,
each round into a fresh copy of the bank's units (so every row passes both foreign-key checks),
in one transaction per round, under ``plan_cache_mode = auto`` and ``force_custom_plan``
alternately (the latter is what pooled connections set for recall, ``storage/pools.py``).
Timed: the ``COPY`` alone. The rows, statements and transaction shape are the same in both.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import DEFAULT_DATA_PATH, locomo_missing
from _plain import data_root
from _report import write_json
from retain import locomo_turns

COPY_LINKS = "COPY memory_links (bank_id, from_id, to_id, link_type, weight) FROM STDIN"
MODES = ("auto", "force_custom_plan")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    if locomo_missing(args.data):
        return 0

    import psycopg
    from _peers import EmbeddingCache

    from shared_core import EngineConfig, MemoryEngine
    from shared_core.types import MemoryItem

    turns = locomo_turns(args.data, 1000)
    cache = EmbeddingCache()
    cache.ensure(t for t, _ in turns)
    items = [MemoryItem(text=t, mentioned_at=w, embedding=cache.get(t)) for t, w in turns]
    config = EngineConfig(extract_entities=False, extract_dates=False)
    source = f"fk-plan-source-{time.time_ns()}"
    rounds: list[dict[str, Any]] = []
    with MemoryEngine(data_dir=args.data_dir or data_root("bench-fk-plan-pgdata"), config=config) as engine:
        engine.retain(items, bank=source, progress=False)
        with psycopg.connect(engine.dsn, autocommit=True) as conn:
            links = conn.execute(
                "SELECT from_id, to_id, link_type, weight FROM memory_links WHERE bank_id = %s "
                "ORDER BY from_id, to_id, link_type",
                (source,),
            ).fetchall()
            for r in range(args.rounds):
                for mode in MODES:
                    bank = f"fk-plan-{r}-{mode}"
                    conn.execute("DELETE FROM banks WHERE bank_id = %s", (bank,))
                    with conn.transaction():
                        conn.execute(
                            "INSERT INTO banks (bank_id, embedding_model, embedding_dimension) "
                            "SELECT %s, embedding_model, embedding_dimension FROM banks WHERE bank_id = %s",
                            (bank, source),
                        )
                        conn.execute(
                            "INSERT INTO memory_units (bank_id, id, text, embedding, fact_type, "
                            "mentioned_at, search_vector, created_at, updated_at) "
                            "SELECT %s, id, text, embedding, fact_type, mentioned_at, search_vector, "
                            "created_at, updated_at FROM memory_units WHERE bank_id = %s",
                            (bank, source),
                        )
                        conn.execute("SELECT set_config('plan_cache_mode', %s, true)", (mode,))
                        load = os.getloadavg()[0]
                        t0 = time.perf_counter()
                        with conn.cursor() as cur, cur.copy(COPY_LINKS) as copy:
                            for row in links:
                                copy.write_row((bank, *row))
                        ms = (time.perf_counter() - t0) * 1e3
                    conn.execute("DELETE FROM banks WHERE bank_id = %s", (bank,))
                    rounds.append({"round": r, "plan_cache_mode": mode, "copy_ms": round(ms), "load": load})
                    print(
                        f"round {r} {mode:18s} {len(links):,} links copied in {ms:,.0f} ms, load {load:.1f}"
                    )
            conn.execute("DELETE FROM banks WHERE bank_id = %s", (source,))
    if args.out:
        write_json(args.out, {"links": len(links), "rounds": rounds})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
