"""WAL of one retain's links ``INSERT`` right after a checkpoint, with and without its foreign-key
checks (issue 15.2 diagnosis; docs/benchmarks/single18_one_memory.md).

    HINDSIGHT_BENCH_PGDATA=/tmp/x-100k .venv/bin/python benchmarks/links_fk_wal.py

24 rounds, alternating: a ``CHECKPOINT``, then 34 ``memory_links`` rows (a retain's ~14 semantic
and 20 temporal links) from one stored memory to 34 others, in a transaction rolled back; every
other round with the foreign-key triggers off (``session_replication_role = replica``). The
foreign-key check locks each referenced memory's row ``FOR KEY SHARE``, which changes its heap
page: after a checkpoint, one whole page in the WAL per referenced memory.
"""

import os
import statistics

import psycopg

from shared_core.server import acquire_embedded

_, dsn = acquire_embedded(os.environ["HINDSIGHT_BENCH_PGDATA"])
bank = "bench-latency-v2-100000"
WAL = "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"
out: dict[str, list[float]] = {"fk": [], "no_fk": []}
with psycopg.connect(dsn, autocommit=True) as side, psycopg.connect(dsn) as conn:
    ids = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM memory_units WHERE bank_id=%s ORDER BY random() LIMIT 2000", (bank,)
        )
    ]
    conn.commit()
    for r in range(24):
        mode = "fk" if r % 2 == 0 else "no_fk"
        frm, tos = ids[r], ids[100 + 34 * r : 134 + 34 * r]
        side.execute("CHECKPOINT")
        if mode == "no_fk":
            conn.execute("SET LOCAL session_replication_role = replica")  # FK triggers off
        w0 = side.execute(WAL).fetchone()[0]  # type: ignore[index]
        conn.execute(
            "INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight) "
            "SELECT %s, %s, t, 'semantic', 0.8 FROM unnest(%s::uuid[]) t",
            (bank, frm, tos),
        )
        w1 = side.execute(WAL).fetchone()[0]  # type: ignore[index]
        conn.rollback()
        out[mode].append((w1 - w0) / 1024)
for k, v in out.items():
    print(k, "median kB", round(statistics.median(v), 1), "n", len(v), [round(x) for x in v[:6]])
