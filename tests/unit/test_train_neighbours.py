"""benchmarks/train_reranker.py marks neighbour_of_top as recall does: the document neighbours
(by id order) of the first stage's top candidates, the seeds themselves left out (pure)."""

from __future__ import annotations

import dataclasses
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from train_reranker import QuestionData, document_positions, with_neighbours

from shared_core.recall.learned import (
    FEATURE_NAMES,
    NEIGHBOUR_FEATURE,
    NEIGHBOUR_SPEAKER_FEATURE,
    SPEAKER_FEATURE,
    LearnedScorer,
)

COSINE = FEATURE_NAMES.index("cosine")
MARK = FEATURE_NAMES.index(NEIGHBOUR_FEATURE)
SPEAKER = FEATURE_NAMES.index(SPEAKER_FEATURE)
SPEAKER_MARK = FEATURE_NAMES.index(NEIGHBOUR_SPEAKER_FEATURE)


def test_document_positions_follow_the_id_order_within_each_document() -> None:
    memories = {
        "03": {"dia_id": "D1:3", "document_id": "session-1"},
        "01": {"dia_id": "D1:1", "document_id": "session-1"},
        "02": {"dia_id": "D2:1", "document_id": "session-2"},
        "04": {"dia_id": "x", "document_id": None},
        # older traces: the document from the dia_id (a LoCoMo session, a dated person)
        "05": {"dia_id": "D1:9"},
        "06": {"dia_id": "B0:P3:intro"},
    }
    assert document_positions(memories) == {
        "01": ("session-1", 0),
        "03": ("session-1", 1),
        "05": ("session-1", 2),
        "02": ("session-2", 0),
        "06": ("B0:P3", 0),
    }


def test_neighbours_of_the_first_stages_seeds_are_marked_not_the_seeds() -> None:
    first = LearnedScorer(
        features=("cosine",), mean=np.zeros(1), scale=np.ones(1), coef=np.ones(1), intercept=0.0
    )
    cosines = [0.9, 0.1, 0.2, 0.8, 0.3, 0.05]
    x = np.zeros((6, len(FEATURE_NAMES)))
    x[:, COSINE] = cosines
    places = (("a", 5), ("a", 6), ("a", 9), ("a", 4), ("b", 6), None)
    q = QuestionData(
        dataset="t",
        conversation=0,
        category=1,
        x=x,
        labels=np.zeros(6),
        dia_ids=tuple("uvwxyz"),
        evidence=frozenset(),
        passthrough=(),
        doc_pos=places,
    )
    p = [1 / (1 + math.exp(-c)) for c in cosines]  # the first stage: logit = cosine
    marked = with_neighbours(q, first, seeds=2, window=2)  # seeds: 0 (a5) and 3 (a4)
    assert marked.x[:, MARK].tolist() == [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]  # a6 beside the top seed
    # said by nobody the question names: the speaker's copy of the mark stays 0
    assert marked.x[:, SPEAKER_MARK].tolist() == [0.0] * 6
    x[:, SPEAKER] = 1.0
    spoken = with_neighbours(dataclasses.replace(q, x=x), first, seeds=2, window=2)
    assert spoken.x[:, SPEAKER_MARK].tolist() == spoken.x[:, MARK].tolist() == marked.x[:, MARK].tolist()
    x[:, SPEAKER] = 0.0
    assert q.x[:, MARK].tolist() == [0.0] * 6  # the input is not changed
    wider = with_neighbours(q, first, seeds=2, window=4)  # a9 only beside a5 (the top seed)
    assert wider.x[:, MARK].tolist() == pytest.approx([0.0, 1.0, 1.0, 0.0, 0.0, 0.0])
    # beside the second seed only: its probability over the top seed's
    q2 = dataclasses.replace(q, doc_pos=(("a", 5), ("a", 1), ("a", 9), ("a", 2), ("b", 6), None))
    marks = with_neighbours(q2, first, seeds=2, window=1).x[:, MARK].tolist()
    assert marks == pytest.approx([0.0, p[3] / p[0], 0.0, 0.0, 0.0, 0.0])
