"""Training and evaluation data for the learned reranker: one row per fused candidate.

For every question of a conversation (LoCoMo, or a generated set of the same shape), our recall
runs with ``trace=True`` and the passthrough reranker; each candidate of the fused list (up to
``rerank_max_candidates``) is written with what the pipeline knows about it (its rank and raw
score in every arm, RRF, its position, the cosine with the query, its text and dates, hydrated
from the database) and its label (is its ``dia_id`` in the question's evidence?). The order
recall returned (passthrough + boosts) is kept beside it, so the training script compares
against it on exactly the same candidates.

    .venv/bin/python benchmarks/reranker_data.py --conversations all       # LoCoMo, ~6 min
    .venv/bin/python benchmarks/reranker_data.py --dataset dated            # own paragraphs

One gzip JSON file per conversation in ``--data-dir`` (default
``benchmarks/.cache/reranker-data``, git-ignored); a conversation whose file exists is skipped
unless ``--force``. Embeddings come from the shared :class:`EmbeddingCache`, so nothing is
embedded twice. LoCoMo (CC BY-NC 4.0) is evaluation data: these files stay out of the package.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
import psycopg
from _locomo import DEFAULT_DATA_PATH, Conversation, load_locomo, locomo_missing, parse_selection
from _peers import SEARCH_K, EmbeddingCache
from locomo import OursSystem, ours
from pgvector.psycopg import register_vector
from psycopg.rows import dict_row

from shared_core.recall.hydrate import DETAILS, HYDRATE

DEFAULT_DATA_DIR = Path(__file__).resolve().parent / ".cache" / "reranker-data"

__all__ = ["DEFAULT_DATA_DIR", "data_file", "extract_conversation", "load_rows"]


def data_file(data_dir: Path, dataset: str, index: int) -> Path:
    return data_dir / f"{dataset}-{index:02d}.json.gz"


def _iso(value: dt.datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


_STORED_VECTORS = """
SELECT id::text AS id, embedding FROM memory_units WHERE bank_id = %(bank)s AND id = ANY(%(ids)s::uuid[])"""


def _stored_vectors(dsn: str, bank: str, ids: Sequence[str]) -> dict[str, np.ndarray[Any, Any]]:
    """The memories' stored vectors, unit length: what recall's cosine is computed with (with
    conversation context a memory's vector leans towards its predecessor's, so it is not the
    embedding of its text alone)."""
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        register_vector(conn)
        rows = conn.execute(_STORED_VECTORS, {"bank": bank, "ids": list(ids)}).fetchall()
    out = {}
    for r in rows:
        v = np.asarray(r["embedding"], dtype=np.float64)
        out[r["id"]] = v / max(float(np.linalg.norm(v)), 1e-12)
    return out


def _hydrate(dsn: str, bank: str, ids: Sequence[str], dimension: int) -> dict[str, dict[str, Any]]:
    """Every retained memory of the bank, by id (text, dates, entities, dia_id)."""
    probe = np.zeros(dimension, dtype=np.float32)
    probe[0] = 1.0  # HYDRATE also computes a cosine with the query; unused here
    with psycopg.connect(dsn, row_factory=dict_row) as conn:
        register_vector(conn)
        rows = conn.execute(HYDRATE, {"bank": bank, "ids": list(ids), "qvec": probe}).fetchall()
        details = {d["id"]: d for d in conn.execute(DETAILS, {"bank": bank, "ids": list(ids)}).fetchall()}
    rows = [{**r, **details[r["id"]]} for r in rows if r["id"] in details]
    return {
        r["id"]: {
            "dia_id": (r["metadata"] or {}).get("dia_id"),
            "text": r["text"],
            # who says it when the text does not (the learned reranker's speaker_named)
            "context": r["context"],
            "occurred_start": _iso(r["occurred_start"]),
            "occurred_end": _iso(r["occurred_end"]),
            "mentioned_at": _iso(r["mentioned_at"]),
            "date_grain": r["date_grain"],
            "proof_count": r["proof_count"],
            "entities": list(r["entities"]),
            # the second graph round's neighbours are read within a document, in id order
            "document_id": r["document_id"],
        }
        for r in rows
    }


def extract_conversation(
    system: OursSystem, conv: Conversation, cache: EmbeddingCache, dataset: str
) -> dict[str, Any]:
    """Retain ``conv`` in a fresh bank, recall every question with a trace, return the rows."""
    system.index(conv.turns, query_time=conv.query_time)
    assert system.bank is not None and system.query_time is not None
    memories = _hydrate(system.engine.dsn, system.bank, system._retained[system.bank], cache.dimension)
    text_vec = {mid: np.asarray(cache.get(m["text"]), dtype=np.float32) for mid, m in memories.items()}
    stored_vec = _stored_vectors(system.engine.dsn, system.bank, list(memories))
    questions = []
    for q in conv.questions:
        result = system.engine.recall(
            q.question,
            bank=system.bank,
            query_timestamp=system.query_time,
            budget="mid",
            max_tokens=16384,
            trace=True,
            reranker="none",
        )
        trace = result.trace
        assert trace is not None
        qvec = np.asarray(cache.get(q.question), dtype=np.float32)
        arm_rank: dict[str, dict[str, tuple[int, float]]] = {}
        for arm, hits in trace.arms.items():
            for rank, (mid, score) in enumerate(hits, start=1):
                arm_rank.setdefault(mid, {}).setdefault(arm, (rank, float(score)))
        candidates = []
        for position, (mid, rrf) in enumerate(trace.fusion):
            found = arm_rank.get(mid, {})
            candidates.append(
                {
                    "id": mid,
                    "position": position,
                    "rrf": rrf,
                    "ranks": {a: r for a, (r, _) in found.items()},
                    "scores": {a: s for a, (_, s) in found.items()},
                    "cosine": float(qvec @ text_vec[mid]),
                    # what recall's hydrate computes (the learned reranker's cosine at run time)
                    "similarity": float(qvec.astype(np.float64) @ stored_vec[mid])
                    / max(float(np.linalg.norm(qvec)), 1e-12),
                }
            )
        window = trace.time_window
        questions.append(
            {
                "question": q.question,
                "category": q.category,
                "evidence": list(q.evidence),
                "window": None
                if window is None
                else [window.start.isoformat(), window.end.isoformat(), window.grain],
                "candidates": candidates,
                "passthrough": [m.id for m in result.memories[:SEARCH_K]],
            }
        )
    return {
        "dataset": dataset,
        "index": conv.index,
        "sample_id": conv.sample_id,
        "query_time": conv.query_time.isoformat(),
        "memories": memories,
        "questions": questions,
        # popped by main() into a .npz beside the JSON (feature experiments)
        "_vectors": stored_vec,
    }


def load_rows(data_dir: Path, dataset: str, indices: Sequence[int]) -> list[dict[str, Any]]:
    """The stored conversations (missing ones raise FileNotFoundError, naming the command)."""
    out = []
    for i in indices:
        path = data_file(data_dir, dataset, i)
        if not path.exists():
            raise FileNotFoundError(
                f"{path} is missing: run benchmarks/reranker_data.py --dataset {dataset} first"
            )
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            out.append(json.load(fh))
    return out


def _conversations(dataset: str, selection: str, data: Path) -> list[Conversation]:
    if dataset == "locomo":
        convs = load_locomo(data)
    else:
        from dated_paragraphs import build_dataset

        convs = build_dataset(dataset)
    return [convs[i] for i in parse_selection(selection, len(convs))]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument(
        "--dataset", default="locomo", help="locomo, or a generated set of benchmarks/dated_paragraphs.py"
    )
    p.add_argument("--conversations", default="all", help="'all', '0-4', '0,3,5-9'")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH, help="LoCoMo JSON")
    p.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR)
    p.add_argument("--cache-dir", default="default", help="embedding cache dir")
    p.add_argument("--force", action="store_true", help="re-extract existing files")
    args = p.parse_args(argv)
    if args.dataset == "locomo" and locomo_missing(args.data):
        return 0
    warnings.filterwarnings("ignore")
    convs = _conversations(args.dataset, args.conversations, args.data)
    todo = [c for c in convs if args.force or not data_file(args.data_dir, args.dataset, c.index).exists()]
    if not todo:
        print("all requested conversations are extracted already", file=sys.stderr)
        return 0
    cache = EmbeddingCache(cache_dir=args.cache_dir)
    cache.ensure([t.text for c in todo for t in c.turns] + [q.question for c in todo for q in c.questions])
    cache.save()
    system = ours("default", cache)
    try:
        for conv in todo:
            t0 = time.perf_counter()
            block = extract_conversation(system, conv, cache, args.dataset)
            path = data_file(args.data_dir, args.dataset, conv.index)
            path.parent.mkdir(parents=True, exist_ok=True)
            vectors = block.pop("_vectors")
            np.savez_compressed(
                path.with_name(path.name.replace(".json.gz", ".vectors.npz")),
                ids=np.asarray(list(vectors)),
                vectors=np.stack(list(vectors.values())).astype(np.float32),
            )
            # written whole or not at all: an interrupted run leaves no truncated file that
            # the next run would skip as extracted
            partial = path.with_name(path.name + ".partial")
            with gzip.open(partial, "wt", encoding="utf-8") as fh:
                json.dump(block, fh)
            partial.replace(path)
            n_rows = sum(len(q["candidates"]) for q in block["questions"])
            print(
                f"{args.dataset} {conv.index}: {len(block['questions'])} questions, "
                f"{n_rows} rows in {time.perf_counter() - t0:.0f}s -> {path}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        system.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
