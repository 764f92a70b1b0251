"""Fusion against the straightforward formulation it replaced (one entry per document, every
sum rounded for the sort): the same candidates, sums, ranks, scores and order, bit for bit,
including duplicates inside an arm, ties, sums equal once rounded and cut lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core.recall.fusion import ArmHit, FusedCandidate, reciprocal_rank_fusion
from shared_core.types import ARM_NAMES, ArmName


def _reference(
    arms: Mapping[ArmName, Sequence[ArmHit]],
    *,
    k: int = 60,
    weights: Mapping[ArmName, float] | None = None,
    limit: int | None = None,
) -> list[FusedCandidate]:
    """reciprocal_rank_fusion as written before session 18 (the specification)."""
    fused: dict[str, list[Any]] = {}
    proximity: dict[str, float | None] = {}
    for arm in ARM_NAMES:
        hits = arms.get(arm)
        if not hits:
            continue
        weight = (weights or {}).get(arm, 1.0)
        temporal = arm == "temporal"
        for position, hit in enumerate(hits, start=1):
            doc = hit.id
            entry = fused.get(doc)
            if entry is None:
                fused[doc] = [weight / (k + position), position, {arm: position}, {arm: hit.score}]
            elif arm in entry[2]:
                continue
            else:
                entry[0] += weight / (k + position)
                entry[2][arm] = position
                entry[3][arm] = hit.score
                if position < entry[1]:
                    entry[1] = position
            if temporal:
                proximity[doc] = hit.temporal_proximity
    order = sorted(fused.items(), key=lambda item: (-round(item[1][0], 12), item[1][1], item[0]))
    if limit is not None:
        order = order[:limit]
    return [
        FusedCandidate(
            id=d,
            rrf=rrf,
            ranks=MappingProxyType(ranks),
            arm_scores=MappingProxyType(scores),
            temporal_proximity=proximity.get(d),
        )
        for d, (rrf, _, ranks, scores) in order
    ]


def _exact(fused: Sequence[FusedCandidate]) -> list[tuple[Any, ...]]:
    # the mappings' order too (the breakdown shows them in it), and the sums to the bit
    return [
        (c.id, c.rrf.hex(), list(c.ranks.items()), list(c.arm_scores.items()), c.temporal_proximity)
        for c in fused
    ]


_ids = st.sampled_from([f"m{i}" for i in range(40)])
_hit = st.builds(
    lambda i, s, p: ArmHit(id=i, score=s, temporal_proximity=p),
    _ids,
    st.floats(min_value=-1, max_value=10, allow_nan=False),
    st.none() | st.floats(min_value=0, max_value=1),
)
_arms = st.dictionaries(st.sampled_from(ARM_NAMES), st.lists(_hit, max_size=60))
# weights that make different rank pairs tie exactly (1 and 2 and 3) and ones that do not
_weights = st.none() | st.dictionaries(
    st.sampled_from(ARM_NAMES), st.sampled_from([0.0, 0.3, 0.5, 1.0, 2.0, 3.0, 1 / 3, 1e-13])
)


@settings(max_examples=400, deadline=None)
@given(
    _arms,
    st.integers(min_value=0, max_value=70),
    _weights,
    st.none() | st.integers(min_value=0, max_value=50),
)
def test_fusion_matches_the_reference(
    arms: dict[ArmName, list[ArmHit]], k: int, weights: dict[ArmName, float] | None, limit: int | None
) -> None:
    got = reciprocal_rank_fusion(arms, k=k, weights=weights, limit=limit)
    assert _exact(got) == _exact(_reference(arms, k=k, weights=weights, limit=limit))


def test_sums_equal_once_rounded_keep_the_reference_order() -> None:
    # b's sum is larger than a's by ~3e-14: equal once rounded to 12 decimals, so both are
    # ordered by best rank (1 each), then id, as the reference orders them: a before b.
    arms: dict[ArmName, list[ArmHit]] = {
        "semantic": [ArmHit(id="a", score=1.0), ArmHit(id="b", score=0.9), ArmHit(id="c", score=0.8)],
        "keyword": [ArmHit(id="b", score=1.0), ArmHit(id="a", score=0.9)],
    }
    weights: dict[ArmName, float] = {"semantic": 1.0, "keyword": 1.0 + 1e-10}
    got = reciprocal_rank_fusion(arms, weights=weights)
    assert got[1].rrf > got[0].rrf  # by the raw sums alone, b would come first
    assert _exact(got) == _exact(_reference(arms, weights=weights))
    assert [c.id for c in got] == ["a", "b", "c"]
