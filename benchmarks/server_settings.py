"""The embedded server's settings for small machines, chosen by measurement.

    HINDSIGHT_BENCH_PGDATA=... .venv/bin/python benchmarks/server_settings.py \
        --sizes 10000 100000 --out docs/benchmarks/server_settings.json \
        --md docs/benchmarks/server_settings.md

Recall latency (``reranker="none"``, ``budget="mid"``, the queries of ``_corpus.py``) over the
banks ``recall_latency.py`` loads (loaded here when missing), per server setting, as a ratio to
the current defaults measured in the same run:

* **session settings** (``max_parallel_workers_per_gather``, ``jit``, ``work_mem``): each case
  is an engine on the same server whose connections carry the setting (libpq ``options``,
  i.e. a session-level ``SET``), sharing the loaded models. The cases run interleaved, in
  ``--rounds`` rounds of ``--calls`` recalls each (order rotated every round), so a change in
  the machine's load during the run falls on every case alike; each round also runs
  ``--clients`` concurrent clients for the throughput.
* **shared_buffers** needs a restart: ``ALTER SYSTEM`` and a restart of the embedded server per
  case (``--rounds`` restarts each, interleaved likewise, a warm-up of ``--warmup`` recalls
  after each start), then ``ALTER SYSTEM RESET``. Only with the embedded server (no ``--dsn``),
  and only when no other process uses its data directory.

Reported per case: p50 / p95 of recall without the embedding (``total - query_embedding -
rerank``), the ratio of p50 to the defaults' p50, and 1-client and ``--clients``-client q/s.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _clients import run_clients
from _corpus import CORPUS_VERSION, Queries, make_corpus, make_queries
from _plain import data_root
from _report import publish
from recall_latency import describe, ensure_bank, headline_ms, versions

# Session-level cases: (label, settings). The first is the defaults every ratio divides by.
SESSION_CASES: tuple[tuple[str, dict[str, str]], ...] = (
    ("defaults", {}),
    ("max_parallel_workers_per_gather=0", {"max_parallel_workers_per_gather": "0"}),
    ("jit=on (stock Postgres)", {"jit": "on"}),
    ("work_mem=1MB", {"work_mem": "1MB"}),
    ("work_mem=16MB", {"work_mem": "16MB"}),
    ("work_mem=64MB", {"work_mem": "64MB"}),
)
# Restart cases: shared_buffers values beside the defaults (None: the data directory's own).
SHARED_BUFFERS_CASES: tuple[str | None, ...] = (None, "128MB", "256MB")
SHOWN = ("shared_buffers", "work_mem", "jit", "max_parallel_workers_per_gather", "effective_cache_size")


def with_options(dsn: str, settings: Mapping[str, str]) -> str:
    """``dsn`` whose sessions start with ``settings`` (libpq ``options='-c name=value'``)."""
    import psycopg

    if not settings:
        return dsn
    options = " ".join(f"-c {name}={value}" for name, value in settings.items())
    return psycopg.conninfo.make_conninfo(dsn, options=options)


def show(dsn: str) -> dict[str, str]:
    """The server's current values of :data:`SHOWN` (as a new session sees them)."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return {name: str(conn.execute(f"SHOW {name}").fetchone()[0]) for name in SHOWN}  # type: ignore[index]


def timed_recalls(
    engine: Any, bank: str, queries: Queries, *, calls: int, clients: int, offset: int
) -> tuple[list[float], float]:
    """``calls`` recalls over ``clients`` threads; each one's headline ms, and queries/s."""

    def call(_c: int, i: int) -> float:
        result = engine.recall(
            queries.texts[(offset + i) % len(queries.texts)],
            bank=bank,
            query_timestamp=queries.query_time,
            reranker="none",
            trace=True,
        )
        return headline_ms(result.trace.timings_ms)

    ms, wall = run_clients(call, max(1, calls // clients), clients)
    return ms, len(ms) / wall


def interleaved(
    engines: Mapping[str, Any],
    bank: str,
    queries: Queries,
    *,
    rounds: int,
    calls: int,
    clients: int,
    warmup: int = 5,
    log: Callable[[str], None] = print,
) -> dict[str, dict[str, Any]]:
    """Every engine measured in each of ``rounds`` rounds (rotated order): 1-client latency and
    ``clients``-client throughput, after ``warmup`` untimed recalls per engine."""
    names = list(engines)
    ms: dict[str, list[float]] = {n: [] for n in names}
    qps1: dict[str, list[float]] = {n: [] for n in names}
    qpsn: dict[str, list[float]] = {n: [] for n in names}
    # Warm every engine's pool and the caches first: with 5 calls, the case that ran first
    # in round 1 met cold caches and its p95 set the whole comparison (2026-12-01 06:01 run).
    for name in names:
        timed_recalls(engines[name], bank, queries, calls=warmup, clients=1, offset=0)
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            values, q1 = timed_recalls(engines[name], bank, queries, calls=calls, clients=1, offset=r * calls)
            ms[name] += values
            qps1[name].append(q1)
            if clients > 1:
                _, qn = timed_recalls(
                    engines[name], bank, queries, calls=2 * calls, clients=clients, offset=r * calls
                )
                qpsn[name].append(qn)
        log(f"  round {r + 1}/{rounds} done ({time.strftime('%H:%M:%S')}, load {os.getloadavg()[0]:.2f})")
    return {
        name: {
            "latency_ms": describe(ms[name]),
            "qps_1": round(statistics.fmean(qps1[name]), 2),
            f"qps_{clients}": round(statistics.fmean(qpsn[name]), 2) if qpsn[name] else None,
        }
        for name in names
    }


def with_ratios(cases: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each case's p50, p95 and throughputs (``qps_*``) as ratios to the first case's (the
    defaults measured in the same run).

    >>> cases = {"defaults": {"latency_ms": {"p50": 10.0, "p95": 20.0}, "qps_8": 4.0},
    ...          "x": {"latency_ms": {"p50": 5.0, "p95": 30.0}, "qps_8": 6.0}}
    >>> {k: v for k, v in with_ratios(cases)["x"].items() if k.endswith("ratio")}
    {'p50_ratio': 0.5, 'p95_ratio': 1.5, 'qps_8_ratio': 1.5}
    """
    base = next(iter(cases.values()))
    for case in cases.values():
        for q in ("p50", "p95"):
            case[f"{q}_ratio"] = round(case["latency_ms"][q] / base["latency_ms"][q], 3)
        for key in [k for k in case if k.startswith("qps_") and not k.endswith("_ratio")]:
            if case[key] and base.get(key):
                case[f"{key}_ratio"] = round(case[key] / base[key], 3)
    return cases


def measure_session_cases(
    base: Any, bank: str, queries: Queries, args: argparse.Namespace
) -> dict[str, dict[str, Any]]:
    from shared_core import MemoryEngine

    engines = {
        label: base
        if not settings
        else MemoryEngine(
            with_options(base.dsn, settings),
            embedder=base.embedder,
            token_counter=base.token_counter,
            date_parser=base.date_parser,  # None: the default, loaded again
            config=base.config,
        )
        for label, settings in SESSION_CASES
    }
    try:
        cases = interleaved(
            engines,
            bank,
            queries,
            rounds=args.rounds,
            calls=args.calls,
            clients=args.clients,
            warmup=args.warmup,
        )
    finally:
        for engine in engines.values():
            if engine is not base:
                engine.close()
    for label, settings in SESSION_CASES:
        cases[label]["settings"] = settings
    return with_ratios(cases)


def _set_shared_buffers(dsn: str, value: str | None) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        if value is None:
            conn.execute("ALTER SYSTEM RESET shared_buffers")
        else:
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{value}'")


def measure_shared_buffers(
    open_engine: Callable[[], Any],
    engine: Any,
    banks: Sequence[str],
    queries: Queries,
    args: argparse.Namespace,
    log: Callable[[str], None] = print,
) -> tuple[Any, dict[str, dict[str, dict[str, Any]]]]:
    """Restart the server per :data:`SHARED_BUFFERS_CASES` value (interleaved over rounds) and
    measure every bank; returns the engine left open (on the defaults) and the cases per bank."""
    ms: dict[str, dict[str, list[float]]] = {b: {} for b in banks}
    shown: dict[str, str] = {}
    try:
        for r in range(args.rounds):
            values = list(SHARED_BUFFERS_CASES)
            order = values[r % len(values) :] + values[: r % len(values)]
            for value in order:
                _set_shared_buffers(engine.dsn, value)
                engine.close()
                engine = open_engine()
                label = f"shared_buffers={value}" if value else "defaults"
                shown[label] = show(engine.dsn)["shared_buffers"]
                if value is not None and shown[label] != value:
                    raise RuntimeError(
                        f"shared_buffers is {shown[label]}, not {value}, after the restart: "
                        "another process keeps the server running (use --no-restart)"
                    )
                for bank in banks:
                    timed_recalls(engine, bank, queries, calls=args.warmup, clients=1, offset=0)
                    values_ms, _ = timed_recalls(
                        engine, bank, queries, calls=args.calls, clients=1, offset=r * args.calls
                    )
                    ms[bank].setdefault(label, []).extend(values_ms)
            log(f"  shared_buffers round {r + 1}/{args.rounds} done (load {os.getloadavg()[0]:.2f})")
    finally:
        _set_shared_buffers(engine.dsn, None)
        engine.close()
        engine = open_engine()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for bank in banks:
        out[bank] = with_ratios(
            {
                label: {"latency_ms": describe(values), "shared_buffers": shown[label]}
                for label, values in ms[bank].items()
            }
        )
    return engine, out


def markdown(report: Mapping[str, Any]) -> str:
    clients = report["meta"]["clients"]
    lines = []
    for n, size in report["sizes"].items():
        lines.append(f"### {int(n):,} memories: session settings\n")
        lines.append(
            f"| setting | p50 ms | p95 ms | p50 / defaults | p95 / defaults | q/s 1 client "
            f"| q/s {clients} clients | {clients}-client q/s / defaults |"
        )
        lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
        for label, case in size["session"].items():
            lat = case["latency_ms"]
            lines.append(
                f"| {label} | {lat['p50']:.1f} | {lat['p95']:.1f} | {case['p50_ratio']:.2f} | "
                f"{case['p95_ratio']:.2f} | {case['qps_1']} | {case.get(f'qps_{clients}')} | "
                f"{case.get(f'qps_{clients}_ratio', float('nan')):.2f} |"
            )
        lines.append("")
        if size.get("shared_buffers"):
            lines.append(f"### {int(n):,} memories: shared_buffers (server restarted per case)\n")
            lines.append("| setting | shared_buffers | p50 ms | p95 ms | p50 / defaults | p95 / defaults |")
            lines.append("|---|---|---:|---:|---:|---:|")
            for label, case in size["shared_buffers"].items():
                lat = case["latency_ms"]
                lines.append(
                    f"| {label} | {case['shared_buffers']} | {lat['p50']:.1f} | {lat['p95']:.1f} | "
                    f"{case['p50_ratio']:.2f} | {case['p95_ratio']:.2f} |"
                )
            lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--calls", type=int, default=25, help="1-client recalls per case per round")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument(
        "--warmup", type=int, default=20, help="untimed recalls per case first (and after each restart)"
    )
    p.add_argument("--no-restart", action="store_true", help="skip the shared_buffers cases")
    p.add_argument("--dsn", default=None, help="Postgres DSN (no shared_buffers cases)")
    p.add_argument(
        "--data-dir",
        type=Path,
        default=os.environ.get("HINDSIGHT_BENCH_PGDATA") or None,
        help="embedded server data dir (default $HINDSIGHT_BENCH_PGDATA, else the bench-pgdata "
        "of recall_latency.py)",
    )
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--md", type=Path, default=None)
    args = p.parse_args(argv)

    from shared_core import EngineConfig, MemoryEngine

    config = EngineConfig(extract_entities=False, extract_dates=False)
    data_dir = args.data_dir or data_root("bench-pgdata")
    models: dict[str, Any] = {}

    def open_engine() -> Any:
        if args.dsn:
            return MemoryEngine(args.dsn, config=config, **models)
        return MemoryEngine(data_dir=data_dir, config=config, **models)

    engine = open_engine()
    models.update(embedder=engine.embedder, token_counter=engine.token_counter)
    if engine.date_parser is not None:
        models["date_parser"] = engine.date_parser
    started = dt.datetime.now(dt.UTC)
    report: dict[str, Any] = {
        "sizes": {},
        "meta": {
            "date": started.isoformat(timespec="seconds"),
            "command": "python " + shlex.join(["benchmarks/server_settings.py", *(argv or sys.argv[1:])]),
            "loadavg_start": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(),
            "clients": args.clients,
            "versions": versions(),
            "measure": "recall total - query_embedding - rerank, reranker none, budget mid",
        },
    }
    try:
        report["meta"]["defaults"] = show(engine.dsn)
        queries = make_queries()
        banks = []
        for n in sorted(args.sizes):
            bank = f"bench-latency-v{CORPUS_VERSION}-{n}"
            if engine.stats(bank).memories != n:
                ensure_bank(engine, make_corpus(n), bank)
            banks.append(bank)
            print(f"== {n:,} memories: session settings", flush=True)
            report["sizes"][str(n)] = {
                "bank": bank,
                "session": measure_session_cases(engine, bank, queries, args),
            }
        if not args.no_restart and not args.dsn:
            print("== shared_buffers (restarts)", flush=True)
            engine, by_bank = measure_shared_buffers(open_engine, engine, banks, queries, args)
            for n, bank in zip(sorted(args.sizes), banks, strict=True):
                report["sizes"][str(n)]["shared_buffers"] = by_bank[bank]
        report["meta"]["defaults_after"] = show(engine.dsn)
        report["meta"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        report["meta"]["seconds"] = round((dt.datetime.now(dt.UTC) - started).total_seconds())
    finally:
        engine.close()
    publish(report, markdown(report), out=args.out, md=args.md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
