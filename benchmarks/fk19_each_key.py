"""What each foreign key of memory_links and unit_entities costs a retain's writes, one key at a
time (issue 15.2; docs/benchmarks/fk19_links.md: which keys migration 0024 drops).

    HINDSIGHT_BENCH_PGDATA=/tmp/x-100k .venv/bin/python benchmarks/fk19_each_key.py --rounds 8

Needs a bank still at migration 0023 (a copy of the 100k bench bank). Each round, per mode, in a
transaction rolled back: the mode's keys dropped (DDL in the transaction); a new memory (a
stored one's row under a new id, as a retain's ``INSERT``); an untimed warm-up link and mention
(the remaining checks' plans are made after the DDL); a ``CHECKPOINT`` from another session;
then, as a retain after a checkpoint: the mention counts' ``UPDATE`` of 3 entities, the
mentions' ``INSERT`` (the new memory -> those 3), and 34 links' ``INSERT`` (the new memory -> 34
stored ones). For the two ``INSERT`` statements it records the WAL written (server-wide insert
position: a private server) and the backend's CPU (``/proc/<pid>/schedstat``). The modes rotate.

Modes: ``all`` (0023), ``no_link_to``, ``no_link_from``, ``no_links`` (both link keys),
``no_mention_entity``, ``no_mention_unit``, ``none`` (the four: migration 0024).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from typing import Any

import psycopg
from psycopg import sql

from shared_core.server import acquire_embedded

BANK = "bench-latency-v2-100000"
WAL = "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"
KEYS = {
    "link_to": ("memory_links", "memory_links_bank_id_to_id_fkey"),
    "link_from": ("memory_links", "memory_links_bank_id_from_id_fkey"),
    "mention_entity": ("unit_entities", "unit_entities_bank_id_entity_id_fkey"),
    "mention_unit": ("unit_entities", "unit_entities_bank_id_unit_id_fkey"),
}
MODES: dict[str, tuple[str, ...]] = {
    "all": (),
    "no_link_to": ("link_to",),
    "no_link_from": ("link_from",),
    "no_links": ("link_to", "link_from"),
    "no_mention_entity": ("mention_entity",),
    "no_mention_unit": ("mention_unit",),
    "none": tuple(KEYS),
}
LINKS = """
INSERT INTO memory_links (bank_id, from_id, to_id, link_type, weight)
SELECT %(b)s, %(f)s::uuid, t, 'semantic', 0.8 FROM unnest(%(t)s::uuid[]) t"""
MENTIONS = """
INSERT INTO unit_entities (bank_id, unit_id, entity_id)
SELECT %(b)s, %(u)s::uuid, e FROM unnest(%(e)s::uuid[]) e"""
COUNTS = """
UPDATE entities SET mention_count = mention_count + 1, last_seen = now()
WHERE bank_id = %(b)s AND id = ANY(%(e)s::uuid[])"""


def cpu_ns(pid: int) -> int:
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def measure(
    conn: psycopg.Connection[Any], side: psycopg.Connection[Any], query: str, params: dict[str, Any]
) -> tuple[float, float]:
    pid = conn.info.backend_pid
    w0 = side.execute(WAL).fetchone()[0]  # type: ignore[index]
    c0 = cpu_ns(pid)
    conn.execute(query, params)  # type: ignore[arg-type]
    c1 = cpu_ns(pid)
    w1 = side.execute(WAL).fetchone()[0]  # type: ignore[index]
    return float(w1 - w0) / 1024, (c1 - c0) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--out")
    args = parser.parse_args()
    _, dsn = acquire_embedded(os.environ["HINDSIGHT_BENCH_PGDATA"])
    load = [os.getloadavg()]
    out: dict[str, dict[str, list[float]]] = {
        m: {"links_kB": [], "links_cpu_ms": [], "mentions_kB": [], "mentions_cpu_ms": []} for m in MODES
    }
    with psycopg.connect(dsn, autocommit=True) as side, psycopg.connect(dsn) as conn:
        conn.execute("SET plan_cache_mode = auto")  # what retain's checked writes run under
        cols = [
            r[0]
            for r in conn.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = 'memory_units'::regclass "
                "AND attnum > 0 AND NOT attisdropped AND attgenerated = '' AND attidentity = '' "
                "AND attname <> 'stream_idx' ORDER BY attnum"
            )
        ]
        copy_unit = sql.SQL(
            "INSERT INTO memory_units ({}) SELECT {} FROM memory_units WHERE bank_id = %(b)s AND id = %(src)s"
        ).format(
            sql.SQL(", ").join(map(sql.Identifier, cols)),
            sql.SQL(", ").join(sql.SQL("%(new)s::uuid") if c == "id" else sql.Identifier(c) for c in cols),
        )
        units = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM memory_units WHERE bank_id = %s ORDER BY random() LIMIT 5000", (BANK,)
            )
        ]
        ents = [
            r[0]
            for r in conn.execute(
                "SELECT id FROM entities WHERE bank_id = %s ORDER BY random() LIMIT 1000", (BANK,)
            )
        ]
        conn.commit()
        names = list(MODES)
        k = 0
        for r in range(args.rounds):
            for j in range(len(names)):
                mode = names[(r + j) % len(names)]
                k += 1
                for key in MODES[mode]:
                    table, name = KEYS[key]
                    conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {name}")  # type: ignore[arg-type]
                new = conn.execute("SELECT gen_random_uuid()").fetchone()[0]  # type: ignore[index]
                conn.execute(copy_unit, {"b": BANK, "src": units[k], "new": new})
                tos = units[100 + 40 * k : 134 + 40 * k]
                mine = ents[3 * k : 3 * k + 3]
                warm = {"b": BANK, "f": new, "t": [units[135 + 40 * k]], "u": new, "e": [ents[999 - k]]}
                conn.execute(LINKS, warm)
                conn.execute(MENTIONS, warm)
                side.execute("CHECKPOINT")
                conn.execute(COUNTS, {"b": BANK, "e": mine})
                kb, ms = measure(conn, side, MENTIONS, {"b": BANK, "u": new, "e": mine})
                out[mode]["mentions_kB"].append(kb)
                out[mode]["mentions_cpu_ms"].append(ms)
                kb, ms = measure(conn, side, LINKS, {"b": BANK, "f": new, "t": tos})
                out[mode]["links_kB"].append(kb)
                out[mode]["links_cpu_ms"].append(ms)
                conn.rollback()
            load.append(os.getloadavg())
    summary = {m: {k2: round(statistics.median(v), 3) for k2, v in d.items()} for m, d in out.items()}
    for m, d in summary.items():
        print(f"{m:18s}", d)
    print("load", [tuple(round(x, 2) for x in t) for t in (load[0], load[-1])])
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"summary": summary, "raw": out, "load": load, "rounds": args.rounds}, f, indent=1)


if __name__ == "__main__":
    main()
