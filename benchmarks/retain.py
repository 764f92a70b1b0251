"""Retain throughput on LoCoMo turns: memories/s, peak RSS, database size per 1k memories.

    .venv/bin/python benchmarks/retain.py --sizes 1000 10000 --out docs/benchmarks/retain.json
    .venv/bin/python benchmarks/retain.py --quick                  # 1k, mode b only
    .venv/bin/python benchmarks/retain.py --document-mb 1 --out docs/benchmarks/retain_document.json
    .venv/bin/python benchmarks/retain.py --document-mb 0.25 --torch-threads 2 1 2 1   # torch threads A/B
    .venv/bin/python benchmarks/retain.py --document-mb 1 --document-processes 2   # retain_bulk, 2 workers
    .venv/bin/python benchmarks/retain.py --sizes 3000 --modes b-bulk b-bulk-2p b-precomputed

Beside ours, in the same run on the same server: the plain pgvector load of the same vectors
(``_plain.py``: COPY into a table with one HNSW index, created before the load and built after
it) and, after mode b's load, one-memory retains into the loaded bank beside one-row inserts.

Dataset: LoCoMo (Maharana et al., ACL 2024), CC BY-NC 4.0, read from
``/work/shared/data/locomo/locomo10.json`` (``--data`` / ``$LOCOMO_PATH``), never copied here;
absent, the benchmark skips with a message. Memories are the 5,882 turns in the LoCoMo
protocol's form (``<speaker> said, "<text>"``, ``mentioned_at`` = the session time), repeated
in order to reach 10k.

Modes, each in a fresh bank and a fresh worker process (so peak RSS is per mode):

* ``a-everything``: default ``EngineConfig``, the engine embeds (all-MiniLM-L6-v2) and extracts;
* ``b-precomputed``: vectors passed on each ``MemoryItem`` (cached all-MiniLM-L6-v2 vectors of
  the same texts), extraction on;
* ``c-no-extraction``: vectors passed, ``EngineConfig(extract_entities=False,
  extract_dates=False)``;
* ``b-bulk``: as (b), through ``engine.retain_bulk`` (one transaction, ``--batch`` items per
  batch, each batch's extraction overlapping the previous batch's writes) instead of one
  ``retain`` call per ``--batch`` memories;
* ``b-bulk-2p``: as ``b-bulk``, with spaCy spread over two worker processes
  (``SpacyEntityExtractor(n_process=2)`` passed as the engine's ``entity_extractor``): the
  extraction no longer shares the writing process's GIL, and uses a second core if one is free.

Each worker warms its models up (a 20-memory retain into a scratch bank) before timing, then
retains ``--batch`` memories per ``retain`` call. Database size: growth of
``pg_total_relation_size`` over the memory tables (with indexes and TOAST) during the run,
divided by thousands of memories, on a dedicated embedded server
(``~/.cache/hindsight-retrievers/bench-retain-pgdata``) emptied first. Breakdown of (a): the
embedder alone on the same texts; extraction = (b) - (c); the rest (preparation, links, SQL).

``--document-mb N``: one generated prose document of N MB (:func:`prose_document`: seeded,
deterministic English paragraphs about people, places, organisations and dates, nothing from
a dataset) retained as one item with a ``document_id``, default ``EngineConfig``, the engine
embedding its units; timed end to end with each stage of the CPU preparation timed on its own
(split into units, conversation context, embedding, dates + entities) and the rest (links and
SQL, one transaction) as the remainder. With ``--document-processes N`` the document goes
through ``retain_bulk(..., processes=N)`` instead (one batch: the same units and rows, the
extraction in N worker processes after the embedding).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _locomo import DEFAULT_DATA_PATH, locomo_missing  # noqa: E402
from _plain import data_root, describe, plain_insert_one, plain_load, plain_table  # noqa: E402
from _report import publish  # noqa: E402
from _timing import timed_calls  # noqa: E402

from shared_core.text import MONTH_NAMES  # noqa: E402

MODES = ("a-everything", "b-precomputed", "c-no-extraction", "b-bulk", "b-bulk-2p")
BREAKDOWN_MODES = MODES[:3]
TABLES = ("banks", "documents", "chunks", "memory_units", "entities", "unit_entities", "memory_links")
TARGET_B = 1000.0
#: Single-memory retains timed after the bulk load (mode b), and plain one-row inserts.
SINGLE_RETAINS = 30


def locomo_turns(path: Path, n: int) -> list[tuple[str, dt.datetime]]:
    """The first ``n`` LoCoMo turns (text, mentioned_at), cycling over the 5,882 turns."""
    from _locomo import load_locomo

    turns = [(t.text, t.mentioned_at) for conv in load_locomo(path) for t in conv.turns]
    return [turns[i % len(turns)] for i in range(n)]


def db_size(dsn: str) -> int:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relname = ANY(%s) AND c.relkind = 'r' AND c.relnamespace = "
            "current_schema()::regnamespace",
            (list(TABLES),),
        ).fetchone()
    return int(row[0] or 0)


def empty_database(dsn: str) -> None:
    """Drop every bank and compact the tables, so size growth is measured from zero."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM banks")
        for table in TABLES:
            conn.execute(f"VACUUM FULL {table}")


def peak_rss_mb() -> float:
    # ru_maxrss is in KiB on Linux: the peak resident set of this process (not the server's).
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --- one measurement, in its own process ------------------------------------------------------
def worker(mode: str, n: int, data: Path, dsn: str, batch: int) -> dict[str, Any]:
    from shared_core import EngineConfig, MemoryEngine
    from shared_core.types import MemoryItem

    turns = locomo_turns(data, n)
    vectors = None
    if mode != "a-everything":
        from _peers import EmbeddingCache

        cache = EmbeddingCache()
        cache.ensure(t for t, _ in turns)
        cache.save()
        vectors = [cache.get(t) for t, _ in turns]
    config = (
        EngineConfig(extract_entities=False, extract_dates=False)
        if mode == "c-no-extraction"
        else EngineConfig()
    )
    items = [
        MemoryItem(
            text=t, mentioned_at=when, metadata={"turn": i}, embedding=None if vectors is None else vectors[i]
        )
        for i, (t, when) in enumerate(turns)
    ]
    rss_before = peak_rss_mb()
    extractor = None
    if mode == "b-bulk-2p":
        from shared_core.extraction.entities import SpacyEntityExtractor

        extractor = SpacyEntityExtractor(n_process=2)
    with MemoryEngine(dsn, config=config, entity_extractor=extractor) as engine:
        # Warm-up: load every model the mode uses, outside the timing.
        warm = (
            items[:20]
            if mode != "a-everything"
            else [MemoryItem(text=t, mentioned_at=w) for t, w in turns[:20]]
        )
        engine.retain(warm, bank=f"retain-warmup-{mode}", progress=False)
        size_before = db_size(dsn)
        bank = f"retain-{mode}-{n}"
        started = time.perf_counter()
        if mode in ("b-bulk", "b-bulk-2p"):
            engine.retain_bulk(items, bank=bank, batch_size=batch, progress=False)
        else:
            for s in range(0, n, batch):
                engine.retain(items[s : s + batch], bank=bank, progress=False)
        seconds = time.perf_counter() - started
        size_after = db_size(dsn)
        stats = engine.stats(bank)
        single: list[float] = []
        if mode in ("b-precomputed", "b-bulk", "b-bulk-2p"):
            # An agent storing one chat turn into the loaded bank (its vector given).
            for i in range(SINGLE_RETAINS):
                item = items[(i * 97) % n]
                one = MemoryItem(text=item.text, mentioned_at=item.mentioned_at, embedding=item.embedding)
                t0 = time.perf_counter()
                engine.retain([one], bank=bank, progress=False)
                single.append((time.perf_counter() - t0) * 1e3)
        result: dict[str, Any] = {
            "mode": mode,
            "memories": n,
            "batch": batch,
            "seconds": round(seconds, 2),
            "per_second": round(n / seconds, 1),
            "peak_rss_mb": round(peak_rss_mb(), 0),
            "rss_before_mb": round(rss_before, 0),
            "db_bytes_per_1k": round((size_after - size_before) / (n / 1000)),
            "bank": {
                "memories": stats.memories,
                "entities": stats.entities,
                "links": dict(stats.links_by_type),
            },
        }
        if single:
            result["single_retain_ms"] = describe(single)
        if mode == "a-everything":
            # The embedder alone on the same texts (already warm), for the breakdown.
            t0 = time.perf_counter()
            engine.embedder.embed_documents([t for t, _ in turns])
            result["embedding_only_s"] = round(time.perf_counter() - t0, 2)
    return result


# --- one long document ----------------------------------------------------------------------
_FIRST = (
    "Amara",
    "Bruno",
    "Chen",
    "Dalia",
    "Emil",
    "Farah",
    "Goran",
    "Hana",
    "Ivo",
    "Jun",
    "Kofi",
    "Lena",
    "Mateo",
    "Nadia",
    "Oskar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tomas",
)
_LAST = (
    "Okafor",
    "Silva",
    "Wei",
    "Haddad",
    "Novak",
    "Rahman",
    "Petrov",
    "Sato",
    "Costa",
    "Lindqvist",
    "Mensah",
    "Fischer",
    "Moreau",
    "Kovacs",
    "Iyer",
    "Duarte",
    "Berg",
    "Tanaka",
)
_PLACES = (
    "Lisbon",
    "Nairobi",
    "Oslo",
    "Kyoto",
    "Valparaiso",
    "Tbilisi",
    "Montreal",
    "Hanoi",
    "Porto",
    "Accra",
    "Bergen",
    "Cusco",
    "Ljubljana",
    "Adelaide",
    "Tallinn",
    "Fez",
)
_ORGS = (
    "the Harbor Institute",
    "Northwind Labs",
    "the Civic Archive",
    "Bluefield Press",
    "the River Trust",
    "Kestrel Robotics",
    "the Alder Foundation",
    "Meridian Health",
)
_TEMPLATES = (
    "In {month} {year}, {name} moved to {place} to work for {org}.",
    "{name} met {other} at a conference in {place}, where they argued about {topic}.",
    "The project on {topic} at {org} took {n} months and ended in {month} {year}.",
    "{name} wrote that the {adj} results on {topic} surprised everyone, {other} included.",
    "Later that year {name} returned to {place}, tired but {adj} about the work ahead.",
    "By {month} {year} the team in {place} had grown to {n} people and a second office.",
    "{other} remembered the {adj} winter when {name} first described {topic} to {org}.",
    "Nobody at {org} expected the {adj} reaction when the report on {topic} came out.",
    "{name} and {other} spent {n} weeks walking through {place}, taking notes on {topic}.",
    "The minutes of {org} from {month} {year} mention {name} only once, on {topic}.",
)
_TOPICS = (
    "river sediment",
    "urban heat",
    "tidal energy",
    "soil microbes",
    "rail freight",
    "coastal erosion",
    "bird migration",
    "public libraries",
    "glacier melt",
    "wind turbines",
    "street lighting",
    "ocean acidity",
    "school meals",
    "bridge fatigue",
    "seed banks",
)
_ADJ = ("quiet", "surprising", "careful", "uneven", "promising", "stubborn", "modest", "bold")


def prose_document(n_bytes: int, seed: int = 0) -> str:
    """About ``n_bytes`` of deterministic English prose: paragraphs of 4-8 sentences drawn
    from templates filled with names, places, organisations, months, years and numbers.

    >>> doc = prose_document(2_000)
    >>> 1_900 <= len(doc.encode()) <= 2_600 and doc == prose_document(2_000)
    True
    """
    import random

    rng = random.Random(seed)
    paragraphs: list[str] = []
    size = 0
    while size < n_bytes:
        sentences = []
        for _ in range(rng.randint(4, 8)):
            name = f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"
            other = rng.choice(_FIRST)
            sentences.append(
                rng.choice(_TEMPLATES).format(
                    name=name,
                    other=other,
                    place=rng.choice(_PLACES),
                    org=rng.choice(_ORGS),
                    month=rng.choice(MONTH_NAMES),
                    year=rng.randint(1990, 2025),
                    topic=rng.choice(_TOPICS),
                    adj=rng.choice(_ADJ),
                    n=rng.randint(2, 40),
                )
            )
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        size += len(paragraph.encode()) + 2
    return "\n\n".join(paragraphs)


def document_worker(
    megabytes: float, dsn: str, *, torch_threads: int | None = None, processes: int = 0
) -> dict[str, Any]:
    """Retain one generated document, the engine embedding it; time each CPU stage.

    ``torch_threads`` sets torch's intra-op threads for the process (``torch.set_num_threads``;
    ``None`` keeps torch's default, one per core). ``processes`` > 0 retains it with
    ``retain_bulk(..., processes=processes)`` instead of ``retain``: the same rows, the entity
    and date extraction spread over that many worker processes (their start-up included)."""
    import torch

    import shared_core.retain.flow as flow
    from shared_core import MemoryEngine
    from shared_core.types import MemoryItem

    if torch_threads is not None:
        torch.set_num_threads(torch_threads)
    load_start = [round(x, 2) for x in os.getloadavg()]

    text = prose_document(int(megabytes * 1_000_000))
    stages = {
        (flow, "prepare_units"): "split_s",
        (flow, "index_contexts"): "context_s",
        (flow, "merge_vectors"): "embedding_s",
        (flow, "extract"): "extraction_s",
        (flow, "prepare_retain"): "prepare_total_s",
    }
    with MemoryEngine(dsn) as engine, timed_calls(stages) as timings:
        engine.retain(
            [MemoryItem(text="Warm-up: Amara Okafor moved to Lisbon in May 2020.")],
            bank="retain-warmup-document",
            progress=False,
        )
        timings.clear()
        started = time.perf_counter()
        if processes:
            ids = engine.retain_bulk(
                [MemoryItem(text=text, document_id="doc-1")],
                bank="retain-document",
                progress=False,
                processes=processes,
            )
        else:
            ids = engine.retain(
                [MemoryItem(text=text)], bank="retain-document", document_id="doc-1", progress=False
            )
        seconds = time.perf_counter() - started
        stats = engine.stats("retain-document")
    seconds_of = {k: sum(v) / 1e3 for k, v in timings.items()}
    prepare = seconds_of.pop("prepare_total_s", 0.0)
    return {
        "mode": "document",
        "torch_threads": torch.get_num_threads(),
        "extraction_processes": processes,
        "loadavg": {"start": load_start, "end": [round(x, 2) for x in os.getloadavg()]},
        "bytes": len(text.encode()),
        "units": len(ids),
        "seconds": round(seconds, 2),
        "stages_s": {k: round(v, 2) for k, v in seconds_of.items()}
        | {"links_and_sql_s": round(seconds - prepare, 2)},
        "bank": {"memories": stats.memories, "entities": stats.entities, "links": dict(stats.links_by_type)},
        "peak_rss_mb": round(peak_rss_mb(), 0),
    }


def run_worker(
    mode: str, n: int, args: argparse.Namespace, dsn: str, torch_threads: int | None = None
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        mode,
        "--n",
        str(n),
        "--dsn",
        dsn,
        "--data",
        str(args.data),
        "--batch",
        str(args.batch),
        *(["--document-mb", str(args.document_mb)] if args.document_mb is not None else []),
        *(["--torch-threads", str(torch_threads)] if torch_threads is not None else []),
        *(["--document-processes", str(args.document_processes)] if args.document_processes else []),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-4000:])
        return {"mode": mode, "memories": n, "error": proc.stderr.strip().splitlines()[-1:]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def measure_plain(dsn: str, data: Path, n: int, batch: int) -> dict[str, Any]:
    """The plain pgvector loads of the same vectors (index before / after), and one-row inserts
    into the loaded table, on the same server and in the same run as ours."""
    import numpy as np
    from _peers import EmbeddingCache

    cache = EmbeddingCache()
    turns = locomo_turns(data, n)
    vectors = np.asarray([cache.get(t) for t, _ in turns], dtype=np.float32)
    out: dict[str, Any] = {}
    with plain_table(dsn, vectors.shape[1]) as table:
        out["index_after"] = plain_load(dsn, table, vectors, index_first=False, batch=batch)
    with plain_table(dsn, vectors.shape[1]) as table:
        out["index_first"] = plain_load(dsn, table, vectors, index_first=True, batch=batch)
        picks = vectors[[(i * 97) % n for i in range(SINGLE_RETAINS)]]
        out["single_insert_ms"] = describe(plain_insert_one(dsn, table, picks, start_id=n))
    return out


def breakdown(a: dict[str, Any], b: dict[str, Any], c: dict[str, Any]) -> dict[str, float]:
    """Shares of (a)'s time: embedding (measured alone), extraction ((b) - (c)), the rest."""
    total = a["seconds"]
    embedding = a.get("embedding_only_s", 0.0)
    extraction = max(0.0, b["seconds"] - c["seconds"])
    rest = max(0.0, total - embedding - extraction)
    return {
        "total_s": total,
        "embedding_s": embedding,
        "extraction_s": round(extraction, 2),
        "prepare_links_db_s": round(rest, 2),
        "embedding_share": round(embedding / total, 3),
        "extraction_share": round(extraction / total, 3),
        "prepare_links_db_share": round(rest / total, 3),
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| mode | memories | seconds | memories/s | peak RSS MB | DB bytes / 1k memories "
        "| entities | links |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in report["runs"]:
        if "error" in r:
            lines.append(f"| {r['mode']} | {r['memories']} | error: {r['error']} | | | | | |")
            continue
        lines.append(
            f"| {r['mode']} | {r['memories']:,} | {r['seconds']} | "
            f"{r['per_second']:,.0f} | {r['peak_rss_mb']:.0f} | "
            f"{r['db_bytes_per_1k']:,} | {r['bank']['entities']} | "
            f"{r['bank']['links']} |"
        )
    for plain in report.get("plain", {}).values():
        for key in ("index_first", "index_after"):
            r = plain[key]
            lines.append(
                f"| plain pgvector COPY, HNSW index {r['index']} | {r['rows']:,} | {r['seconds']} | "
                f"{r['per_second']:,.0f} | | | | |"
            )
    for r in report["runs"]:
        plain = report.get("plain", {}).get(str(r.get("memories")))
        if plain and "per_second" in r:
            lines.append("")
            lines.append(
                f"{r['mode']} at {r['memories']:,}: plain COPY (index first) / ours = "
                f"{plain['index_first']['per_second'] / r['per_second']:.1f}x, "
                f"plain COPY (index after) / ours = "
                f"{plain['index_after']['per_second'] / r['per_second']:.1f}x"
            )
        if plain and "single_retain_ms" in r:
            lines.append(
                f"one memory into the {r['memories']:,} bank: ours p50 {r['single_retain_ms']['p50']} ms, "
                f"plain one-row INSERT p50 {plain['single_insert_ms']['p50']} ms"
            )
    for doc in report.get("documents") or ([report["document"]] if report.get("document") else []):
        if "seconds" not in doc:
            continue
        lines.append("")
        lines.append(
            f"One {doc['bytes']:,}-byte document (torch threads {doc.get('torch_threads')}, "
            f"extraction processes {doc.get('extraction_processes', 0)}): "
            f"{doc['units']:,} units in {doc['seconds']} s; "
            + ", ".join(f"{k} {v}" for k, v in doc["stages_s"].items())
            + (
                f"; load {doc['loadavg']['start'][0]} -> {doc['loadavg']['end'][0]}"
                if "loadavg" in doc
                else ""
            )
        )
    for n, bd in report.get("breakdown", {}).items():
        lines.append("")
        lines.append(f"Breakdown of (a) at {int(n):,}: " + ", ".join(f"{k} {v}" for k, v in bd.items()))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    p.add_argument("--modes", nargs="+", default=list(MODES[:4]), choices=MODES)
    p.add_argument("--quick", action="store_true", help="1k memories, mode b only (part of `make bench`)")
    p.add_argument("--document-mb", type=float, default=None, help="retain one generated document of N MB")
    p.add_argument(
        "--torch-threads",
        type=int,
        nargs="+",
        default=None,
        help="document runs, one per value, in this order, each with torch's intra-op threads set "
        "to it (default: one run with torch's default)",
    )
    p.add_argument(
        "--document-processes",
        type=int,
        default=0,
        help="document runs: retain it with retain_bulk and this many extraction worker "
        "processes (default 0: retain, extraction in the calling process)",
    )
    p.add_argument("--batch", type=int, default=1000, help="memories per retain call")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--dsn", default=None)
    p.add_argument("--data-dir", type=Path, default=None)
    p.add_argument("--worker", choices=[*MODES, "document"], help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if locomo_missing(args.data):
        return 0
    if args.worker == "document":
        threads = args.torch_threads[0] if args.torch_threads else None
        print(
            json.dumps(
                document_worker(
                    args.document_mb, args.dsn, torch_threads=threads, processes=args.document_processes
                )
            )
        )
        return 0
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.data, args.dsn, args.batch)))
        return 0
    if args.quick:
        args.sizes = [1000]
        args.modes = ["b-precomputed"]

    from shared_core import MemoryEngine

    # The parent holds the server open; workers connect to it by DSN.
    holder = (
        MemoryEngine(args.dsn)
        if args.dsn
        else MemoryEngine(data_dir=args.data_dir or data_root("bench-retain-pgdata"))
    )
    report: dict[str, Any] = {
        "runs": [],
        "plain": {},
        "breakdown": {},
        "meta": {
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "command": "python " + shlex.join(["benchmarks/retain.py", *(argv or sys.argv[1:])]),
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "loadavg_start": [round(x, 2) for x in os.getloadavg()],
            },
            "batch": args.batch,
            "target_b_per_second": TARGET_B,
        },
    }
    try:
        holder.stats("retain-probe")  # bootstraps the schema
        if args.document_mb is not None:
            args.sizes = []
            report["documents"] = []
            for threads in args.torch_threads or [None]:
                empty_database(holder.dsn)
                print(f"== one {args.document_mb} MB document (torch threads {threads})", flush=True)
                result = run_worker("document", 0, args, holder.dsn, threads)
                print(f"   {result}", flush=True)
                report["documents"].append(result)
            report["document"] = report["documents"][0]
        for n in args.sizes:
            by_mode = {}
            for mode in args.modes:
                empty_database(holder.dsn)
                print(f"== {mode} x {n:,}", flush=True)
                result = run_worker(mode, n, args, holder.dsn)
                print(f"   {result}", flush=True)
                report["runs"].append(result)
                by_mode[mode] = result
            empty_database(holder.dsn)
            report["plain"][str(n)] = measure_plain(holder.dsn, args.data, n, args.batch)
            print(f"   plain: {report['plain'][str(n)]}", flush=True)
            if all(m in by_mode and "error" not in by_mode[m] for m in BREAKDOWN_MODES):
                report["breakdown"][str(n)] = breakdown(*(by_mode[m] for m in BREAKDOWN_MODES))
        empty_database(holder.dsn)
        report["meta"]["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        holder.close()
    publish(report, markdown(report), out=args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
