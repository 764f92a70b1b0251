"""The plain pgvector baseline of a large load: the same vectors the latency bank holds,
``COPY``ed into a table with one HNSW index, on the same server, in both orders.

    XDG_DATA_HOME=/tmp/scale-xdg .venv/bin/python benchmarks/scale_plain.py --n 100000 \
        --data-dir /work/bench/pgdata-1m --out docs/benchmarks/scale_plain_100k.json

The vectors are those of ``_corpus.make_corpus(n)`` (real all-MiniLM-L6-v2 vectors for the
first 10k, clustered synthetic ones after), i.e. the first ``n`` memories of every latency
bank; ``recall_latency.py``'s loader (``ensure_bank``, ``--load-stages``) logs our rate for the
same memories chunk by chunk, so the two sit side by side (issue 15.1: "report both"). The
embedded server of ``--data-dir`` is started if no process holds it, or shared with the one
that does (a load running beside this measurement: report the load average, both are in it).

Each order runs into its own table, dropped afterwards: "index first" (what every insert into
a live table pays, as ours does), then "index after" (``CREATE INDEX`` after the ``COPY``: the
fastest load Postgres offers, possible for ours only into an empty database).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _corpus import make_corpus
from _plain import data_root, plain_load, plain_table
from _report import write_json

ORDERS = ("index_first", "index_after")


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=100_000, help="vectors (the corpus's first n)")
    p.add_argument("--orders", nargs="+", default=list(ORDERS), choices=ORDERS)
    p.add_argument("--batch", type=int, default=2000, help="rows per COPY transaction")
    p.add_argument("--data-dir", type=Path, default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)

    from shared_core import MemoryEngine

    corpus = make_corpus(args.n)
    report: dict[str, Any] = {"n": args.n, "batch": args.batch, "runs": []}
    with MemoryEngine(data_dir=args.data_dir or data_root("bench-pgdata")) as engine:
        for order in args.orders:
            start = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
            load_start = [round(x, 2) for x in os.getloadavg()]
            with plain_table(engine.dsn, corpus.vectors.shape[1], name=f"plain_scale_{order}") as table:
                run = plain_load(
                    engine.dsn, table, corpus.vectors, index_first=order == "index_first", batch=args.batch
                )
            run.update(
                order=order,
                started=start,
                loadavg={"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
            )
            report["runs"].append(run)
            print(
                f"{order}: {run['rows']:,} rows in {run['seconds']} s ({run['per_second']}/s), "
                f"load {run['loadavg']}"
            )
    if args.out:
        write_json(args.out, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
