"""Recency, temporal and proof boosts, effective dates with grain, and the combined score."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from shared_core.errors import ConfigurationError
from shared_core.recall.arms.temporal import temporal_proximity
from shared_core.recall.boosts import (
    BoostConfig,
    BoostInput,
    ScoredCandidate,
    apply_boosts,
    boost,
    effective_date,
    proof_norm,
    recency,
    stated_time_match,
    window_match,
)
from shared_core.recall.fusion import ArmHit, FusedCandidate, reciprocal_rank_fusion
from shared_core.recall.hydrate import MemoryRow
from shared_core.recall.pipeline import _boost_input
from shared_core.types import MemoryRecord, TimeWindow

UTC = dt.UTC
NOW = dt.datetime(2024, 1, 1, tzinfo=UTC)


# --- effective_date --------------------------------------------------------------------------


def test_effective_date_uses_middle_of_occurred_interval() -> None:
    start = dt.datetime(2023, 3, 1, tzinfo=UTC)
    end = dt.datetime(2023, 3, 11, tzinfo=UTC)
    assert effective_date(start, end, None, None) == dt.datetime(2023, 3, 6, tzinfo=UTC)


def test_year_grain_start_only_uses_mid_year_not_jan_1() -> None:
    # Hindsight #3893: "2023" became Jan 1 2023. 2023 has 365 days → middle is 182.5 days in.
    start = dt.datetime(2023, 1, 1, tzinfo=UTC)
    assert effective_date(start, None, None, "year") == dt.datetime(2023, 7, 2, 12, tzinfo=UTC)


def test_month_grain_start_only_uses_mid_month() -> None:
    start = dt.datetime(2023, 2, 1, tzinfo=UTC)  # February 2023 has 28 days → +14 days
    assert effective_date(start, None, None, "month") == dt.datetime(2023, 2, 15, tzinfo=UTC)
    dec = dt.datetime(2023, 12, 1, tzinfo=UTC)  # 31 days → +15.5 days, across no year boundary
    assert effective_date(dec, None, None, "month") == dt.datetime(2023, 12, 16, 12, tzinfo=UTC)


def test_other_grains_start_only() -> None:
    start = dt.datetime(2020, 1, 1, tzinfo=UTC)
    assert effective_date(start, None, None, "day") == dt.datetime(2020, 1, 1, 12, tzinfo=UTC)
    assert effective_date(start, None, None, "week") == dt.datetime(2020, 1, 4, 12, tzinfo=UTC)
    # Q1 2020 = Jan 1 .. Apr 1 = 91 days → +45.5 days = Feb 15 12:00
    assert effective_date(start, None, None, "quarter") == dt.datetime(2020, 2, 15, 12, tzinfo=UTC)
    # 2020..2030 = 3653 days → +1826.5 days
    assert effective_date(start, None, None, "decade") == start + dt.timedelta(days=1826.5)


def test_year_grain_with_both_bounds_is_mid_interval() -> None:
    start = dt.datetime(2023, 1, 1, tzinfo=UTC)
    end = dt.datetime(2023, 12, 31, 23, 59, 59, tzinfo=UTC)
    eff = effective_date(start, end, None, "year")
    assert eff == start + (end - start) / 2
    assert eff is not None and eff.month == 7


def test_effective_date_fallbacks() -> None:
    mentioned = dt.datetime(2022, 5, 5, tzinfo=UTC)
    end = dt.datetime(2022, 1, 1, tzinfo=UTC)
    start = dt.datetime(2021, 6, 1, tzinfo=UTC)
    assert effective_date(None, None, mentioned, None) == mentioned
    assert effective_date(start, None, mentioned, None) == start  # a point: no grain to widen
    assert effective_date(None, end, mentioned, None) == end  # the event's own date wins
    assert effective_date(None, None, None, "year") is None


def test_effective_date_naive_taken_as_utc() -> None:
    eff = effective_date(dt.datetime(2023, 3, 1), None, None, None)
    assert eff == dt.datetime(2023, 3, 1, tzinfo=UTC)


# --- recency ---------------------------------------------------------------------------------


def test_recency_linear() -> None:
    assert recency(NOW - dt.timedelta(days=73), NOW, "linear") == pytest.approx(1 - 73 / 365)
    assert recency(NOW, NOW, "linear") == 1.0
    assert recency(NOW - dt.timedelta(days=400), NOW, "linear") == 0.1  # clamped at 0.1
    assert recency(NOW - dt.timedelta(days=10), NOW, "linear", window_days=20) == pytest.approx(0.5)


def test_recency_exponential() -> None:
    assert recency(NOW - dt.timedelta(days=90), NOW, "exponential") == pytest.approx(0.5)
    assert recency(NOW - dt.timedelta(days=45), NOW, "exponential") == pytest.approx(0.5**0.5)
    assert recency(NOW - dt.timedelta(days=10), NOW, "exponential", half_life_days=10) == pytest.approx(0.5)


def test_recency_none_missing_and_future() -> None:
    assert recency(NOW - dt.timedelta(days=3), NOW, "none") == 0.5
    assert recency(None, NOW, "linear") == 0.5
    assert recency(None, NOW, "exponential") == 0.5
    assert recency(NOW + dt.timedelta(days=30), NOW, "linear") == 1.0
    assert recency(NOW + dt.timedelta(days=30), NOW, "exponential") == 1.0


def test_year_grain_recency_uses_mid_year() -> None:
    # "it happened in 2023", asked on 2024-01-01: middle of 2023 is 182.5 days ago.
    eff = effective_date(dt.datetime(2023, 1, 1, tzinfo=UTC), None, None, "year")
    assert recency(eff, NOW, "linear") == pytest.approx(1 - 182.5 / 365)  # 0.5
    # with Jan 1 (Hindsight) it would be 365 days old → clamped to the 0.1 floor
    assert recency(dt.datetime(2023, 1, 1, tzinfo=UTC), NOW, "linear") == 0.1


def test_recency_rejects_unknown_mode() -> None:
    with pytest.raises(ConfigurationError, match="linear"):
        recency(NOW, NOW, "cubic")  # type: ignore[arg-type]


# --- proof and boost -------------------------------------------------------------------------


def test_proof_norm() -> None:
    assert proof_norm(1) == 0.5
    assert proof_norm(10) == pytest.approx(0.7303, abs=1e-4)
    assert proof_norm(10) == pytest.approx(0.5 + math.log(10) / 10)
    assert proof_norm(150) == 1.0  # 0.5 + ln(150)/10 = 1.001 → clamped
    assert proof_norm(0) == 0.5  # no proof count → neutral
    assert proof_norm(None) == 0.5


def test_boost_is_centred_on_one() -> None:
    assert boost(0.5, 0.2) == 1.0
    assert boost(1.0, 0.2) == pytest.approx(1.1)
    assert boost(0.0, 0.2) == pytest.approx(0.9)
    assert boost(proof_norm(10), 0.1) == pytest.approx(1 + 0.1 * (0.5 + math.log(10) / 10 - 0.5))


def test_boost_config_validation() -> None:
    assert BoostConfig().recency_mode == "linear"
    with pytest.raises(ConfigurationError):
        BoostConfig(recency_alpha=-0.1)
    with pytest.raises(ConfigurationError):
        BoostConfig(recency_window_days=0)
    with pytest.raises(ConfigurationError):
        BoostConfig(recency_mode="cubic")  # type: ignore[arg-type]


# --- apply_boosts ----------------------------------------------------------------------------


def _inputs() -> list[BoostInput]:
    return [
        BoostInput(id="b"),  # no date, no proof, no proximity: every boost neutral
        BoostInput(
            id="a", occurred_start=NOW - dt.timedelta(days=181), proof_count=10, temporal_proximity=0.9
        ),
    ]


def test_apply_boosts_arithmetic_with_window() -> None:
    # The leading implementation's recency strength (ours defaults to a gentler 0.05).
    scored = apply_boosts([0.85, 0.8], _inputs(), NOW, True, BoostConfig(recency_alpha=0.2))
    rec_a = 1 - 181 / 365
    expected_a = (
        0.8
        * (1 + 0.2 * (rec_a - 0.5))
        * (1 + 0.2 * (0.9 - 0.5))
        * (1 + 0.1 * (0.5 + math.log(10) / 10 - 0.5))
    )
    assert [s.id for s in scored] == ["a", "b"]
    a, b = scored
    assert a.final == pytest.approx(expected_a)  # ≈ 0.8847
    assert a.recency == pytest.approx(rec_a)
    assert a.temporal_boost == pytest.approx(1.08)
    assert a.position == 1
    assert b.final == pytest.approx(0.85)
    assert (b.recency_boost, b.temporal_boost, b.proof_boost) == (1.0, 1.0, 1.0)


def test_apply_boosts_temporal_neutral_without_window() -> None:
    scored = apply_boosts([0.85, 0.8], _inputs(), NOW, False, BoostConfig(recency_alpha=0.2))
    a = next(s for s in scored if s.id == "a")
    assert a.temporal_boost == 1.0
    assert a.final == pytest.approx(
        0.8 * (1 + 0.2 * (1 - 181 / 365 - 0.5)) * (1 + 0.1 * (math.log(10) / 10))
    )  # ≈ 0.8191
    assert [s.id for s in scored] == ["b", "a"]


def test_apply_boosts_stable_tie_break_by_input_order() -> None:
    inputs = [BoostInput(id=i) for i in ("z", "y", "x")]
    assert [s.id for s in apply_boosts([0.5, 0.5, 0.5], inputs, NOW, False)] == ["z", "y", "x"]


def test_apply_boosts_recency_mode_and_alphas_from_config() -> None:
    cfg = BoostConfig(recency_mode="exponential", recency_alpha=0.4, proof_alpha=0.0)
    inp = [BoostInput(id="a", mentioned_at=NOW - dt.timedelta(days=90), proof_count=50)]
    (s,) = apply_boosts([1.0], inp, NOW, False, cfg)
    assert s.recency == pytest.approx(0.5)
    assert s.final == pytest.approx(1.0)  # recency 0.5 → neutral; proof alpha 0
    cfg2 = BoostConfig(recency_mode="none")
    inp2 = [BoostInput(id="a", mentioned_at=NOW)]
    assert apply_boosts([1.0], inp2, NOW, False, cfg2)[0].final == pytest.approx(1.0)


def test_apply_boosts_mid_year_keeps_reranker_order() -> None:
    # #3893: a correct CE order flipped because "2023" was dated Jan 1.
    inputs = [
        BoostInput(id="year", occurred_start=dt.datetime(2023, 1, 1, tzinfo=UTC), date_grain="year"),
        BoostInput(id="exact", occurred_start=dt.datetime(2023, 6, 1, tzinfo=UTC)),
    ]
    scored = apply_boosts([0.80, 0.78], inputs, NOW, False)
    assert [s.id for s in scored] == ["year", "exact"]


def test_apply_boosts_rejects_length_mismatch() -> None:
    with pytest.raises(ValueError, match="2 reranker scores"):
        apply_boosts([0.1, 0.2], [BoostInput(id="a")], NOW, False)


def test_apply_boosts_nan_reranker_score_is_zero_and_proximity_clamped() -> None:
    inp = [BoostInput(id="a", temporal_proximity=1.7), BoostInput(id="b")]
    scored = apply_boosts([float("nan"), 0.1], inp, NOW, True)
    a = next(s for s in scored if s.id == "a")
    assert a.final == 0.0
    assert a.temporal_boost == pytest.approx(1.1)
    assert scored[0].id == "b"


def test_boost_input_from_record_and_breakdown() -> None:
    rec = MemoryRecord(
        id="m1",
        bank="b",
        text="t",
        context=None,
        fact_type="world",
        occurred_start=dt.datetime(2023, 1, 1, tzinfo=UTC),
        occurred_end=None,
        mentioned_at=None,
        date_grain="year",
        created_at=NOW,
        updated_at=NOW,
        last_accessed_at=None,
        tags=(),
        metadata={},
        proof_count=3,
        document_id=None,
        chunk_id=None,
    )
    inp = BoostInput.from_record(rec, temporal_proximity=0.6)
    assert inp.date_grain == "year" and inp.proof_count == 3 and inp.temporal_proximity == 0.6
    (scored,) = apply_boosts([0.7], [inp], NOW, True)
    assert isinstance(scored, ScoredCandidate)
    fused = reciprocal_rank_fusion(
        {
            "semantic": [ArmHit(id="m1", score=0.9)],
            "temporal": [ArmHit(id="m1", score=0.6, temporal_proximity=0.6)],
        }
    )[0]
    bd = scored.breakdown(fused, reranker_raw=0.85)
    assert bd.rrf == pytest.approx(2 / 61)
    assert dict(bd.arm_ranks) == {"semantic": 1, "temporal": 1}
    assert bd.reranker == 0.7 and bd.reranker_raw == 0.85
    assert bd.final == scored.final
    assert bd.temporal_proximity == 0.6
    assert bd.recency_boost == scored.recency_boost
    with pytest.raises(ValueError, match="m1"):
        scored.breakdown(reciprocal_rank_fusion({"semantic": [ArmHit(id="x", score=1)]})[0])


def test_a_memory_whose_written_years_span_the_window_is_boosted_like_one_dated_in_it() -> None:
    window = TimeWindow(
        start=dt.datetime(2005, 1, 1, tzinfo=dt.UTC), end=dt.datetime(2006, 1, 1, tzinfo=dt.UTC)
    )
    joined = dt.datetime(2001, 3, 1, tzinfo=dt.UTC)  # dated at retain by its first mention
    span = "In March 2001 she joined the Brevik Opera Orchestra. She left in 2008."
    other = "In March 2001 she turned down an offer from the Brevik Opera Orchestra."
    inputs = [
        BoostInput(
            id="other",
            occurred_start=joined,
            temporal_proximity=0.0,
            stated_time=stated_time_match(other, window),
        ),
        BoostInput(
            id="span",
            occurred_start=joined,
            temporal_proximity=0.0,
            stated_time=stated_time_match(span, window),
        ),
    ]
    now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    scored = apply_boosts([0.5, 0.5], inputs, now, True, BoostConfig(recency_alpha=0.0, temporal_alpha=0.5))
    assert [s.id for s in scored] == ["span", "other"]
    assert scored[0].temporal_boost > 1.0 > scored[1].temporal_boost
    # without a window the stated time says nothing
    neutral = apply_boosts([0.5, 0.5], inputs, now, False, BoostConfig(recency_alpha=0.0, temporal_alpha=0.5))
    assert [s.temporal_boost for s in neutral] == [1.0, 1.0]


def test_the_when_boost_goes_only_to_dated_memories_within_its_reach_of_the_best() -> None:
    # A "when" question: a memory stating its own date is boosted x1.5 (when_alpha 1) only
    # where that could lift it to the best candidate's score; a dated memory of the tail (a
    # chat's errand "yesterday") is not lifted over the undated turns above it.
    said = dt.datetime(2023, 6, 2, tzinfo=dt.UTC)
    dated = {"occurred_start": said - dt.timedelta(days=1), "mentioned_at": said}
    inputs = [
        BoostInput(id="told", mentioned_at=said),  # the best: undated, tells the event
        BoostInput(id="near", **dated),  # dated, 0.7 / 0.9 of the best: within reach
        BoostInput(id="undated", mentioned_at=said),
        BoostInput(id="tail", **dated),  # dated, far below the best
    ]
    config = BoostConfig(recency_alpha=0.0, proof_alpha=0.0, when_alpha=1.0)
    now = said + dt.timedelta(days=30)
    scored = apply_boosts([0.9, 0.7, 0.06, 0.05], inputs, now, False, config, asks_when=True)
    boosts = {s.id: s.temporal_boost for s in scored}
    assert boosts == {"told": 1.0, "near": 1.5, "undated": 1.0, "tail": 1.0}
    assert [s.id for s in scored] == ["near", "told", "undated", "tail"]
    # not a "when" question: no boost at all
    plain = apply_boosts([0.9, 0.7, 0.06, 0.05], inputs, now, False, config)
    assert {s.temporal_boost for s in plain} == {1.0}


def test_a_year_the_text_implies_by_an_offset_counts_as_stated() -> None:
    # Encyclopedia prose tells a stint by its start and an offset: the boost reads the years
    # the text tells (text_years.told_years), as the learned reranker's year columns do, so
    # the paragraph telling the move in 2006 is boosted for a question about 2006 like one
    # writing it, and above one that tells nothing of 2006.
    window = TimeWindow(
        start=dt.datetime(2006, 1, 1, tzinfo=dt.UTC), end=dt.datetime(2007, 1, 1, tzinfo=dt.UTC)
    )
    implied = "In 2003 she joined the Brevik Opera Orchestra. Three years later she moved to Cardow."
    written = "In 2003 she joined the Brevik Opera Orchestra. In 2006 she moved to Cardow."
    other = "In 2003 she joined the Brevik Opera Orchestra. She toured Japan with it."
    assert stated_time_match(implied, window) == stated_time_match(written, window) == 1.0
    assert stated_time_match(other, window) == 0.0
    joined = dt.datetime(2003, 1, 1, tzinfo=dt.UTC)  # dated at retain by its first year
    inputs = [
        BoostInput(
            id=i, occurred_start=joined, temporal_proximity=0.0, stated_time=stated_time_match(t, window)
        )
        for i, t in (("other", other), ("implied", implied))
    ]
    now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    scored = apply_boosts([0.5, 0.5], inputs, now, True, BoostConfig(recency_alpha=0.0, temporal_alpha=0.5))
    assert [s.id for s in scored] == ["implied", "other"]
    # a duration is no offset: "for three years before" implies nothing
    assert stated_time_match("In 2003 she joined, having studied for three years before.", window) == 0.0


def test_only_a_wide_span_of_told_years_around_the_window_is_neutral() -> None:
    # A career's lead bracketing thirty years says little about 2005; a stint of a few years
    # around it does (STATED_SPAN_MAX_YEARS): the lead is neither lifted nor pushed down.
    window = TimeWindow(
        start=dt.datetime(2005, 1, 1, tzinfo=dt.UTC), end=dt.datetime(2006, 1, 1, tzinfo=dt.UTC)
    )
    lead = "Oskar Vell, active from 1990 until 2020, played for four clubs."
    stint = "Oskar Vell joined Arnholt in 2003 and left in 2008."
    assert stated_time_match(stint, window) == 1.0
    assert stated_time_match(lead, window) == 0.5
    inputs = [
        BoostInput(
            id=i,
            occurred_start=dt.datetime(y, 1, 1, tzinfo=dt.UTC),
            temporal_proximity=0.0,
            stated_time=stated_time_match(t, window),
        )
        for i, t, y in (("lead", lead, 1990), ("stint", stint, 2003))
    ]
    now = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    scored = apply_boosts([0.5, 0.5], inputs, now, True, BoostConfig(recency_alpha=0.0, temporal_alpha=0.5))
    assert [(s.id, s.temporal_boost) for s in scored] == [("stint", 1.25), ("lead", 1.0)]


def test_breakdown_copies_the_fused_mappings_into_new_dicts() -> None:
    fused = reciprocal_rank_fusion(
        {
            "semantic": [ArmHit(id="a", score=0.9)],
            "keyword": [ArmHit(id="b", score=2.0), ArmHit(id="a", score=1.0)],
        }
    )[0]
    (scored,) = apply_boosts([0.7], [BoostInput(id="a")], dt.datetime(2024, 1, 1, tzinfo=dt.UTC), False)
    breakdown = scored.breakdown(fused)
    for copied, original in ((breakdown.arm_ranks, fused.ranks), (breakdown.arm_scores, fused.arm_scores)):
        assert type(copied) is dict
        assert list(copied.items()) == list(original.items())  # the same order too
        copied.clear()  # a copy: the fused candidate keeps its own
        assert len(original) == 2


# --- window_match: the temporal boost's reading of a window ------------------------------------

DECEMBER = TimeWindow(
    start=dt.datetime(2023, 12, 1, tzinfo=UTC), end=dt.datetime(2023, 12, 31, 23, 59, 59, tzinfo=UTC)
)
# "as of December 2023": a year before it to its end
AS_OF_DECEMBER = TimeWindow(start=dt.datetime(2022, 12, 1, tzinfo=UTC), end=DECEMBER.end)


def test_anywhere_inside_the_window_matches_it_fully() -> None:
    for day in (1, 2, 15, 29, 31):
        assert window_match(dt.datetime(2023, 12, day, 12, tzinfo=UTC), DECEMBER) == 1.0
    assert window_match(DECEMBER.start, DECEMBER) == window_match(DECEMBER.end, DECEMBER) == 1.0
    # said on X itself under "as of X": the window's end, no longer its edge at 0
    said_on_x = dt.datetime(2023, 12, 29, 19, tzinfo=UTC)
    assert temporal_proximity(said_on_x, AS_OF_DECEMBER) < 0.1
    assert window_match(said_on_x, AS_OF_DECEMBER) == 1.0


def test_beyond_an_edge_the_match_falls_to_zero_half_a_span_away() -> None:
    half = DECEMBER.span / 2
    assert window_match(DECEMBER.end + half / 2, DECEMBER) == pytest.approx(0.5)
    assert window_match(DECEMBER.start - half / 4, DECEMBER) == pytest.approx(0.75)
    assert window_match(DECEMBER.start - half, DECEMBER) == 0.0
    assert window_match(dt.datetime(2023, 6, 28, tzinfo=UTC), DECEMBER) == 0.0
    assert window_match(None, DECEMBER) is None
    instant = TimeWindow(start=DECEMBER.start, end=DECEMBER.start)
    assert window_match(DECEMBER.start, instant) == 1.0
    assert window_match(DECEMBER.start + dt.timedelta(seconds=1), instant) == 0.0


def _row(said: dt.datetime, occurred: dt.datetime | None = None) -> MemoryRow:
    return MemoryRow(
        id="m",
        text='Tim said, "I started a new job as a baker."',
        context=None,
        fact_type="world",
        occurred_start=occurred,
        occurred_end=None,
        mentioned_at=said,
        date_grain=None,
        proof_count=1,
        document_id=None,
        chunk_id=None,
        similarity=0.5,
    )


def test_the_boost_reads_the_window_match_not_the_arms_centre_peaked_proximity() -> None:
    end_said = dt.datetime(2023, 12, 29, 19, tzinfo=UTC)
    mid_said = dt.datetime(2023, 6, 28, 19, tzinfo=UTC)
    for said in (end_said, mid_said):
        # found by the temporal arm, which carries its own (centre-peaked) proximity
        arm = temporal_proximity(said, AS_OF_DECEMBER)
        fused = FusedCandidate(id="m", rrf=0.01, ranks={"temporal": 1}, temporal_proximity=arm)
        assert _boost_input(fused, _row(said), AS_OF_DECEMBER).temporal_proximity == 1.0
        # and found by another arm only
        other = FusedCandidate(id="m", rrf=0.01, ranks={"semantic": 1})
        assert _boost_input(other, _row(said), AS_OF_DECEMBER).temporal_proximity == 1.0
    inputs = [
        _boost_input(FusedCandidate(id=i, rrf=0.01, ranks={"semantic": 1}), _row(s), AS_OF_DECEMBER)
        for i, s in (("end", end_said), ("mid", mid_said))
    ]
    end, mid = apply_boosts([0.5, 0.5], inputs, NOW, True, BoostConfig(temporal_alpha=0.5))
    assert end.temporal_boost == mid.temporal_boost == pytest.approx(1.25)
    # a memory stating its own date goes by it, not by when it was said
    dated = _boost_input(
        FusedCandidate(id="m", rrf=0.01, ranks={"semantic": 1}),
        _row(end_said, occurred=dt.datetime(2021, 3, 1, tzinfo=UTC)),
        AS_OF_DECEMBER,
    )
    assert dated.temporal_proximity == 0.0
    # without a window the fused proximity is kept as it was
    assert (
        _boost_input(
            FusedCandidate(id="m", rrf=0.01, ranks={}, temporal_proximity=0.3), _row(end_said), None
        ).temporal_proximity
        == 0.3
    )
