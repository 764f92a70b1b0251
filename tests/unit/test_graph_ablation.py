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
