"""The fast featurizer gives exactly the numbers of the per-candidate one it replaced.

``data/learned_recorded.json`` was recorded with the per-candidate implementation (main
9c52816) on the deterministic 300-candidate list of ``benchmarks/learned_speed.py``, for a
plain, a "when" and a windowed question: a SHA-256 (first 16 hex digits) of every feature
column's float64 bytes (features added later are not in the recording). One column was
re-recorded since, from the per-candidate reference after an intended change: the windowed
question's ``window_proximity``, when the reranker began to read the time a memory was said
(learned.py's ``said_selects``; every other column's hash is the 9c52816 one). Scores are compared
with the per-candidate reference under whatever weights ship, so a retrain never skips them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from learned_speed import _QUESTIONS, candidates

from shared_core.recall.learned import FEATURE_NAMES, CandidateSignals, LearnedScorer, QuerySignals, featurize

RECORDED = json.loads((Path(__file__).parent / "data" / "learned_recorded.json").read_text())


@pytest.mark.parametrize("index", range(len(_QUESTIONS)))
def test_features_are_identical_to_the_recorded_ones(index: int) -> None:
    question, window = _QUESTIONS[index]
    recorded = RECORDED["queries"][index]
    assert recorded["question"] == question
    rows = featurize(QuerySignals.from_query(question, window), candidates(RECORDED["candidates"]))
    got = {
        name: hashlib.sha256(np.ascontiguousarray(rows[:, i]).tobytes()).hexdigest()[:16]
        for i, name in enumerate(FEATURE_NAMES)
        if name in recorded["columns"]
    }
    assert got == recorded["columns"]


@pytest.mark.parametrize("index", range(len(_QUESTIONS)))
def test_scores_are_those_of_the_per_candidate_reference_under_the_shipped_weights(index: int) -> None:
    from shared_core.recall.learned import _featurize_rows

    question, window = _QUESTIONS[index]
    query = QuerySignals.from_query(question, window)
    cands = candidates(RECORDED["candidates"])
    scorer = LearnedScorer.default()
    z = np.clip(scorer.logits(_featurize_rows(query, cands)), -40.0, 40.0)
    assert scorer.score(query, cands) == [float(p) for p in 1.0 / (1.0 + np.exp(-z))]


@pytest.mark.parametrize(
    "question",
    [
        "How is the grouping of the support group going?",  # nested terms: "group" / "groupi"
        "Ann and Anna met Annabel in 2022?",  # names that are prefixes of each other
        "When did Caroline_Smith visit Zürich or İstanbul?",  # underscores, non-ASCII case
        "Whom did Mara meet when she bought the children's toys and saw Ann?",  # irregular forms
        "",
    ],
)
def test_the_fast_path_matches_the_per_candidate_reference(question: str) -> None:
    from shared_core.recall.learned import _featurize_rows

    texts = [
        "The grouping of groups was a group effort.",
        "Annabel met Ann; anna_b did not.",
        "caroline_smith went to ZÜRICH and İstanbul in 2021 and 2023.",
        "groupie support",
        "Mara met a metal buyer; she buys, saw and has seen the child's toys.",
        "",
    ]
    cands = candidates(40)
    cands = [
        dataclasses.replace(c, text=texts[i % len(texts)]) if i % 3 == 0 else c for i, c in enumerate(cands)
    ]
    for window in (None, _QUESTIONS[2][1]):
        query = QuerySignals.from_query(question, window)
        assert np.array_equal(featurize(query, cands), _featurize_rows(query, cands))
    odd = QuerySignals(
        terms=frozenset({"support group", "ab"}), names=frozenset({"o'neil"}), asks_when=True, window=None
    )
    assert np.array_equal(featurize(odd, cands), _featurize_rows(odd, cands))


def _odd_candidates(seed: int, n: int = 120) -> list[CandidateSignals]:
    """Candidates with what the fast path must get exactly right: non-ASCII and tricky texts
    (tests/unit/test_text_scan.py), dates naive, in UTC and in other zones, every grain,
    swapped bounds, dates centuries away, -0.0 and out-of-range arm scores, missing cosines."""
    import datetime as dt
    import random

    from test_text_scan import _texts

    rng = random.Random(seed)
    zones = (
        None,
        dt.UTC,
        dt.timezone(dt.timedelta(hours=5, minutes=30)),
        dt.timezone(-dt.timedelta(hours=8)),
    )
    texts = _texts(seed, n)
    if seed % 2:
        texts = [t.encode("ascii", "ignore").decode() for t in texts]

    def moment() -> dt.datetime | None:
        if rng.random() < 0.3:
            return None
        year = rng.choice((2021, 2022, 2023, 1492, 2900))
        date = dt.datetime(
            year,
            rng.randint(1, 12),
            rng.randint(1, 28),
            rng.randint(0, 23),
            rng.randint(0, 59),
            rng.randint(0, 59),
            rng.choice((0, 1, 500_000, 999_999)),
        )
        return date.replace(tzinfo=rng.choice(zones))

    out = []
    for i in range(n):
        arms = [a for a in ("semantic", "keyword", "graph", "temporal") if rng.random() < 0.5]
        scores = {a: rng.choice((-0.0, 0.0, -1.5, 0.3, 2.5, 4.0, 7.25)) for a in arms}
        out.append(
            CandidateSignals(
                position=i,
                rrf=rng.choice((0.0, 0.01, 0.0163, 0.033)),
                ranks={a: rng.randint(1, 400) for a in arms},  # type: ignore[misc]
                arm_scores=scores,  # type: ignore[arg-type]
                cosine=rng.choice((None, -0.0, 0.12, 0.5, 0.77)),
                text=texts[i],
                occurred_start=moment(),
                occurred_end=moment(),
                mentioned_at=moment(),
                date_grain=rng.choice(
                    (
                        None,
                        "second",
                        "minute",
                        "hour",
                        "day",
                        "week",
                        "month",
                        "season",
                        "quarter",
                        "year",
                        "decade",
                    )
                ),
            )
        )
    return out


@pytest.mark.parametrize("seed", range(8))
def test_texts_never_seen_and_odd_candidates_give_the_reference_numbers_bit_for_bit(seed: int) -> None:
    import datetime as dt

    from shared_core.recall.learned import _featurize_rows
    from shared_core.types import TimeWindow

    cands = _odd_candidates(seed)
    scorer = LearnedScorer.default()
    windows = (
        None,
        _QUESTIONS[2][1],
        TimeWindow(
            start=dt.datetime(2022, 5, 1, 12, tzinfo=dt.UTC), end=dt.datetime(2022, 5, 1, 12, tzinfo=dt.UTC)
        ),
        TimeWindow(start=dt.datetime(1400, 1, 1), end=dt.datetime(2100, 1, 1, 0, 0, 0, 1)),
    )
    questions = (
        "When did Ann visit Zürich and İstanbul in 2022?",
        "Which group did Annabel support?",
        "café x",
    )
    for question in questions:
        for window in windows:
            query = QuerySignals.from_query(question, window)
            fast, reference = featurize(query, cands), _featurize_rows(query, cands)
            assert fast.tobytes() == reference.tobytes(), (question, window)
            again = featurize(query, cands)
            assert again.tobytes() == fast.tobytes()  # deterministic
            z = np.clip(scorer.logits(reference), -40.0, 40.0)
            assert scorer.score(query, cands) == [float(p) for p in 1.0 / (1.0 + np.exp(-z))]


@pytest.mark.parametrize("seed", range(4))
def test_the_speaker_column_is_the_references_bit_for_bit(seed: int) -> None:
    from shared_core.recall.learned import SPEAKER_FEATURE, _featurize_rows

    speakers = ("Ann", "Zoë Ärger", "ann", "Dr. Ann", "ΣΟΦΙΑ", "Ann_B", "Ann Bea Cy Dee")
    contexts = (None, "Ann", "Annabel Lee", "a note about Ann", "")
    cands = [
        dataclasses.replace(
            c,
            text=f"{speakers[i % len(speakers)]} said, {c.text}" if i % 3 else f"{speakers[i % 7]}: {c.text}",
            context=contexts[i % len(contexts)],
        )
        for i, c in enumerate(_odd_candidates(seed))
    ]
    column = FEATURE_NAMES.index(SPEAKER_FEATURE)
    for question in ("What did Ann tell Zoë?", "Which group did Annabel support?", "café x", "Who is ΣΟΦΙΑ?"):
        query = QuerySignals.from_query(question, None)
        fast, reference = featurize(query, cands), _featurize_rows(query, cands)
        assert fast.tobytes() == reference.tobytes(), question
        if question.startswith("What did Ann"):
            assert 0 < fast[:, column].sum() < len(cands)
