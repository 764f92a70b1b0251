"""What deleting memories costs with the links' foreign keys cascading, with migration 0024's
statement trigger, and with explicit deletes of the links and mentions first (issue 15.2;
docs/benchmarks/fk19_links.md).

    .venv/bin/python benchmarks/fk19_delete_cost.py --fk-data /tmp/x-100k \
        --data /tmp/x-100k-0024 --sizes 1 1000 --rounds 8

Two copies of the 100k bench bank: ``--fk-data`` still at migration 0023 (the foreign keys),
``--data`` migrated to 0024 (open it once with this tree's engine). Each round draws ``size``
stored memories at random (the same ids in both copies) and deletes them once per mode, each in
a transaction rolled back, the modes' order rotated from round to round:

* ``fk``: ``DELETE FROM memory_units`` at 0023 (the four foreign keys cascade, row by row);
* ``trigger``: the same ``DELETE`` at 0024 (its statement trigger);
* ``explicit``: at 0024 with that trigger disabled in the transaction: the links (each end),
  the mentions, then the memories, deleted by four statements.

Prints the median ms of each mode and size (the delete statements only), and the load.
``--bank-drop``: instead, the whole bank deleted (``DELETE FROM banks``: the cascade), once per
round in each copy (``fk``, ``trigger``), rolled back.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

import psycopg

from shared_core.server import acquire_embedded

BANK = "bench-latency-v2-100000"
DELETE_UNITS = "DELETE FROM memory_units WHERE bank_id = %(b)s AND id = ANY(%(ids)s::uuid[])"
EXPLICIT = (
    "DELETE FROM memory_links WHERE bank_id = %(b)s AND from_id = ANY(%(ids)s::uuid[])",
    "DELETE FROM memory_links WHERE bank_id = %(b)s AND to_id = ANY(%(ids)s::uuid[])",
    "DELETE FROM unit_entities WHERE bank_id = %(b)s AND unit_id = ANY(%(ids)s::uuid[])",
    DELETE_UNITS,
)
NO_TRIGGER = "ALTER TABLE memory_units DISABLE TRIGGER memory_units_links_delete"
MODES = ("fk", "trigger", "explicit")


def run(conn: psycopg.Connection[Any], mode: str, ids: list[str]) -> float:
    if mode == "explicit":
        conn.execute(NO_TRIGGER)
    params = {"b": BANK, "ids": ids}
    t0 = time.perf_counter()
    for statement in EXPLICIT if mode == "explicit" else (DELETE_UNITS,):
        conn.execute(statement, params)  # type: ignore[arg-type]
    ms = (time.perf_counter() - t0) * 1e3
    conn.rollback()
    return ms


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fk-data", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 1000])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--bank-drop", action="store_true")
    args = parser.parse_args()
    dsns = {"fk": acquire_embedded(args.fk_data)[1], "0024": acquire_embedded(args.data)[1]}
    print("load", os.getloadavg())
    # Unprepared statements (planned at each run) in every mode alike.
    with (
        psycopg.connect(dsns["fk"], prepare_threshold=None) as old,
        psycopg.connect(dsns["0024"], prepare_threshold=None) as new,
    ):
        for c in (old, new):
            c.execute("SET plan_cache_mode = force_custom_plan")  # the engine's sessions' mode
            c.commit()
        if args.bank_drop:
            drops: dict[str, list[float]] = {"fk": [], "trigger": []}
            for r in range(args.rounds):
                for mode in ("fk", "trigger") if r % 2 == 0 else ("trigger", "fk"):
                    c = old if mode == "fk" else new
                    t0 = time.perf_counter()
                    c.execute("DELETE FROM banks WHERE bank_id = %s", (BANK,))
                    drops[mode].append((time.perf_counter() - t0) * 1e3)
                    c.rollback()
                    print(mode, round(drops[mode][-1]), "ms, load", os.getloadavg(), flush=True)
            return
        conn = old
        for size in args.sizes:
            out: dict[str, list[float]] = {m: [] for m in MODES}
            for r in range(args.rounds):
                ids = [
                    str(i)
                    for (i,) in conn.execute(
                        "SELECT id FROM memory_units WHERE bank_id = %s ORDER BY random() LIMIT %s",
                        (BANK, size),
                    )
                ]
                conn.rollback()
                for k in range(len(MODES)):
                    mode = MODES[(r + k) % len(MODES)]
                    out[mode].append(run(old if mode == "fk" else new, mode, ids))
            print(
                f"size {size}:",
                {m: round(statistics.median(v), 2) for m, v in out.items()},
                {m: [round(x, 1) for x in v] for m, v in out.items()},
                "load",
                os.getloadavg(),
                flush=True,
            )


if __name__ == "__main__":
    main()
