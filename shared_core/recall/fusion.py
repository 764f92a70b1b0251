"""Reciprocal rank fusion of the retrieval arms.

``rrf(d) = Σ_arms w_arm / (k + rank_arm(d))`` with 1-based ranks; the weights default to 1
(the engine passes ``RecallSettings.arm_weights``, ``DEFAULT_ARM_WEIGHTS``).

Unlike the leading implementation, which keeps the first-seen copy of a candidate found by several
arms (and so loses the temporal arm's ``temporal_proximity`` whenever the semantic arm also found
the memory), a fused candidate here keeps every arm's rank and raw score and the temporal
proximity from the temporal arm.

>>> fused = reciprocal_rank_fusion({
...     "semantic": [ArmHit(id="a", score=0.9), ArmHit(id="b", score=0.8)],
...     "temporal": [ArmHit(id="b", score=0.7, temporal_proximity=0.95)],
... })
>>> [(c.id, round(c.rrf, 5), c.temporal_proximity) for c in fused]
[('b', 0.03252, 0.95), ('a', 0.01639, None)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from types import MappingProxyType

from shared_core.config import DEFAULT_RRF_K
from shared_core.slots import builder
from shared_core.types import ARM_NAMES, ArmName

__all__ = ["ArmHit", "FusedCandidate", "reciprocal_rank_fusion"]

# Sums of reciprocals that are equal in exact arithmetic can differ in the last bit depending on
# the order of addition; rounding the sort key makes such ties fall through to the tie-breakers.
_RRF_SORT_DIGITS = 12
# Two sums further apart than this cannot round to the same value at _RRF_SORT_DIGITS (values
# rounding alike lie within 10**-digits of each other; twice that leaves room for the float
# subtraction's error).
_RRF_TIE_GAP = 2 * 10.0**-_RRF_SORT_DIGITS


@dataclass(frozen=True, slots=True, kw_only=True)
class ArmHit:
    """One result of one retrieval arm, in the arm's own order.

    ``score`` is the arm's raw score (cosine similarity, ts_rank, activation, ...), kept for the
    score breakdown only: fusion uses the position in the list. ``temporal_proximity`` (in [0, 1])
    is only read from hits of the temporal arm.
    """

    id: str
    score: float
    temporal_proximity: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FusedCandidate:
    """A memory after fusion: its RRF score and what every arm that found it said.

    ``ranks`` and ``arm_scores`` are read-only mappings keyed by arm name.
    """

    id: str
    rrf: float
    ranks: Mapping[ArmName, int] = field(default_factory=dict)
    arm_scores: Mapping[ArmName, float] = field(default_factory=dict)
    temporal_proximity: float | None = None

    @property
    def best_rank(self) -> int:
        """The best (smallest) rank over the arms that found this candidate."""
        return min(self.ranks.values(), default=0)


def reciprocal_rank_fusion(
    arms: Mapping[ArmName, Sequence[ArmHit]],
    *,
    k: int = DEFAULT_RRF_K,
    weights: Mapping[ArmName, float] | None = None,
    limit: int | None = None,
) -> list[FusedCandidate]:
    """Fuse ranked arm results into one list, best first.

    Empty arms contribute nothing. A hit listed twice in one arm counts once, at its best (first)
    rank; the later copy does not shift the ranks of the hits after it (ranks are list positions).
    Ties are broken by the best rank in any arm, then by id, so the output does not depend on the
    order of ``arms``. ``weights`` scales each arm's terms (default 1 for every arm). ``limit``
    keeps only the best ``limit`` candidates (the rest are ranked but never built: recall fuses
    ~1,500 hits and keeps 300).

    >>> fused = reciprocal_rank_fusion({"semantic": [ArmHit(id="a", score=0.9)],
    ...                                 "keyword": [ArmHit(id="x", score=2.0),
    ...                                             ArmHit(id="y", score=1.5),
    ...                                             ArmHit(id="a", score=1.0)]})
    >>> fused[0].id, fused[0].rrf == 1 / 61 + 1 / 63, dict(fused[0].ranks)
    ('a', True, {'semantic': 1, 'keyword': 3})
    """
    unknown = set(arms) - set(ARM_NAMES)
    if unknown:
        raise ValueError(f"unknown arm name(s) {sorted(unknown)}; expected one of {ARM_NAMES}")
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")

    # Each arm's first position of each document (a dict per arm, not two per document: recall
    # fuses ~800 hits, of which the cut keeps 300, and only those get their ranks and scores),
    # then the sums in canonical arm order (not the mapping's order), which makes the
    # floating-point sums, and so the output, independent of how the caller built the mapping.
    # The same sums in the same order as one pass building every document's entry, at about
    # half its CPU (the 50 bench queries at 100k: docs/benchmarks/cpu18_recall_cpu.md).
    w = weights or {}
    found: list[tuple[ArmName, Sequence[ArmHit], dict[str, int]]] = []
    rrf: dict[str, float] = {}
    best: dict[str, int] = {}
    for arm in ARM_NAMES:
        hits = arms.get(arm)
        if not hits:
            continue
        weight = w.get(arm, 1.0)
        first = _first_positions(hits)
        found.append((arm, hits, first))
        if not rrf:
            rrf = {doc: weight / (k + position) for doc, position in first.items()}
            best = dict(first)
            continue
        for doc, position in first.items():
            term = weight / (k + position)
            if doc in rrf:
                rrf[doc] += term
                if position < best[doc]:
                    best[doc] = position
            else:
                rrf[doc] = term
                best[doc] = position

    out: list[FusedCandidate] = []
    for doc in _ordered(rrf, best, limit):
        ranks: dict[ArmName, int] = {}
        scores: dict[ArmName, float] = {}
        proximity: float | None = None
        for arm, hits, first in found:
            at = first.get(doc)
            if at is not None:
                ranks[arm] = at
                hit = hits[at - 1]
                scores[arm] = hit.score
                if arm == "temporal":
                    proximity = hit.temporal_proximity
        out.append(_fused(doc, rrf[doc], MappingProxyType(ranks), MappingProxyType(scores), proximity))
    return out


def _ordered(rrf: Mapping[str, float], best: Mapping[str, int], limit: int | None) -> list[str]:
    """The documents best first, by ``(-round(rrf, _RRF_SORT_DIGITS), best rank, id)``, the
    first ``limit`` of them (all for None).

    Sorted by the raw sums first (a C key); rounding is monotonic, so the rounded order differs
    only inside runs of sums closer than ``_RRF_TIE_GAP`` (equal once rounded, or ties), which
    are sorted again by the whole key. ``round(x, 12)`` on every sum (~1,150 a recall at 100k)
    was half of fusion's CPU (0.4 us each).

    >>> _ordered({"b": 0.5, "a": 0.5, "c": 0.5 + 1e-15, "d": 0.9}, {"a": 2, "b": 1, "c": 3, "d": 1}, 3)
    ['d', 'b', 'a']
    """
    order = sorted(rrf.items(), key=itemgetter(1), reverse=True)
    end = len(order) if limit is None else min(limit, len(order))
    out: list[str] = []
    i = 0
    while i < end:
        j = i + 1
        while j < len(order) and order[j - 1][1] - order[j][1] <= _RRF_TIE_GAP:
            j += 1
        if j == i + 1:
            out.append(order[i][0])
        else:
            run = [doc for doc, _ in order[i:j]]
            out.extend(sorted(run, key=lambda doc: (-round(rrf[doc], _RRF_SORT_DIGITS), best[doc], doc)))
        i = j
    return out[:end]


def _first_positions(hits: Sequence[ArmHit]) -> dict[str, int]:
    """Each document's first (best) 1-based position in ``hits``: a hit listed twice counts
    once, and the later copy does not shift the positions after it.

    >>> _first_positions([ArmHit(id="a", score=1.0), ArmHit(id="b", score=0.9),
    ...                   ArmHit(id="a", score=0.8)])
    {'a': 1, 'b': 2}
    """
    first = {hit.id: position for position, hit in enumerate(hits, start=1)}
    if len(first) == len(hits):  # no duplicates (the arms' statements return each id once)
        return first
    first = {}
    for position, hit in enumerate(hits, start=1):
        first.setdefault(hit.id, position)
    return first


# Built without calling the frozen class (shared_core.slots): ~300 per recall at 100k.
_fused = builder(FusedCandidate, ("id", "rrf", "ranks", "arm_scores", "temporal_proximity"))
