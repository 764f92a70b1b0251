"""The years the learned reranker's features read, handed on to the temporal boost: the boost
gets the values it computed from each text itself (boosts.stated_time_match)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shared_core.recall.boosts import stated_time_match, stated_time_of
from shared_core.recall.fusion import FusedCandidate
from shared_core.recall.hydrate import MemoryRow
from shared_core.recall.learned import (
    CandidateSignals,
    LearnedScorer,
    QuerySignals,
    featurize,
    featurize_told,
)
from shared_core.recall.pipeline import _boost_input
from shared_core.recall.text_years import told_years
from shared_core.types import TimeWindow
from tests.unit.offset_pieces import OFFSET_PIECES
from tests.unit.test_text_years import CASES

UTC = dt.UTC
WINDOWS = [
    TimeWindow(start=dt.datetime(2005, 1, 1, tzinfo=UTC), end=dt.datetime(2006, 1, 1, tzinfo=UTC)),
    TimeWindow(start=dt.datetime(1990, 1, 1, tzinfo=UTC), end=dt.datetime(2000, 1, 1, tzinfo=UTC)),
    TimeWindow(start=dt.datetime(2003, 3, 1, tzinfo=UTC), end=dt.datetime(2003, 4, 1, tzinfo=UTC)),
]
TEXTS = [
    *(t for t, _ in CASES),
    "Joined in 2001, left in 2008.",
    "Active from 1990 until 2020.",
    "In 2005 she won.",
    "No date at all.",
    "Caroline said, \u201cI went camping last year.\u201d",
    "The 2004\u201305 season ended. Two seasons later (2007) he retired, aged 35.",
    "Ex-2003 notes: 12005, 1499, x1999, 2\u0660\u0660\u0665 and \u0662\u0660\u0660\u0665.",
]
_TEXT = st.lists(
    st.sampled_from(
        [*OFFSET_PIECES, "_", "x", "12003", "1499", "2100", "\u00e9", "\u0663", "2\u0660", "1\u0665"]
    ),
    max_size=40,
).map("".join)


def _candidates(texts: list[str]) -> list[CandidateSignals]:
    return [
        CandidateSignals(position=i, rrf=0.02 / (i + 1), ranks={"semantic": i + 1}, cosine=0.5, text=t)
        for i, t in enumerate(texts)
    ]


def _row(i: int, text: str) -> MemoryRow:
    return MemoryRow(
        id=str(i),
        text=text,
        context=None,
        fact_type="world",
        occurred_start=dt.datetime(2004, 6, 1, tzinfo=UTC) if i % 3 == 0 else None,
        occurred_end=None,
        mentioned_at=dt.datetime(2024, 1, 1, tzinfo=UTC),
        date_grain=None,
        proof_count=1 + i % 4,
        document_id=None,
        chunk_id=None,
        similarity=0.5,
    )


def _assert_handed_on(texts: list[str], window: TimeWindow) -> None:
    query = QuerySignals.from_query("Which club did Varga join in 2005?", window)
    rows, told = featurize_told(query, _candidates(texts))
    assert told is not None
    assert rows.tobytes() == featurize(query, _candidates(texts)).tobytes()
    for i, text in enumerate(texts):
        years = told.get(i, ())
        assert list(years) == told_years(text), text
        assert stated_time_of(years, window) == stated_time_match(text, window), text
        # what recall's boosts read: the same BoostInput with the years handed on or not
        row, candidate = _row(i, text), FusedCandidate(id=str(i), rrf=0.01)
        assert _boost_input(candidate, row, window, years) == _boost_input(candidate, row, window), text


@pytest.mark.parametrize("window", WINDOWS)
def test_the_boosts_get_the_years_they_would_read(window: TimeWindow) -> None:
    _assert_handed_on(TEXTS, window)


@given(st.lists(_TEXT, min_size=1, max_size=12), st.sampled_from(WINDOWS))
def test_the_boosts_get_the_years_they_would_read_any_text(texts: list[str], window: TimeWindow) -> None:
    _assert_handed_on(texts, window)


def test_a_text_telling_no_year_is_left_out_and_scores_no_stated_time() -> None:
    window = WINDOWS[0]
    _, told = featurize_told(
        QuerySignals.from_query("Where in 2005?", window), _candidates(["No year here."])
    )
    assert told == {}
    assert stated_time_of((), window) == stated_time_match("No year here.", window) == 0.0


def test_without_a_window_no_years_are_read() -> None:
    query = QuerySignals.from_query("Where does Mara work?", None)
    assert featurize_told(query, _candidates(["In 2003 she joined."]))[1] is None
    assert featurize_told(query, [])[1] is None
    scorer, cands = LearnedScorer.default(), _candidates(["In 2003 she joined."])
    rows, seeds, told = scorer.prepare_told(query, cands)
    assert told is None
    plain_rows, plain_seeds = scorer.prepare(query, cands)
    assert (rows.tobytes(), seeds) == (plain_rows.tobytes(), plain_seeds)


def test_recall_reads_the_handed_years_not_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    import shared_core.recall.pipeline as pipeline

    def unexpected(text: str, window: TimeWindow) -> float:
        raise AssertionError("the text was read again")

    monkeypatch.setattr(pipeline, "stated_time_match", unexpected)
    row, candidate = _row(1, "In 2003 he joined. Two years later he left."), FusedCandidate(id="1", rrf=0.01)
    assert _boost_input(candidate, row, WINDOWS[0], [2003, 2005]).stated_time == 1.0
    with pytest.raises(AssertionError, match="read again"):
        _boost_input(candidate, row, WINDOWS[0])
