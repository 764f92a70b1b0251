"""Throughput of concurrent recalls, two source trees A/B: 8-client and 1-client blocks interleaved.

    HINDSIGHT_BENCH_PGDATA=D .venv/bin/python benchmarks/concurrency_ab.py \
        --a /path/to/baseline/tree --b . --rounds 8 --calls 20 --calls-1 40

Issue 15's concurrency target divides the queries/s of 8 clients (threads of one process) by
one client's. ``recall_latency.py`` measures the two minutes apart, one tree at a time, and on a
shared 2-core host the ratio moved 1.25-1.99 from run to run. Here each tree runs in a worker
process of its own (``_ab.py``) on the same embedded server and bank, and the driver alternates
short blocks: each round runs an 8-client block (``--clients`` threads x ``--calls`` recalls)
of each side, then a 1-client block (``--calls-1`` recalls) of each side in the reverse order,
the first side swapping every round (A B B A, B A A B, ...). Only one side runs at a time.

Per side it reports the queries/s of the 8-client and the 1-client blocks (all rounds pooled and
the per-round median), their ratio, and per recall: the worker's CPU (all its threads, the query
embedding included), the server's CPU (every process of the embedded server, read from
``/proc/*/schedstat`` around the block: the idle side's connections cost nothing), the pool's
waits for a connection, the statements' waits for an executor thread and the pooled connections
checked out; the cores the side's recalls used (their CPU over the wall time), the machine's
idle share and the load average; with ``--sample-waits``, what the server's active backends
waited for (``pg_stat_activity`` every 20 ms). Every recall's memories are compared query by
query: ids, scores and cosine similarities, and ids alone (concurrent queries are embedded in
one batched pass, whose floats may differ in the last bits from a lone query's, within a side
as much as between sides).

Both sides may be one tree: ``--setup-b`` runs Python in B's worker before its engine opens (a
module constant changed, say), and ``--processes-b 2`` splits B's clients over two processes
(threads against processes: what the interpreter's lock costs). Machine-wide numbers on a shared
host are shares of it: compare the sides, round by round, and say the load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parent))

Side = Literal["A", "B"]

_WORKER = r"""
import hashlib, json, os, sys, time
sys.path.insert(0, sys.argv[2])
from _clients import run_clients
from _corpus import CORPUS_VERSION, make_queries
import threading
from shared_core import EngineConfig, MemoryEngine
from shared_core.storage import runner

# how long statements handed to the executor waited there for a thread (both trees share runner)
queued = [0.0]
lock = threading.Lock()
original = runner._one_off_sync
def one_off(pool, query, queued_at=None):
    if queued_at is not None:
        with lock:
            queued[0] += time.monotonic() - queued_at
    return original(pool, query, queued_at)
runner._one_off_sync = one_off

size = int(sys.argv[1])
options = {"reranker": "none"} | json.loads(sys.argv[3])
exec(sys.argv[4])  # --setup-a / --setup-b: e.g. a module constant changed before the engine opens
bank = f"bench-latency-v{CORPUS_VERSION}-{size}"
queries = make_queries()
n = len(queries.texts)

def call(i):
    r = engine.recall(queries.texts[i % n], bank=bank, query_timestamp=queries.query_time,
                      **options)
    got = [[m.id, m.score, m.similarity] for m in r.memories]
    digest = lambda x: hashlib.sha256(json.dumps(x).encode()).hexdigest()[:16]
    return i % n, digest(got), digest([m.id for m in r.memories])

with MemoryEngine(data_dir=os.environ["HINDSIGHT_BENCH_PGDATA"],
                  config=EngineConfig(extract_entities=False, extract_dates=False)) as engine:
    for i in range(n):  # every query once: the server's caches warm for all of them
        call(i)
    pool = engine._pools._pool
    if os.environ.get("CONC_AB_DSN_FILE"):  # for the driver's sampler of the server's waits
        with open(os.environ["CONC_AB_DSN_FILE"], "w") as f:
            f.write(engine.dsn)
    print("ready", flush=True)
    for line in sys.stdin:
        block = json.loads(line)
        pool.pop_stats()
        queued[0] = 0.0
        cpu = time.process_time()
        rows, wall = run_clients(lambda _c, i: call(block["start"] + i), block["calls"], block["clients"])
        cpu = (time.process_time() - cpu) * 1e3
        stats = pool.pop_stats()
        requests = stats.get("requests_num", 0)
        print(json.dumps({"wall": wall, "calls": len(rows), "cpu_ms": cpu, "results": rows,
                          "pool_wait_ms": stats.get("requests_wait_ms", 0),
                          "pool_waits": stats.get("requests_queued", 0),
                          "executor_wait_ms": queued[0] * 1e3, "checkouts": requests,
                          "connections": pool.get_stats().get("pool_size", 0)}), flush=True)
"""


@dataclass(frozen=True, kw_only=True, slots=True)
class Block:
    """One measured block of one side: ``clients`` threads, ``calls`` recalls in all."""

    side: Side
    round: int
    clients: int
    calls: int
    wall_s: float
    client_cpu_ms: float
    server_cpu_ms: float
    pool_wait_ms: float
    executor_wait_ms: float = 0.0
    checkouts: int = 0
    idle_share: float = 0.0
    load: float


def cpu_times(stat: str) -> tuple[float, float]:
    """The machine's busy and idle time (clock ticks, all cores) from ``/proc/stat``'s text:
    idle and iowait are idle, the rest (user, nice, system, irq, softirq, steal) busy.

    >>> cpu_times("cpu  10 2 3 50 5 0 1 4 0 0" + chr(10) + "cpu0 5 1 1 25 2 0 0 2 0 0")
    (20.0, 55.0)
    """
    fields = [float(x) for x in stat.splitlines()[0].split()[1:9]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, idle


def _machine() -> tuple[float, float]:
    try:
        with open("/proc/stat") as f:
            return cpu_times(f.read())
    except OSError:  # not Linux: no idle share
        return 0.0, 0.0


def schedule(rounds: int) -> list[tuple[int, Side, Literal["many", "one"]]]:
    """The order of the blocks: per round, each side's many-client block, then each side's
    one-client block in the reverse order; the first side swaps every round.

    >>> [f"{s}{k[0]}" for _, s, k in schedule(2)]
    ['Am', 'Bm', 'Bo', 'Ao', 'Bm', 'Am', 'Ao', 'Bo']
    """
    order: list[tuple[int, Side, Literal["many", "one"]]] = []
    for r in range(rounds):
        first: tuple[Side, Side] = ("A", "B") if r % 2 == 0 else ("B", "A")
        order += [(r, side, "many") for side in first]
        order += [(r, side, "one") for side in reversed(first)]
    return order


def qps(blocks: Sequence[Block]) -> float:
    """Queries per second over ``blocks`` pooled: all their recalls over all their wall time.

    >>> qps([Block(side="A", round=0, clients=8, calls=160, wall_s=8.0, client_cpu_ms=0,
    ...            server_cpu_ms=0, pool_wait_ms=0, load=0)] * 2)
    20.0
    """
    return sum(b.calls for b in blocks) / sum(b.wall_s for b in blocks)


def summarise(blocks: Sequence[Block], clients: int) -> dict[Side, dict[str, float]]:
    """Per side: q/s of the ``clients``-client blocks and of the 1-client blocks (pooled), their
    ratio, the median of the per-round ratios, and per recall the worker's and the server's CPU
    and the pool's wait for a connection in the many-client blocks (ms)."""
    out: dict[Side, dict[str, float]] = {}
    for side in ("A", "B"):
        many = [b for b in blocks if b.side == side and b.clients == clients]
        one = [b for b in blocks if b.side == side and b.clients == 1]
        rounds = sorted({b.round for b in many} & {b.round for b in one})
        per_round = [
            qps([b for b in many if b.round == r]) / qps([b for b in one if b.round == r]) for r in rounds
        ]
        calls_many, calls_one = sum(b.calls for b in many), sum(b.calls for b in one)
        out[side] = {
            "qps_many": qps(many),
            "qps_one": qps(one),
            "ratio": qps(many) / qps(one),
            "ratio_round_median": statistics.median(per_round),
            "client_cpu_many": sum(b.client_cpu_ms for b in many) / calls_many,
            "server_cpu_many": sum(b.server_cpu_ms for b in many) / calls_many,
            "client_cpu_one": sum(b.client_cpu_ms for b in one) / calls_one,
            "server_cpu_one": sum(b.server_cpu_ms for b in one) / calls_one,
            "pool_wait_many": sum(b.pool_wait_ms for b in many) / calls_many,
            "executor_wait_many": sum(b.executor_wait_ms for b in many) / calls_many,
            "idle_many": statistics.fmean(b.idle_share for b in many),
            # the CPU this side's recalls used (its process and the server) per second of wall
            # time, in cores: near the machine's count, the recalls are bound by CPU; well
            # below it on a quiet machine, by a wait (a queue, a lock, a round trip)
            "cores_many": sum(b.client_cpu_ms + b.server_cpu_ms for b in many)
            / sum(b.wall_s for b in many)
            / 1e3,
            "cores_one": sum(b.client_cpu_ms + b.server_cpu_ms for b in one)
            / sum(b.wall_s for b in one)
            / 1e3,
            "idle_one": statistics.fmean(b.idle_share for b in one),
        }
    return out


def differing(results: Mapping[Side, Sequence[tuple[int, str]]]) -> list[int]:
    """The queries (indices) whose result digest differs between the sides, or within a side.

    >>> differing({"A": [(0, "x"), (1, "y"), (0, "x")], "B": [(1, "y"), (0, "z")]})
    [0]
    """
    seen: dict[int, set[str]] = {}
    for rows in results.values():
        for query, digest in rows:
            seen.setdefault(query, set()).add(digest)
    return sorted(q for q, digests in seen.items() if len(digests) > 1)


class _Sampler:
    """Counts, every 20 ms until stopped, the server's active client backends by wait event
    (``running`` when they wait for nothing), on a connection of its own; ``_samples`` counts
    the samples. Its own backend is left out."""

    _QUERY = (
        "SELECT coalesce(wait_event_type || ':' || wait_event, 'running') FROM pg_stat_activity "
        "WHERE backend_type = 'client backend' AND state = 'active' AND pid <> pg_backend_pid()"
    )

    def __init__(self, dsn: str, counts: Counter[str]) -> None:
        import psycopg

        self._conn = psycopg.connect(dsn, autocommit=True)
        self._counts = counts
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._done.wait(0.02):
            rows = self._conn.execute(self._QUERY).fetchall()
            self._counts["_samples"] += 1
            self._counts.update(row[0] for row in rows)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()
        self._conn.close()


def _merged(answers: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One block's answers of several worker processes, run at once, as one answer: the wall
    time of the slowest, the rest summed."""
    if len(answers) == 1:
        return answers[0]
    out: dict[str, Any] = {"wall": max(a["wall"] for a in answers)}
    for key in ("calls", "cpu_ms", "pool_wait_ms", "executor_wait_ms", "checkouts"):
        out[key] = sum(a[key] for a in answers)
    out["results"] = [row for a in answers for row in a["results"]]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    from _ab import start_worker
    from recall_cpu import server_cpu

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--a", type=Path, required=True, help="tree A (e.g. a worktree of the baseline)")
    p.add_argument("--b", type=Path, required=True, help="tree B")
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--calls", type=int, default=20, help="recalls per client in a many-client block")
    p.add_argument("--calls-1", type=int, default=40, help="recalls in a 1-client block")
    p.add_argument("--options", default="{}", help="recall options as JSON (reranker none unless set)")
    p.add_argument(
        "--setup-a",
        default="",
        help="Python run in A's worker before its engine opens (both trees may be one: "
        "e.g. 'import shared_core.storage.pools as P; P._CONCURRENT_WORKERS = 8')",
    )
    p.add_argument("--setup-b", default="", help="the same for B")
    p.add_argument(
        "--processes-b",
        type=int,
        default=1,
        help="B's many-client blocks split over this many worker processes of B's tree, run at "
        "once (--clients divided among them): threads of one process against processes, for "
        "what the interpreter's lock costs",
    )
    p.add_argument(
        "--sample-waits",
        action="store_true",
        help="sample pg_stat_activity every 20 ms during the many-client blocks: what the server's "
        "active backends wait for (a lock, I/O, the client), counted per side",
    )
    p.add_argument("--out", type=Path, default=None, help="write every block and the summary (JSON)")
    args = p.parse_args(argv)
    data_dir = Path(os.environ["HINDSIGHT_BENCH_PGDATA"])
    bench = str(Path(__file__).resolve().parent)
    dsn_file = data_dir.parent / f".concurrency_ab_dsn_{os.getpid()}"
    workers: dict[Side, list[subprocess.Popen[str]]] = {
        "A": [
            start_worker(
                _WORKER,
                [str(args.size), bench, args.options, args.setup_a],
                args.a.resolve(),
                {"CONC_AB_DSN_FILE": str(dsn_file)},
            )
        ],
        "B": [
            start_worker(_WORKER, [str(args.size), bench, args.options, args.setup_b], args.b.resolve())
            for _ in range(args.processes_b)
        ],
    }
    blocks: list[Block] = []
    results: dict[Side, list[tuple[int, str]]] = {"A": [], "B": []}
    orders: dict[Side, list[tuple[int, str]]] = {"A": [], "B": []}  # the memories' ids alone
    per_round = args.clients * args.calls + args.calls_1
    waits: dict[Side, Counter[str]] = {"A": Counter(), "B": Counter()}
    dsn = dsn_file.read_text()
    dsn_file.unlink()
    try:
        for r, side, kind in schedule(args.rounds):
            clients, calls = (args.clients, args.calls) if kind == "many" else (1, args.calls_1)
            # both sides ask the same queries in a round's block of a kind; the next round moves on
            start = r * per_round + (0 if kind == "many" else args.clients * args.calls)
            procs = workers[side] if kind == "many" else workers[side][:1]
            load = os.getloadavg()[0]
            sampler = _Sampler(dsn, waits[side]) if args.sample_waits and kind == "many" else None
            server0, machine0 = server_cpu(data_dir), _machine()
            for k, proc in enumerate(procs):
                assert proc.stdin is not None
                share = clients // len(procs)
                ask = {"clients": share, "calls": calls, "start": start + k * share * calls}
                proc.stdin.write(json.dumps(ask) + "\n")
                proc.stdin.flush()
            got = _merged([json.loads(proc.stdout.readline()) for proc in procs if proc.stdout])
            server = server_cpu(data_dir) - server0
            if sampler is not None:
                sampler.stop()
            busy, idle = (b - a for a, b in zip(machine0, _machine(), strict=True))
            results[side] += [(q, full) for q, full, _ in got["results"]]
            orders[side] += [(q, ids) for q, _, ids in got["results"]]
            block = Block(
                side=side,
                round=r,
                clients=clients,
                calls=got["calls"],
                wall_s=got["wall"],
                client_cpu_ms=got["cpu_ms"],
                server_cpu_ms=server,
                pool_wait_ms=got["pool_wait_ms"],
                executor_wait_ms=got["executor_wait_ms"],
                checkouts=got.get("checkouts", 0),
                idle_share=idle / (busy + idle) if busy + idle else 0.0,
                load=load,
            )
            blocks.append(block)
            print(
                f"round {r} {side} {clients} client(s): {block.calls / block.wall_s:6.2f} q/s, CPU per "
                f"recall client {block.client_cpu_ms / block.calls:5.1f} server "
                f"{block.server_cpu_ms / block.calls:5.1f} ms, pool wait "
                f"{block.pool_wait_ms / block.calls:5.2f} executor wait "
                f"{block.executor_wait_ms / block.calls:5.2f} ms, cores used "
                f"{(block.client_cpu_ms + block.server_cpu_ms) / block.wall_s / 1e3:4.2f}, "
                f"machine idle {block.idle_share:4.0%}, "
                f"load {load:.2f}",
                flush=True,
            )
    finally:
        for proc in (proc for procs in workers.values() for proc in procs):
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait()
    summary = summarise(blocks, args.clients)
    loads = [b.load for b in blocks]
    print(f"\nA = {args.a}\nB = {args.b}")
    print(f"load {min(loads):.2f}-{max(loads):.2f}, ended {time.strftime('%H:%M')}")
    for side, s in summary.items():
        print(
            f"  {side}: {args.clients} clients {s['qps_many']:.2f} q/s / 1 client {s['qps_one']:.2f} = "
            f"{s['ratio']:.2f} (per-round median {s['ratio_round_median']:.2f}); CPU per recall at "
            f"{args.clients}: client {s['client_cpu_many']:.1f} + server {s['server_cpu_many']:.1f} ms, "
            f"at 1: {s['client_cpu_one']:.1f} + {s['server_cpu_one']:.1f}; pool wait "
            f"{s['pool_wait_many']:.2f} ms, executor wait {s['executor_wait_many']:.2f} ms; machine "
            f"idle {s['idle_many']:.0%} at {args.clients}, {s['idle_one']:.0%} at 1; cores used "
            f"{s['cores_many']:.2f} at {args.clients}, {s['cores_one']:.2f} at 1"
        )
    checkouts = {
        side: sum(b.checkouts for b in blocks if b.side == side)
        / sum(b.calls for b in blocks if b.side == side)
        for side in ("A", "B")
    }
    print(f"  pooled connections checked out per recall: A {checkouts['A']:.2f} | B {checkouts['B']:.2f}")
    for side in ("A", "B"):
        if waits[side]:
            n = waits[side].pop("_samples")
            top = ", ".join(f"{k} {v / n:.2f}" for k, v in waits[side].most_common(8))
            print(f"  {side}: server backends per sample (of {n}), by what they were doing: {top}")
    diff = differing(results)
    total = len({q for rows in results.values() for q, _ in rows})
    print(f"  identical results: {total - len(diff)} of {total} queries; differ at {diff}")
    for side in ("A", "B"):
        print(
            f"    of them within {side} (a side disagreeing with itself): {differing({side: results[side]})}"
        )
    print(f"  the same memories in the same order (scores aside) differ at {differing(orders)}")
    if args.out is not None:
        args.out.write_text(
            json.dumps(
                {
                    "argv": sys.argv,
                    "blocks": [{f: getattr(b, f) for f in Block.__dataclass_fields__} for b in blocks],
                    "summary": summary,
                    "differ": diff,
                    "differ_within": {side: differing({side: results[side]}) for side in ("A", "B")},
                    "differ_ids": differing(orders),
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
