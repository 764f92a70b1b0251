"""What migration 0018's statement trigger (``metadata_values_insert``) adds to a one-memory
INSERT into a loaded bank: the same row copy inserted with the trigger enabled and disabled,
alternating (ABBA), each in a rolled-back transaction, so the bank is left as it was.

    HINDSIGHT_BENCH_PGDATA=D .venv/bin/python benchmarks/metadata_trigger_cost.py \
        --data-dir D --bank bench-latency-v2-100000 --rounds 160

Never run it against a server others use: ``ALTER TABLE ... DISABLE TRIGGER`` takes an
exclusive lock on ``memory_units`` for the length of each rolled-back transaction.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import psycopg
from psycopg import sql

from shared_core import EngineConfig, MemoryEngine

_COLUMNS = sql.SQL(
    "SELECT attname FROM pg_attribute WHERE attrelid = 'memory_units'::regclass "
    "AND attnum > 0 AND NOT attisdropped AND attgenerated = ''"
)
_COPY = sql.SQL(
    "CREATE TEMP TABLE one_row ON COMMIT DROP AS "
    "SELECT * FROM memory_units WHERE bank_id = %(bank)s OFFSET %(offset)s LIMIT 1"
)
_NEW_ID = sql.SQL("UPDATE one_row SET id = gen_random_uuid()")
_DISABLE = sql.SQL("ALTER TABLE memory_units DISABLE TRIGGER metadata_values_insert")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA"))
    p.add_argument("--bank", default="bench-latency-v2-100000")
    p.add_argument("--rounds", type=int, default=160)
    args = p.parse_args(argv)
    engine = MemoryEngine(data_dir=args.data_dir, config=EngineConfig(extract_entities=False))
    times: dict[str, list[float]] = {"trigger": [], "no trigger": []}
    try:
        with psycopg.connect(engine.dsn) as conn:
            names = [r[0] for r in conn.execute(_COLUMNS).fetchall()]
            columns = sql.SQL(", ").join(map(sql.Identifier, names))
            insert = sql.SQL("INSERT INTO memory_units ({c}) SELECT {c} FROM one_row").format(c=columns)
            for i in range(args.rounds):
                mode = ("trigger", "no trigger", "no trigger", "trigger")[i % 4]
                with conn.transaction(force_rollback=True):
                    if mode == "no trigger":
                        conn.execute(_DISABLE)
                    conn.execute(_COPY, {"bank": args.bank, "offset": i * 37})
                    conn.execute(_NEW_ID)
                    t0 = time.perf_counter()
                    conn.execute(insert)
                    times[mode].append((time.perf_counter() - t0) * 1e3)
    finally:
        engine.close()
    for mode, ms in times.items():
        kept = ms[2:]  # the first of each side warms the plan
        median, mean = statistics.median(kept), statistics.fmean(kept)
        print(f"{mode:10s} median {median:.3f} ms, mean {mean:.3f} ms, n {len(kept)}")
    print(f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
