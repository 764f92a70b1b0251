"""The fast featurizer gives exactly the numbers of the per-candidate one it replaced.

``data/learned_recorded.json`` was recorded with the per-candidate implementation (main
9c52816) on the deterministic 300-candidate list of ``benchmarks/learned_speed.py``, for a
plain, a "when" and a windowed question: a SHA-256 (first 16 hex digits) of every feature
column's float64 bytes, and every score (``float.hex``) under the weights shipped then.
Features added later are not in the recording; scores are compared while the weights are the
recorded ones.
"""

from __future__ import annotations

import hashlib
import json
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from learned_speed import _QUESTIONS, candidates  # noqa: E402

from shared_core.recall.learned import FEATURE_NAMES, LearnedScorer, QuerySignals, featurize  # noqa: E402

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
def test_scores_are_identical_to_the_recorded_ones(index: int) -> None:
    weights = resources.files("shared_core.recall").joinpath("learned_reranker.json").read_bytes()
    if hashlib.sha256(weights).hexdigest() != RECORDED["weights_sha256"]:
        pytest.skip("the shipped weights were retrained since the recording")
    question, window = _QUESTIONS[index]
    scores = LearnedScorer.default().score(
        QuerySignals.from_query(question, window), candidates(RECORDED["candidates"])
    )
    assert [float.hex(s) for s in scores] == RECORDED["queries"][index]["scores"]
