"""Combined scoring: the reranker score times three small multiplicative boosts.

``final = reranker_norm × recency_boost × temporal_boost × proof_boost`` where each boost is
``1 + alpha × (value − 0.5)`` for a value in [0, 1], so a neutral value (0.5) leaves the score
unchanged and with the default alphas the product stays within about +27% / −23%.

Fixes over the leading implementation:

* the effective date of a memory is the *middle* of its occurred interval; a date known only to
  the year (or month, quarter, ...) is widened to its grain first, so "in 2023" is dated
  mid-2023 and not Jan 1 (which made recency reverse correct reranker orders, #3893);
* the temporal proximity of a memory found by several arms is kept by fusion (see
  :mod:`shared_core.recall.fusion`), so the temporal boost applies to it.

>>> import datetime as dt
>>> now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
>>> scored = apply_boosts([0.8], [BoostInput(id="a", mentioned_at=now, proof_count=10)], now, False)
>>> round(scored[0].final, 4)  # 0.8 × (1 + 0.05·0.5) × 1 × (1 + 0.1·0.2303)
0.8389
"""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from types import MappingProxyType
from typing import Final, Literal, TypeVar, get_args

from shared_core.config import (
    DEFAULT_PROOF_ALPHA,
    DEFAULT_RECENCY_ALPHA,
    DEFAULT_RECENCY_HALF_LIFE_DAYS,
    DEFAULT_RECENCY_WINDOW_DAYS,
    DEFAULT_TEMPORAL_ALPHA,
)
from shared_core.errors import ConfigurationError
from shared_core.recall.fusion import FusedCandidate
from shared_core.recall.text_years import narrowest_stint, told_years
from shared_core.slots import builder
from shared_core.timeutil import add_months
from shared_core.types import DateGrain, MemoryRecord, ScoreBreakdown, TimeWindow, as_utc

__all__ = [
    "DEFAULT_RECENCY_MODE",
    "RECENCY_MODES",
    "BoostConfig",
    "BoostInput",
    "RecencyMode",
    "ScoredCandidate",
    "apply_boosts",
    "boost",
    "effective_date",
    "proof_norm",
    "recency",
    "stated_time_match",
    "stated_time_of",
    "window_match",
]

RecencyMode = Literal["linear", "exponential", "none"]
RECENCY_MODES: tuple[RecencyMode, ...] = get_args(RecencyMode)
DEFAULT_RECENCY_MODE: RecencyMode = "linear"

NEUTRAL = 0.5
"""The value of a signal that says nothing (no date, no proof count, no proximity)."""

# Linear recency never drops below this: a very old memory is demoted, not zeroed.
_LINEAR_RECENCY_FLOOR = 0.1
# An alpha above 2 would make ``1 + alpha·(0 − 0.5)`` negative and flip the order of scores.
_MAX_ALPHA = 2.0
_SECONDS_PER_DAY = 86_400.0

# Grains with a fixed length; calendar grains (month, quarter, ...) are computed from the date.
_FIXED_GRAINS: dict[str, _dt.timedelta] = {
    "second": _dt.timedelta(seconds=1),
    "minute": _dt.timedelta(minutes=1),
    "hour": _dt.timedelta(hours=1),
    "day": _dt.timedelta(days=1),
    "week": _dt.timedelta(days=7),
}
_MONTHS_PER_GRAIN: dict[str, int] = {"month": 1, "season": 3, "quarter": 3, "year": 12, "decade": 120}


def _grain_end(start: _dt.datetime, grain: DateGrain) -> _dt.datetime:
    """The end of the grain-long period that begins at ``start``."""
    if grain in _FIXED_GRAINS:
        return start + _FIXED_GRAINS[grain]
    try:
        return add_months(start, _MONTHS_PER_GRAIN[grain])
    except (KeyError, OverflowError, ValueError):  # unknown grain, or beyond year 9999
        return start


def effective_date(
    occurred_start: _dt.datetime | None,
    occurred_end: _dt.datetime | None,
    mentioned_at: _dt.datetime | None,
    grain: DateGrain | None,
) -> _dt.datetime | None:
    """The one date a memory is aged by, in UTC; ``None`` if it has none.

    * both occurred bounds: the middle of the interval;
    * only ``occurred_start`` and a ``grain``: the middle of the grain starting there (the date
      parser resolves "2023" to its first instant with grain ``"year"``);
    * only one occurred bound otherwise: that bound (when it happened beats when it was said);
    * else ``mentioned_at``.

    >>> import datetime as dt
    >>> effective_date(dt.datetime(2023, 1, 1), None, None, "year")
    datetime.datetime(2023, 7, 2, 12, 0, tzinfo=datetime.timezone.utc)
    """
    # The rows recall reads are aware UTC already (sessions run in UTC, storage/pools.py): the
    # identity test spares them a call per date (effective_date runs for every candidate).
    start = (
        occurred_start if occurred_start is None or occurred_start.tzinfo is _UTC else as_utc(occurred_start)
    )
    end = occurred_end if occurred_end is None or occurred_end.tzinfo is _UTC else as_utc(occurred_end)
    if start is not None and end is not None:
        if end < start:  # tolerate swapped bounds rather than date a memory outside them
            start, end = end, start
        return start + (end - start) / 2
    if start is not None:
        if grain is None:
            return start
        return start + (_grain_end(start, grain) - start) / 2
    if end is not None:
        return end
    if mentioned_at is None or mentioned_at.tzinfo is _UTC:
        return mentioned_at
    return as_utc(mentioned_at)


_UTC = _dt.UTC


def _window_years(window: TimeWindow) -> tuple[int, int]:
    # a window that ends at midnight on Jan 1 belongs to the year before
    end = window.end - _dt.timedelta(microseconds=1) if window.end > window.start else window.end
    return window.start.year, end.year


# A text whose years hold the window only across a wide stint ("active from 1990 until 2020",
# a career's lead) says little about any one year inside it: the stated time is then neutral
# (0.5), not 1. The learned reranker reads the same width (window_tight_years). Tuned offline
# on wiki-dev and dated-prose-train (benchmarks/window_boost_variants.py: temporal_ablation's ranking, shipped
# weights; R@1 / R@10), among 5 / 10 / 20 years / no span at all / any span (before):
# wiki-dev 54.4 / 94.2, 55.6 / 94.3, 55.6 / 94.2, 46.7 / 94.5, 54.8 / 94.0; dated-prose-train
# R@1 64.9, 65.8, 64.0, 64.9, 62.2; dated-train R@1 99.1, 100, 100, 96.6, 100; LoCoMo 0-4 the
# same in each (chat turns seldom write two years).
STATED_SPAN_MAX_YEARS: Final = 10


def stated_time_match(text: str, window: TimeWindow) -> float:
    """Whether a memory's own words put it in ``window``: 1 if the text tells a year of the
    window, or tells two or more years whose span holds the window ("joined in 2001 ... left
    in 2008" for a question about 2005) within :data:`STATED_SPAN_MAX_YEARS` years between two
    of them; 0.5 (neutral) when only a wider span of them holds it; else 0.

    A memory is dated at retain by one date (its most specific mention); a paragraph covering
    years is about all of them, which only its text says. The years it tells are those it
    writes and those its offsets imply ("In 2003 she joined ... Three years later she left":
    2006; :func:`shared_core.recall.text_years.told_years`), as the learned reranker's year
    columns read them: encyclopedia prose tells a stint by its start and an offset, and read
    by its written years alone such a paragraph was boosted down (x0.75) for a question about
    the year it implies (benchmarks/temporal_ablation.py offline, shipped weights:
    dated-prose-train R@1 48.6 -> 62.2, wiki-dev 54.0 -> 54.8, LoCoMo 0-4 unchanged;
    docs/benchmarks/tmp_temporal.md).

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2005, 1, 1), end=dt.datetime(2006, 1, 1))
    >>> [stated_time_match(t, w) for t in ("Joined in 2001, left in 2008.", "In 2005 she won.",
    ...                                    "Returned in 2011.", "No date.",
    ...                                    "Joined in 2003; two years later she won.",
    ...                                    "Active from 1990 until 2020.")]
    [1.0, 1.0, 0.0, 0.0, 1.0, 0.5]
    """
    return stated_time_of(told_years(text), window)


def stated_time_of(years: Sequence[int], window: TimeWindow) -> float:
    """:func:`stated_time_match` of a text that tells ``years`` (its
    :func:`~shared_core.recall.text_years.told_years`): for a caller that has them already
    (recall under the learned reranker, whose features read the same years).

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2005, 1, 1), end=dt.datetime(2006, 1, 1))
    >>> stated_time_of([2003, 2005], w), stated_time_of([1990, 2020], w), stated_time_of([], w)
    (1.0, 0.5, 0.0)
    """
    lo, hi = bounds = _window_years(window)
    if any(lo <= y <= hi for y in years):
        return 1.0
    width = narrowest_stint(years, bounds)
    if width is None:
        return 0.0
    return 1.0 if width <= STATED_SPAN_MAX_YEARS else NEUTRAL


def window_match(date: _dt.datetime | None, window: TimeWindow) -> float | None:
    """How well a memory dated ``date`` (its :func:`effective_date`, aware UTC) matches a
    question's ``window`` for the temporal boost: 1 anywhere inside the window, edges included;
    beyond an edge falling linearly to 0 half the window's span away (the slope the temporal
    arm's centre-peaked proximity has); ``None`` for an undated memory.

    A question naming a time asks about all of it: a turn said on 29 December matches "in
    December" as well as one said on the 15th, and a state told on X itself is what "as of X"
    asks (a window from a year before X to X's end). The centre-peaked proximity
    (:func:`~shared_core.recall.arms.temporal.temporal_proximity`, which still ranks the
    temporal arm's entries) is 0 at the edges, and boosted such a memory down (x0.75 under the
    learned profile) as if it lay outside: on LoCoMo 0-4 (offline, shipped weights, the 136
    questions with a window) R@5 / R@10 86.4 / 92.3 -> 87.1 / 93.6, no question lower at R@10;
    dated-train unchanged (benchmarks/temporal_ablation.py; docs/benchmarks/tq19_temporal.md).
    Not tuned: no constant.

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2023, 12, 1), end=dt.datetime(2023, 12, 31))
    >>> [window_match(dt.datetime(2023, 12, d, tzinfo=dt.UTC), w) for d in (1, 15, 31)]
    [1.0, 1.0, 1.0]
    >>> window_match(dt.datetime(2023, 11, 23, 12, tzinfo=dt.UTC), w), window_match(None, w)
    (0.5, None)
    """
    if date is None:
        return None
    if window.start <= date <= window.end:
        return 1.0
    half = window.span.total_seconds() / 2
    beyond = (window.start - date if date < window.start else date - window.end).total_seconds()
    if half <= 0:
        return 0.0
    return max(0.0, 1.0 - beyond / half)


def _check_mode(mode: str) -> None:
    if mode not in RECENCY_MODES:
        raise ConfigurationError(f"unknown recency mode {mode!r}; expected one of {', '.join(RECENCY_MODES)}")


def recency(
    effective: _dt.datetime | None,
    now: _dt.datetime,
    mode: RecencyMode = DEFAULT_RECENCY_MODE,
    *,
    window_days: float = DEFAULT_RECENCY_WINDOW_DAYS,
    half_life_days: float = DEFAULT_RECENCY_HALF_LIFE_DAYS,
) -> float:
    """How recent ``effective`` is at ``now``, in [0, 1].

    ``linear``: ``clamp(1 − days/window_days, 0.1, 1)``; ``exponential``:
    ``0.5 ** (days/half_life_days)``; ``none``: 0.5. No date gives 0.5 (neutral) and a future
    date gives 1.

    >>> import datetime as dt
    >>> now = dt.datetime(2024, 1, 1)
    >>> recency(now - dt.timedelta(days=73), now), recency(now - dt.timedelta(days=90), now,
    ...                                                     "exponential")
    (0.8, 0.5)
    """
    _check_mode(mode)
    if mode == "none" or effective is None:
        return NEUTRAL
    return _recency(as_utc(effective), as_utc(now), mode, window_days, half_life_days)


def _recency(
    effective: _dt.datetime, now: _dt.datetime, mode: RecencyMode, window_days: float, half_life_days: float
) -> float:
    """:func:`recency` of a dated memory, both datetimes aware UTC and ``mode`` checked."""
    if mode == "none":
        return NEUTRAL
    days = (now - effective).total_seconds() / _SECONDS_PER_DAY
    if days <= 0:
        return 1.0
    if mode == "linear":
        return min(1.0, max(_LINEAR_RECENCY_FLOOR, 1.0 - days / window_days))
    return float(0.5 ** (days / half_life_days))


def proof_norm(proof_count: int | None) -> float:
    """``clamp(0.5 + ln(n)/10, 0, 1)``: 1 → 0.5, 10 → 0.7303, 150 and more → 1.

    A missing or non-positive count is neutral (0.5).

    >>> proof_norm(1), round(proof_norm(10), 4)
    (0.5, 0.7303)
    """
    if proof_count is None or proof_count < 1:
        return NEUTRAL
    return min(1.0, max(0.0, NEUTRAL + math.log(proof_count) / 10.0))


def boost(value: float, alpha: float) -> float:
    """The multiplicative factor ``1 + alpha·(value − 0.5)``, 1 for a neutral value.

    >>> boost(0.5, 0.2), boost(1.0, 0.2)
    (1.0, 1.1)
    """
    return 1.0 + alpha * (value - NEUTRAL)


@dataclass(frozen=True, slots=True, kw_only=True)
class BoostConfig:
    """Strengths of the three boosts and the recency curve.

    >>> BoostConfig(recency_mode="exponential").recency_half_life_days
    90.0
    """

    recency_alpha: float = DEFAULT_RECENCY_ALPHA
    temporal_alpha: float = DEFAULT_TEMPORAL_ALPHA
    proof_alpha: float = DEFAULT_PROOF_ALPHA
    #: For a question asking *when* without naming a time: the temporal boost of a memory that
    #: states its own date (``occurred_start`` / ``occurred_end``) is ``1 + when_alpha * 0.5``
    #: where its score is at least the best candidate's divided by that boost (else 1).
    when_alpha: float = 0.0
    recency_mode: RecencyMode = DEFAULT_RECENCY_MODE
    recency_window_days: float = DEFAULT_RECENCY_WINDOW_DAYS
    recency_half_life_days: float = DEFAULT_RECENCY_HALF_LIFE_DAYS

    def __post_init__(self) -> None:
        for name in ("recency_alpha", "temporal_alpha", "proof_alpha", "when_alpha"):
            alpha = getattr(self, name)
            if not 0.0 <= alpha <= _MAX_ALPHA:
                raise ConfigurationError(f"{name} must be within [0, {_MAX_ALPHA}], got {alpha}")
        for name in ("recency_window_days", "recency_half_life_days"):
            days = getattr(self, name)
            if not days > 0:
                raise ConfigurationError(f"{name} must be > 0, got {days}")
        _check_mode(self.recency_mode)


@dataclass(frozen=True, slots=True, kw_only=True)
class BoostInput:
    """What the boosts need to know about one candidate (fetched after fusion)."""

    id: str
    occurred_start: _dt.datetime | None = None
    occurred_end: _dt.datetime | None = None
    mentioned_at: _dt.datetime | None = None
    date_grain: DateGrain | None = None
    proof_count: int | None = None
    temporal_proximity: float | None = None
    #: :func:`stated_time_match` of its text with the query's window (None without one): the
    #: temporal value is the better of it and ``temporal_proximity``.
    stated_time: float | None = None

    @classmethod
    def from_record(cls, record: MemoryRecord, *, temporal_proximity: float | None = None) -> BoostInput:
        """Build from a stored memory and the proximity fusion carried for it."""
        return cls(
            id=record.id,
            occurred_start=record.occurred_start,
            occurred_end=record.occurred_end,
            mentioned_at=record.mentioned_at,
            date_grain=record.date_grain,
            proof_count=record.proof_count,
            temporal_proximity=temporal_proximity,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoredCandidate:
    """A candidate after combined scoring, with every intermediate number.

    ``position`` is the candidate's index in the input (the reranker / RRF order); it breaks ties
    on ``final``.
    """

    id: str
    position: int
    reranker: float
    effective_date: _dt.datetime | None
    recency: float
    temporal_proximity: float | None
    proof: float
    recency_boost: float
    temporal_boost: float
    proof_boost: float
    final: float

    def breakdown(
        self, fused: FusedCandidate | None = None, *, reranker_raw: float | None = None
    ) -> ScoreBreakdown:
        """The public :class:`ScoreBreakdown`, merged with the candidate's fusion record."""
        if fused is not None and fused.id != self.id:
            raise ValueError(f"fused candidate {fused.id!r} is not scored candidate {self.id!r}")
        return _breakdown(
            _as_dict(fused.ranks) if fused else {},
            _as_dict(fused.arm_scores) if fused else {},
            fused.rrf if fused else 0.0,
            reranker_raw,
            self.reranker,
            self.recency_boost,
            self.temporal_boost,
            self.proof_boost,
            self.temporal_proximity,
            self.final,
        )


K = TypeVar("K")
V = TypeVar("V")


def _as_dict(mapping: Mapping[K, V]) -> dict[K, V]:
    """A new ``dict`` of ``mapping``, as ``dict(mapping)`` makes it: copied in C when it is a
    dict or a read-only view of one (fusion's ``MappingProxyType``), which ``dict()`` reads key
    by key through the mapping protocol (1.5 against 0.2 us; twice per returned memory).

    >>> from types import MappingProxyType
    >>> ranks = MappingProxyType({"semantic": 2, "keyword": 1})
    >>> copy = _as_dict(ranks)
    >>> type(copy) is dict, copy == dict(ranks), list(copy) == list(ranks), copy is not ranks
    (True, True, True, True)
    """
    if isinstance(mapping, MappingProxyType | dict):
        copied = mapping.copy()
        if type(copied) is dict:  # a proxy of another mapping copies to that mapping's type
            return copied
    return dict(mapping)


# Built without calling the frozen classes (shared_core.slots): one ScoredCandidate per fused
# candidate (~300 a recall at 100k) and one ScoreBreakdown per returned memory (~150), on the
# recall's path; 1.8 and 3.5 us called (load ~5), about a third of that so.
_breakdown = builder(
    ScoreBreakdown,
    (
        "arm_ranks",
        "arm_scores",
        "rrf",
        "reranker_raw",
        "reranker",
        "recency_boost",
        "temporal_boost",
        "proof_boost",
        "temporal_proximity",
        "final",
    ),
)
_scored_candidate = builder(
    ScoredCandidate,
    (
        "id",
        "position",
        "reranker",
        "effective_date",
        "recency",
        "temporal_proximity",
        "proof",
        "recency_boost",
        "temporal_boost",
        "proof_boost",
        "final",
    ),
)


def _unit(value: float) -> float:
    """Clamp to [0, 1]; NaN becomes 0 so one bad score cannot poison the sort."""
    return 0.0 if math.isnan(value) else min(1.0, max(0.0, value))


def apply_boosts(
    reranker_scores: Sequence[float],
    candidates_info: Sequence[BoostInput],
    now: _dt.datetime,
    window_present: bool,
    config: BoostConfig | None = None,
    *,
    asks_when: bool = False,
) -> list[ScoredCandidate]:
    """Score candidates and sort them best first (ties keep the input order).

    ``reranker_scores[i]`` is the normalised reranker score of ``candidates_info[i]``. The
    temporal boost uses the candidate's temporal proximity (or the time its text states) only
    when the query had a time window; without one it is neutral (1.0), except for a question
    that ``asks_when``: there a memory stating its own date is evidence of when (strength
    ``config.when_alpha``), if its score is within the boost of the best candidate's.
    """
    cfg = config if config is not None else BoostConfig()
    if len(reranker_scores) != len(candidates_info):
        raise ValueError(f"{len(reranker_scores)} reranker scores for {len(candidates_info)} candidates")
    # Once per call, not per candidate (the config checked its mode when it was built); the
    # loop runs for each of the ~300 fused candidates of a recall at 100k, on its critical path.
    now_utc, mode = as_utc(now), cfg.recency_mode
    window_days, half_life_days = cfg.recency_window_days, cfg.recency_half_life_days
    recency_alpha, proof_alpha = cfg.recency_alpha, cfg.proof_alpha
    temporal_alpha = cfg.temporal_alpha if window_present else cfg.when_alpha
    # A "when" question's boost picks among the contenders for the top: a memory stating its
    # own date is boosted only where the boost could lift it to the best candidate's score
    # (its score at least the best's divided by the full boost). Flat, it lifted every dated
    # memory of the tail (a chat's plans and errands) over the turns that tell the asked event
    # without a date, dated by when they were said (benchmarks/said_questions.py). The bound
    # follows from when_alpha; not tuned (LoCoMo 0-4, every R@k the same).
    when_floor = 0.0
    if asks_when and not window_present and reranker_scores:
        when_floor = max(_unit(float(r)) for r in reranker_scores) / (1.0 + cfg.when_alpha * (1.0 - NEUTRAL))
    scored: list[ScoredCandidate] = []
    # proof_norm by proof count, once per count (most memories have one proof)
    proofs: dict[int | None, float] = {}
    for position, (raw_score, info) in enumerate(zip(reranker_scores, candidates_info, strict=True)):
        reranker = _unit(float(raw_score))
        eff = effective_date(info.occurred_start, info.occurred_end, info.mentioned_at, info.date_grain)
        # effective_date is aware UTC already
        rec = NEUTRAL if eff is None else _recency(eff, now_utc, mode, window_days, half_life_days)
        proximity = _unit(info.temporal_proximity) if info.temporal_proximity is not None else None
        # a stated time only ever helps: none stated leaves an undated memory neutral
        if info.stated_time and (proximity is None or info.stated_time > proximity):
            proximity = _unit(info.stated_time)
        if window_present:
            temporal_value = proximity if proximity is not None else NEUTRAL
        else:
            own_date = info.occurred_start is not None or info.occurred_end is not None
            temporal_value = 1.0 if asks_when and own_date and reranker >= when_floor else NEUTRAL
        proof = proofs.get(info.proof_count)
        if proof is None:
            proof = proofs[info.proof_count] = proof_norm(info.proof_count)
        # boost() written out: 1 + alpha * (value - 0.5), the same operations in the same order
        recency_boost = 1.0 + recency_alpha * (rec - NEUTRAL)
        temporal_boost = 1.0 + temporal_alpha * (temporal_value - NEUTRAL)
        proof_boost = 1.0 + proof_alpha * (proof - NEUTRAL)
        scored.append(
            _scored_candidate(
                info.id,
                position,
                reranker,
                eff,
                rec,
                proximity,
                proof,
                recency_boost,
                temporal_boost,
                proof_boost,
                reranker * recency_boost * temporal_boost * proof_boost,
            )
        )
    # Best final first, ties in input order: a stable sort, descending, keeps equal keys in
    # their input (position) order, as the key (-final, position) did, without a tuple each.
    scored.sort(key=_final, reverse=True)
    return scored


_final = attrgetter("final")
