"""Reciprocal rank fusion: arithmetic, merging of arm fields, duplicates and tie-breaks."""

from __future__ import annotations

import math

import pytest

from shared_core.recall.fusion import ArmHit, FusedCandidate, reciprocal_rank_fusion
from shared_core.types import ArmName


def _hits(*ids: str) -> list[ArmHit]:
    # scores decrease with rank so they look like real arm output
    return [ArmHit(id=i, score=1.0 - n / 10) for n, i in enumerate(ids)]


def test_rrf_sums_reciprocal_ranks_over_arms() -> None:
    fused = reciprocal_rank_fusion({"semantic": _hits("a", "b"), "keyword": _hits("x", "y", "a")})
    by_id = {c.id: c for c in fused}
    assert by_id["a"].rrf == pytest.approx(1 / 61 + 1 / 63)
    assert by_id["b"].rrf == pytest.approx(1 / 62)
    assert by_id["x"].rrf == pytest.approx(1 / 61)
    assert by_id["y"].rrf == pytest.approx(1 / 62)
    assert dict(by_id["a"].ranks) == {"semantic": 1, "keyword": 3}
    assert dict(by_id["a"].arm_scores) == {"semantic": 1.0, "keyword": pytest.approx(0.8)}
    assert fused[0].id == "a"


def test_custom_k() -> None:
    fused = reciprocal_rank_fusion({"semantic": _hits("a")}, k=10)
    assert fused[0].rrf == pytest.approx(1 / 11)


def test_multi_arm_candidate_keeps_temporal_proximity() -> None:
    # Hindsight keeps the first (semantic) copy and loses the temporal arm's proximity.
    fused = reciprocal_rank_fusion(
        {
            "semantic": [ArmHit(id="a", score=0.9)],
            "keyword": [ArmHit(id="a", score=3.2)],
            "temporal": [
                ArmHit(id="b", score=0.5, temporal_proximity=0.4),
                ArmHit(id="a", score=0.4, temporal_proximity=0.8),
            ],
        }
    )
    a = next(c for c in fused if c.id == "a")
    assert a.temporal_proximity == 0.8
    assert dict(a.ranks) == {"semantic": 1, "keyword": 1, "temporal": 2}
    assert dict(a.arm_scores) == {"semantic": 0.9, "keyword": 3.2, "temporal": 0.4}
    assert a.rrf == pytest.approx(2 / 61 + 1 / 62)
    b = next(c for c in fused if c.id == "b")
    assert b.temporal_proximity == 0.4


def test_temporal_proximity_ignored_from_non_temporal_arms() -> None:
    hit = ArmHit(id="a", score=0.9, temporal_proximity=0.7)
    fused = reciprocal_rank_fusion({"semantic": [hit]})
    assert fused[0].temporal_proximity is None


def test_duplicate_inside_one_arm_counts_once_at_best_rank() -> None:
    fused = reciprocal_rank_fusion(
        {
            "semantic": [
                ArmHit(id="a", score=0.9),
                ArmHit(id="b", score=0.8),
                ArmHit(id="a", score=0.7),
            ]
        }
    )
    by_id = {c.id: c for c in fused}
    assert by_id["a"].rrf == pytest.approx(1 / 61)
    assert by_id["a"].ranks["semantic"] == 1
    assert by_id["a"].arm_scores["semantic"] == 0.9
    # the duplicate does not shift later ranks: b stays at rank 2 as listed
    assert by_id["b"].ranks["semantic"] == 2


def test_empty_arms_are_skipped_and_empty_input_gives_empty_output() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"semantic": [], "temporal": []}) == []
    fused = reciprocal_rank_fusion({"semantic": _hits("a"), "temporal": []})
    assert [c.id for c in fused] == ["a"]
    assert dict(fused[0].ranks) == {"semantic": 1}


def test_tie_break_rrf_then_best_rank_then_id() -> None:
    # a: ranks 1+3 → 1/61 + 1/63 = 0.032266 beats c: ranks 2+2 → 2/62 = 0.032258;
    # d (graph 3) and e (semantic 3) tie on rrf 1/63 and best rank 3 → id order
    fused = reciprocal_rank_fusion(
        {
            "semantic": _hits("a", "c", "e"),
            "keyword": _hits("z", "c", "a"),
            "graph": _hits("y", "x", "d"),
        }
    )
    order = [c.id for c in fused]
    assert 1 / 61 + 1 / 63 > 2 / 62
    assert order.index("a") < order.index("c")
    assert order.index("d") < order.index("e")
    # z and y both have rrf 1/61 with best rank 1: id order, after a and c
    assert order[:4] == ["a", "c", "y", "z"]


def test_tie_on_rrf_prefers_better_best_rank() -> None:
    # an exact tie with k=1: p ranks (1, 5) → 1/2 + 1/6 = 2/3; q ranks (2, 2) → 1/3 + 1/3 = 2/3
    fused = reciprocal_rank_fusion(
        {
            "semantic": _hits("p", "q"),
            "keyword": _hits("m", "q", "n", "o", "p"),
        },
        k=1,
    )
    by_id = {c.id: c for c in fused}
    assert math.isclose(by_id["p"].rrf, by_id["q"].rrf)
    order = [c.id for c in fused]
    assert order.index("p") < order.index("q")


def test_deterministic_regardless_of_arm_mapping_order() -> None:
    arms1: dict[ArmName, list[ArmHit]] = {"semantic": _hits("a", "b"), "keyword": _hits("b", "a")}
    arms2: dict[ArmName, list[ArmHit]] = {"keyword": _hits("b", "a"), "semantic": _hits("a", "b")}
    assert reciprocal_rank_fusion(arms1) == reciprocal_rank_fusion(arms2)


def test_results_are_frozen() -> None:
    c = reciprocal_rank_fusion({"semantic": _hits("a")})[0]
    assert isinstance(c, FusedCandidate)
    with pytest.raises(AttributeError):
        c.rrf = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.ranks["keyword"] = 1  # type: ignore[index]


def test_unknown_arm_name_rejected() -> None:
    with pytest.raises(ValueError, match="arm"):
        reciprocal_rank_fusion({"vector": _hits("a")})  # type: ignore[dict-item]
