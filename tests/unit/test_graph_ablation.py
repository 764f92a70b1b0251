"""The graph ablation's trace mode (benchmarks/graph_ablation.py): where gold evidence sits."""

from __future__ import annotations

import doctest
import sys
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import graph_ablation  # noqa: E402


def _block(candidates: list[dict[str, Any]], category: int = 1) -> dict[str, Any]:
    return {
        "memories": {"a": {"dia_id": "D1:1"}, "b": {"dia_id": "D2:4"}, "c": {"dia_id": "D3:3"}},
        "questions": [{"category": category, "evidence": ["D1:1", "D2:4"], "candidates": candidates}],
    }


def test_counts_gold_by_where_it_was_found() -> None:
    block = _block(
        [
            {"id": "c", "position": 0, "ranks": {"semantic": 1, "graph": 1}},  # not gold
            {"id": "a", "position": 3, "ranks": {"keyword": 2, "graph": 12}},
            {"id": "b", "position": 40, "ranks": {"graph": 5}},
        ]
    )
    assert graph_ablation.evidence_coverage([block], {1}, 10) == {
        "evidence": 2,
        "candidates": 2,
        "fused_top_k": 1,
        "graph": 2,
        "graph_top_k": 1,
        "graph_only": 1,
    }


def test_other_categories_are_skipped() -> None:
    block = _block([{"id": "a", "position": 0, "ranks": {"graph": 1}}], category=2)
    assert graph_ablation.evidence_coverage([block], {1}, 10)["evidence"] == 0


def test_doctests() -> None:
    assert doctest.testmod(graph_ablation).failed == 0


def _trace_block() -> dict[str, Any]:
    """One question over three memories as reranker_data.py stores it (no dates, no window)."""
    memory = {"occurred_start": None, "occurred_end": None, "mentioned_at": None, "date_grain": None}
    texts = {"a": "Ravi works at Novabank.", "b": "Novabank is in Lisbon.", "c": "The weather was cold."}
    return {
        "dataset": "locomo",
        "index": 0,
        "memories": {
            k: {"dia_id": f"D1:{i + 1}", "text": t, **memory} for i, (k, t) in enumerate(texts.items())
        },
        "questions": [
            {
                "question": "Where does Ravi's employer sit?",
                "category": 1,
                "window": None,
                "evidence": ["D1:1", "D1:2"],
                "passthrough": ["a", "b", "c"],
                "candidates": [
                    {
                        "id": "a",
                        "position": 0,
                        "rrf": 0.05,
                        "ranks": {"semantic": 1, "keyword": 1},
                        "scores": {"semantic": 0.6, "keyword": 3.0},
                        "cosine": 0.6,
                    },
                    {
                        "id": "b",
                        "position": 1,
                        "rrf": 0.03,
                        "ranks": {"graph": 1},
                        "scores": {"graph": 0.9},
                        "cosine": 0.3,
                    },
                    {
                        "id": "c",
                        "position": 2,
                        "rrf": 0.02,
                        "ranks": {"semantic": 2, "graph": 2},
                        "scores": {"semantic": 0.1, "graph": 0.2},
                        "cosine": 0.1,
                    },
                ],
            }
        ],
    }


def test_without_the_graph_arm_its_ranks_and_its_only_finds_are_gone() -> None:
    import train_reranker as T

    from shared_core.config import DEFAULT_ARM_WEIGHTS, DEFAULT_RRF_K

    (q,) = T.questions_of(_trace_block())
    blind = graph_ablation.without_graph_arm(q)
    # "b" only the graph arm found: dropped; "c" keeps its semantic rank, RRF recomputed
    assert blind.dia_ids == ("D1:1", "D1:3")
    assert [dict(s.ranks) for s in blind.signals] == [{"semantic": 1, "keyword": 1}, {"semantic": 2}]
    assert blind.signals[1].rrf == DEFAULT_ARM_WEIGHTS["semantic"] / (DEFAULT_RRF_K + 2)
    assert [s.position for s in blind.signals] == [0, 1]
    assert "graph" not in blind.signals[1].arm_scores
    assert blind.labels.tolist() == [1.0, 0.0] and blind.x.shape[0] == 2
