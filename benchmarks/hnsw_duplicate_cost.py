"""What one unit ``INSERT`` costs when its vector is already in the HNSW index (issue 15.2 method).

    HINDSIGHT_BENCH_PGDATA=/tmp/x-100k .venv/bin/python benchmarks/hnsw_duplicate_cost.py --rounds 200

pgvector's HNSW insert looks for the new vector's neighbours first; when one of them holds the
very same vector, it adds the new row's heap TID to that element (up to 10 per element) and
skips writing a new element and updating its neighbours' pages. So a benchmark that inserts a
vector already stored (``recall_latency.py``'s plain side: the corpus vectors themselves), or
the same vector twice (``single_retain_ab.py``: both sides retain vector ``i``; reruns on one
bank copy repeat every vector), times that cheaper path. This times one ``memory_units`` row
``INSERT`` (the probe of ``single_retain.py --index-costs``) with:

* ``duplicate``: the exact embedding of a stored memory (read back from the table);
* ``near``: that embedding plus N(0, 0.02) per dimension (``recall_latency.py``'s retains);
* ``random``: a random unit vector (``single_retain_ab.py``'s);

each in a transaction of its own, rolled back, the three alternating in rotated order. A
rolled-back insert still leaves its element in the HNSW index (dead, until a vacuum): run it on
a copy of the bench bank.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from single_retain import probe_insert_ms


class _RollBack(Exception):
    pass


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bank", default="bench-latency-v2-100000")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    from shared_core.server import acquire_embedded

    _, dsn = acquire_embedded(os.environ["HINDSIGHT_BENCH_PGDATA"])
    rng = np.random.default_rng(17)
    ms: dict[str, list[float]] = {"duplicate": [], "near": [], "random": []}
    load = [round(os.getloadavg()[0], 2)]
    with psycopg.connect(dsn) as conn:
        register_vector(conn)
        stored = [
            np.asarray(v, dtype=np.float32)
            for (v,) in conn.execute(
                "SELECT embedding FROM memory_units WHERE bank_id = %s ORDER BY random() LIMIT %s",
                (args.bank, args.rounds),
            )
        ]
        conn.commit()
        for r, base in enumerate(stored):
            noise = rng.normal(0, 0.02, base.shape[0]).astype(np.float32)
            rand = rng.normal(0, 1, base.shape[0]).astype(np.float32)
            vectors = {"duplicate": base, "near": base + noise, "random": rand / np.linalg.norm(rand)}
            names = list(vectors)
            for name in names[r % 3 :] + names[: r % 3]:
                try:
                    with conn.transaction():
                        ms[name].append(probe_insert_ms(conn, args.bank, vectors[name]))
                        raise _RollBack
                except _RollBack:
                    pass
    load.append(round(os.getloadavg()[0], 2))
    report = {
        name: {"n": len(v), "p50": round(statistics.median(v), 3), "mean": round(statistics.fmean(v), 3)}
        for name, v in ms.items()
    }
    report["load"] = load  # type: ignore[assignment]
    print(json.dumps(report))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
