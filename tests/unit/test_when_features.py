"""What the learned reranker and the boosts read for a question asking *when* (pure units)."""

from __future__ import annotations

import datetime as dt

import pytest

from shared_core.recall.arms.temporal import asks_when
from shared_core.recall.boosts import BoostConfig, BoostInput, apply_boosts
from shared_core.recall.learned import FEATURE_NAMES, CandidateSignals, QuerySignals, featurize
from shared_core.types import TimeWindow

UTC = dt.UTC
NOW = dt.datetime(2024, 6, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("When did Mara go to the pottery workshop?", True),
        ("What year did Ravi join Novabank?", True),
        ("How long ago did they meet?", True),
        ("Where does Mara work?", False),
        ("What does Mara do when it rains?", True),  # a false positive the features must survive
        # how long a state has held or a thing took, which week, how many units passed: the
        # answer is when things happened, told by memories stating a time
        ("How long has Mara worked at Novabank?", True),
        ("For how long has Nate had his turtles?", True),
        ("How long did it take Ravi to finish the book?", True),
        ("How many weeks passed between the two adoptions?", True),
        ("After how many days did she reply?", True),
        ("Which week did Tim visit London?", True),
        ("How long does she usually hold the pose?", False),  # a habit's length, not a time
        ("How long is the drive to Cremona?", False),
        ("How many years did he play for Ajax?", False),
    ],
)
def test_asks_when(question: str, expected: bool) -> None:
    assert asks_when(question) is expected


def _column(question: str, window: TimeWindow | None, ranks: dict[str, int]) -> float:
    q = QuerySignals.from_query(question, window)
    c = CandidateSignals(position=0, rrf=0.03, ranks=ranks, arm_scores={}, cosine=0.5, text="x")  # type: ignore[arg-type]
    return float(featurize(q, [c])[0, FEATURE_NAMES.index("dated_evidence_rr")])


def test_dated_evidence_rr_is_the_when_arms_rank_only_without_a_window() -> None:
    # appended after the 25 columns before it, and the later (relative) columns after it:
    # every column keeps its place, so older weight files and recorded hashes still hold
    assert FEATURE_NAMES.index("dated_evidence_rr") == 25
    assert FEATURE_NAMES[26:31] == (
        "cosine_z",
        "term_cover_over_best",
        "name_cover_over_best",
        "log_words_rel",
        "log_candidates",
    )
    assert FEATURE_NAMES[31:] == (
        "window_tight_years",
        "neighbour_of_top",
        "speaker_named",
        "neighbour_of_top_speaker_named",
    )
    when = "When did Mara go to the pottery workshop?"
    assert _column(when, None, {"temporal": 1}) == pytest.approx(60 / 61)
    assert _column(when, None, {"semantic": 1}) == 0.0
    window = TimeWindow(start=dt.datetime(2023, 1, 1, tzinfo=UTC), end=dt.datetime(2024, 1, 1, tzinfo=UTC))
    assert _column(when, window, {"temporal": 1}) == 0.0  # the window arm is another signal


def test_blind_query_signals_see_no_time() -> None:
    q = QuerySignals.from_query("When did Mara go to the pottery workshop?", None, asks_when=False)
    assert not q.asks_when and q.window is None


def test_when_boost_favours_a_memory_stating_its_own_date_only_for_when_questions() -> None:
    said = dt.datetime(2024, 5, 10, tzinfo=UTC)
    inputs = [
        BoostInput(id="undated", mentioned_at=said),
        BoostInput(id="dated", occurred_start=said - dt.timedelta(days=1), mentioned_at=said),
    ]
    config = BoostConfig(recency_alpha=0.0, when_alpha=1.0)
    asked = apply_boosts([0.5, 0.4], inputs, NOW, False, config, asks_when=True)
    assert [s.id for s in asked] == ["dated", "undated"]
    assert asked[0].temporal_boost == pytest.approx(1.5) and asked[1].temporal_boost == 1.0
    other = apply_boosts([0.5, 0.4], inputs, NOW, False, config, asks_when=False)
    assert [s.id for s in other] == ["undated", "dated"]
    assert {s.temporal_boost for s in other} == {1.0}
