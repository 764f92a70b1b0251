"""Where a recall's CPU goes, in this process and in the server's (Linux: ``/proc/*/schedstat``).

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/recall_cpu.py --size 100000 --calls 100

Over a bank loaded by ``recall_latency.py`` (``reranker="none"``), three measurements:

1. **The query-embedding window.** For each recall, while its query is embedded: the embedding
   thread's CPU time and its wait for a core (run-queue time), the CPU time of this process's
   other threads, and of the server's processes (the keyword statement is launched before the
   embedding and runs beside it); then the same texts embedded alone, for comparison. Also the
   path before the embedding (from the call to the embedding's start: query analysis, the
   keyword statement's composition and launch).
2. **Server CPU per statement kind.** Every statement of ``--calls`` recalls (at most 50
   queries) run again, alone, on one warm connection with the engine's session settings (and
   each statement's own settings), its backend's CPU time read around it: what each arm costs
   the server per recall.
3. **CPU per recall at 1 and 8 clients** (threads, as ``recall_latency.py`` runs them): this
   process's CPU (of it the query embedding) against the server's: which side limits the
   throughput of 8 clients on a small machine.

CPU times are per thread or process (``schedstat``'s nanoseconds on a core), so they count work,
not waits; on a loaded machine they still grow somewhat (caches and clocks are shared).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _args import add_bank_scope_args, scope_options
from _clients import run_clients
from _corpus import CORPUS_VERSION, make_queries
from recall_latency import describe
from recall_profile import statement_name


def schedstat(path: str) -> tuple[float, float]:
    """CPU time and run-queue wait (ms) of a task from its ``schedstat`` file; zeros when it is
    gone or the file is missing (not Linux).

    >>> schedstat("/nonexistent/schedstat")
    (0.0, 0.0)
    """
    try:
        with open(path) as f:
            on_cpu, waiting, _ = f.read().split()
    except (OSError, ValueError):
        return 0.0, 0.0
    return int(on_cpu) / 1e6, int(waiting) / 1e6


def server_pids(data_dir: Path) -> list[str]:
    """The postmaster whose command line names ``data_dir``, and its children (backends and
    background workers)."""
    marker = str(data_dir.resolve())
    postmasters: set[str] = set()
    parents: dict[str, str] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline") as f:
                if marker in f.read().replace("\0", " "):
                    postmasters.add(pid)
            with open(f"/proc/{pid}/stat") as f:
                parents[pid] = f.read().rsplit(")", 1)[1].split()[1]
        except OSError:
            continue
    return [pid for pid, parent in parents.items() if pid in postmasters or parent in postmasters]


def server_cpu(data_dir: Path) -> float:
    """The CPU time (ms) the processes of the server on ``data_dir`` have used so far (found
    anew each time: a backend the pool opens meanwhile counts from its start)."""
    return sum(schedstat(f"/proc/{pid}/schedstat")[0] for pid in server_pids(data_dir))


def replay_cpu(conn: Any, schedstat_path: str, statement: Any, params: Any, settings: Sequence[Any]) -> float:
    """The server CPU (ms, the backend's ``schedstat_path``) of running ``statement`` once more
    on ``conn`` (autocommit), framed as recall frames it: its setting statements first, in a
    transaction of its own. Committed, not rolled back: a rollback makes psycopg drop the
    connection's prepared statements, which recall's are from their fifth run (its connections
    commit), and a generic plan's saving is in them."""
    cpu0 = schedstat(schedstat_path)[0]
    with conn.transaction(), conn.cursor() as cur:
        for setting in settings:
            cur.execute(setting)
        cur.execute(statement, params)
        cur.fetchall()
    return schedstat(schedstat_path)[0] - cpu0


def thread_cpu() -> dict[str, float]:
    """CPU time (ms) of every thread of this process, by thread id."""
    return {t: schedstat(f"/proc/self/task/{t}/schedstat")[0] for t in os.listdir("/proc/self/task")}


@contextmanager
def patched(owner: Any, name: str, make: Callable[[Any], Any]) -> Iterator[None]:
    """``owner.name`` replaced by ``make(original)`` within the block."""
    original = getattr(owner, name)
    setattr(owner, name, make(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def _line(label: str, values: Sequence[float]) -> str:
    st = describe(list(values))
    return f"  {label:44s} p50 {st['p50']:7.2f}  mean {sum(values) / len(values):7.2f}  n {st['n']}"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000)
    p.add_argument("--calls", type=int, default=100)
    p.add_argument("--clients-calls", type=int, default=20, help="calls per client in part 3")
    add_bank_scope_args(p)
    args = p.parse_args(argv)

    import psycopg
    from pgvector.psycopg import register_vector

    import shared_core.embedding as embedding
    import shared_core.storage.runner as runner
    from shared_core import EngineConfig, MemoryEngine

    options = scope_options(args)
    bank = f"bench-latency-v{CORPUS_VERSION}-{args.size}"
    queries = make_queries()
    texts = queries.texts

    def recall(engine: Any, i: int) -> Any:
        return engine.recall(
            texts[i % len(texts)], bank=bank, query_timestamp=queries.query_time, reranker="none", **options
        )

    with MemoryEngine(
        data_dir=args.data_dir, config=EngineConfig(extract_entities=False, extract_dates=False)
    ) as engine:
        for i in range(10):  # warm-up: models, pool, caches
            recall(engine, i)
        print(f"bank {bank}, options {options}, load {os.getloadavg()[0]:.2f}")

        # 1. The embedding window.
        window: dict[str, list[float]] = {}
        started: list[float] = []

        def measured(original: Any) -> Any:
            def embed_query(self: Any, text: str) -> Any:
                started.append(time.perf_counter())
                tid = str(threading.get_native_id())
                me0, pg0, t0 = (
                    thread_cpu(),
                    server_cpu(args.data_dir),
                    schedstat(f"/proc/self/task/{tid}/schedstat"),
                )
                wall0 = time.perf_counter()
                vector = original(self, text)
                wall = (time.perf_counter() - wall0) * 1e3
                # the embedding thread's own first: the scans of /proc are not the embedding's work
                t1 = schedstat(f"/proc/self/task/{tid}/schedstat")
                me1, pg1 = thread_cpu(), server_cpu(args.data_dir)
                window.setdefault("embedding wall (ms)", []).append(wall)
                window.setdefault("embedding thread CPU", []).append(t1[0] - t0[0])
                window.setdefault("embedding thread waiting for a core", []).append(t1[1] - t0[1])
                others = sum(cpu - me0.get(t, 0.0) for t, cpu in me1.items() if t != tid)
                window.setdefault("CPU of this process's other threads", []).append(others)
                window.setdefault("CPU of the server's processes", []).append(pg1 - pg0)
                return vector

            return embed_query

        before: list[float] = []
        with patched(embedding.SentenceTransformerEmbedder, "embed_query", measured):
            for i in range(args.calls):
                started.clear()
                t0 = time.perf_counter()
                recall(engine, i)
                before.append((started[0] - t0) * 1e3)
            in_recall, window = window, {}
            for i in range(args.calls):
                engine.embedder.embed_query(texts[i % len(texts)])
            alone = window
        print(
            f"1. the query-embedding window, {args.calls} recalls (ms a recall), "
            f"load {os.getloadavg()[0]:.2f}"
        )
        print(_line("path before the embedding (wall)", before))
        for label, values in in_recall.items():
            print(_line(label, values))
        print("   the same texts embedded alone:")
        for label, values in alone.items():
            print(_line(label, values))

        # 2. Server CPU per statement kind.
        recorded: list[Any] = []

        def recording(original: Any) -> Any:
            def run(conn: Any, query: Any) -> Any:
                recorded.append(query)
                return original(conn, query)

            return run

        statements: list[list[Any]] = []
        with patched(runner, "_exec_sync", recording), patched(runner, "_framed_sync", recording):
            for i in range(min(args.calls, len(texts))):
                recorded.clear()
                recall(engine, i)
                statements.append(list(recorded))
        per_kind: dict[str, list[float]] = {}
        with psycopg.connect(engine.dsn, autocommit=True) as conn:
            register_vector(conn)
            conn.execute(engine._pools._session)
            (backend,) = conn.execute("SELECT pg_backend_pid()").fetchone() or (0,)
            path = f"/proc/{backend}/schedstat"
            for rep in range(2):  # the first round warms the connection (caches, prepared statements)
                for batch in statements:
                    for query in batch:
                        text = (
                            query.statement
                            if isinstance(query.statement, str)
                            else query.statement.as_string(conn)
                        )
                        spent = replay_cpu(
                            conn, path, query.statement, query.params, runner._setting_statements(query)
                        )
                        if rep:
                            per_kind.setdefault(statement_name(text)[:60], []).append(spent)
        n = len(statements)
        total = sum(sum(v) for v in per_kind.values()) / n
        print(
            f"2. server CPU per statement kind, {n} recalls' statements alone (ms), "
            f"load {os.getloadavg()[0]:.2f}"
        )
        for name, values in sorted(per_kind.items(), key=lambda kv: -sum(kv[1])):
            st = describe(values)
            print(
                f"  {sum(values) / n:6.2f} per recall ({100 * sum(values) / n / total:4.1f}%), "
                f"{len(values) / n:4.2f} a recall, p50 {st['p50']:6.2f}  {name}"
            )
        print(f"  {total:6.2f} per recall in all")

        # 3. Client against server CPU, 1 and 8 clients.
        embedded = [0.0]
        lock = threading.Lock()

        def counting(original: Any) -> Any:
            def embed_query(self: Any, text: str) -> Any:
                cpu0 = time.thread_time()
                vector = original(self, text)
                with lock:
                    embedded[0] += (time.thread_time() - cpu0) * 1e3
                return vector

            return embed_query

        print("3. CPU per recall (ms): this process (of it the query embedding) and the server")
        with patched(embedding.SentenceTransformerEmbedder, "embed_query", counting):
            run_clients(lambda c, i: recall(engine, i), 3, 8)
            for clients in (1, 8, 1, 8):
                per_client = args.clients_calls * (8 if clients == 1 else 1)
                server0, client0, load = server_cpu(args.data_dir), time.process_time(), os.getloadavg()[0]
                embedded[0] = 0.0
                _, wall = run_clients(lambda c, i: recall(engine, i), per_client, clients)
                calls = per_client * clients
                client = (time.process_time() - client0) * 1e3 / calls
                server = (server_cpu(args.data_dir) - server0) / calls
                print(
                    f"  {clients} client(s): {calls / wall:6.2f} q/s; client {client:6.2f} "
                    f"(embedding {embedded[0] / calls:5.2f}), server {server:6.2f}; load {load:.2f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
