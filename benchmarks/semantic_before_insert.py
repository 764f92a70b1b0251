"""Would the retain's semantic neighbours change if searched before the unit's INSERT?

    HINDSIGHT_BENCH_PGDATA=/tmp/one-100k .venv/bin/python benchmarks/semantic_before_insert.py \
        --bank bench-latency-v2-100000 --count 300

The small retain searches a new unit's stored neighbours (``links.semantic_neighbours_query``,
HNSW, ef_search 40, top 20) after its ``INSERT``, so the new node is in the graph the search
walks. Searching by the vector before the insert could overlap the server's search with the
client's NER (issue 15.2), but HNSW is approximate: the walk differs, and so may the neighbours.
For ``--count`` vectors (a stored unit's vector plus Gaussian noise of each ``--noise`` level,
and random unit vectors), in a transaction rolled back each time: the search by the vector
before the insert, the same search after inserting a unit with that vector (the library's
statement), and the exact neighbours (a sequential scan). Prints how often the stored links
(neighbours with similarity >= 0.7) and the whole top 20 differ, and each side's recall of the
exact links.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bank", default="bench-latency-v2-100000")
    p.add_argument("--count", type=int, default=300)
    p.add_argument("--noise", type=float, nargs="*", default=[0.005, 0.02])
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql

    from shared_core import MemoryEngine
    from shared_core.config import DEFAULT_SEMANTIC_LINK_MIN_SIMILARITY, DEFAULT_SEMANTIC_LINK_TOP_K
    from shared_core.retain.links import SEMANTIC_NEIGHBOUR_SETTINGS, semantic_neighbours_query
    from shared_core.storage.dimensions import Dimension

    k, floor = DEFAULT_SEMANTIC_LINK_TOP_K, DEFAULT_SEMANTIC_LINK_MIN_SIMILARITY
    report: dict[str, Any] = {"loadavg_start": os.getloadavg(), "k": k, "min_similarity": floor}
    # The engine keeps the embedded server running while the probe's connection uses it.
    with (
        MemoryEngine(data_dir=os.environ["HINDSIGHT_BENCH_PGDATA"]) as engine,
        psycopg.connect(engine.dsn) as conn,
    ):
        dim = Dimension(engine.embedder.dimension)
        register_vector(conn)
        # The pool's session settings (storage/pools.py) and the search's own.
        conn.execute(
            "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
            "set_config('hnsw.max_scan_tuples', '20000', false)"
        )
        conn.commit()
        stored = [
            np.asarray(r[0].to_numpy() if hasattr(r[0], "to_numpy") else r[0], dtype=np.float32)
            for r in conn.execute(
                sql.SQL("SELECT {} FROM memory_units WHERE bank_id = %s ORDER BY random() LIMIT %s").format(
                    sql.SQL("embedding")
                ),
                (args.bank, args.count),
            )
        ]
        conn.commit()
        before = sql.SQL(
            "SELECT u.id::text AS id, 1 - ({vec} <=> %(v)s::vector) AS similarity FROM memory_units u "
            "WHERE u.bank_id = %(bank)s AND {dims} ORDER BY {vec} <=> %(v)s::vector LIMIT %(k)s"
        ).format(vec=dim.column, dims=dim.predicate)
        exact = sql.SQL(
            "SELECT u.id::text AS id, 1 - (u.embedding <=> %(v)s::vector) AS similarity FROM memory_units u "
            "WHERE u.bank_id = %(bank)s ORDER BY u.embedding <=> %(v)s::vector LIMIT %(k)s"
        )
        insert = (
            "INSERT INTO memory_units (bank_id, id, text, embedding, fact_type, mentioned_at, search_vector) "
            "VALUES (%(bank)s, %(id)s, 'probe', %(v)s, 'world', now(), ''::tsvector)"
        )
        rng = np.random.default_rng(3)
        kinds: dict[str, list[np.ndarray]] = {
            f"stored + noise {s}": [v + rng.normal(0, s, v.shape[0]).astype(np.float32) for v in stored]
            for s in args.noise
        }
        kinds["random"] = [rng.normal(0, 1, dim.size).astype(np.float32) for _ in stored]
        results: dict[str, dict[str, Any]] = {}
        for kind, vectors in kinds.items():
            tally = {
                "n": 0,
                "links_differ": 0,
                "top_k_differ": 0,
                "exact_links": 0,
                "before_hits": 0,
                "after_hits": 0,
                "with_links": 0,
            }
            for v in vectors:
                v = v / np.linalg.norm(v)
                new = uuid.uuid4()
                with conn.transaction(force_rollback=True):
                    for name, value in SEMANTIC_NEIGHBOUR_SETTINGS.items():
                        conn.execute("SELECT set_config(%s, %s, true)", (name, value))
                    pre = conn.execute(before, {"v": v, "bank": args.bank, "k": k}).fetchall()
                    conn.execute(insert, {"bank": args.bank, "id": new, "v": v})
                    q = semantic_neighbours_query(args.bank, [new], dim, k=k, min_similarity=-2.0)
                    post = [(r[1], r[2]) for r in conn.execute(q.statement, q.params).fetchall()]
                    conn.execute(
                        "SELECT set_config('enable_indexscan', 'off', true), "
                        "set_config('enable_seqscan', 'on', true), set_config('enable_sort', 'on', true)"
                    )
                    truth = conn.execute(exact, {"v": v, "bank": args.bank, "k": k + 1}).fetchall()
                truth = [(i, s) for i, s in truth if i != str(new)][:k]
                links_pre = {i for i, s in pre if s >= floor}
                links_post = {i for i, s in post if s >= floor}
                links_true = {i for i, s in truth if s >= floor}
                tally["n"] += 1
                tally["links_differ"] += links_pre != links_post
                tally["top_k_differ"] += {i for i, _ in pre} != {i for i, _ in post}
                tally["with_links"] += bool(links_true)
                tally["exact_links"] += len(links_true)
                tally["before_hits"] += len(links_pre & links_true)
                tally["after_hits"] += len(links_post & links_true)
            results[kind] = tally
            print(kind, json.dumps(tally), flush=True)
    report["results"] = results
    report["loadavg_end"] = os.getloadavg()
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
