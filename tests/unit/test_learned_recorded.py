"""The fast featurizer gives exactly the numbers of the per-candidate one it replaced.

``data/learned_recorded.json`` was recorded with the per-candidate implementation (main
9c52816) on the deterministic 300-candidate list of ``benchmarks/learned_speed.py``, for a
plain, a "when" and a windowed question: a SHA-256 (first 16 hex digits) of every feature
column's float64 bytes (features added later are not in the recording). Scores are compared
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

from learned_speed import _QUESTIONS, candidates

from shared_core.recall.learned import FEATURE_NAMES, LearnedScorer, QuerySignals, featurize

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
