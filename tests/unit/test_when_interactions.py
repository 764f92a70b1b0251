"""benchmarks/when_interactions.py: the interaction columns are zero outside time questions, so
the frozen family ranks every other question (and ``no-temporal``) exactly as shipped."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import train_reranker as T  # noqa: E402
import when_interactions as W  # noqa: E402

from shared_core.recall.learned import LearnedScorer  # noqa: E402

_DATED = {"occurred_start": "2023-05-06T00:00:00+00:00", "occurred_end": "2023-05-06T23:59:59+00:00"}
_SAID = {"mentioned_at": "2023-05-07T10:00:00+00:00", "date_grain": None}


def _block(question: str, *, when_list: bool = True) -> dict[str, Any]:
    """Three turns; ``when_list``: the temporal arm's "when" list ranked two of them (recall
    runs it only for a "when" question without a window)."""
    undated = {"occurred_start": None, "occurred_end": None}
    memories = {
        "a": {"dia_id": "D1:1", "text": 'Ravi said, "I went to Lisbon yesterday."', **_DATED, **_SAID},
        "b": {"dia_id": "D1:2", "text": 'Mara said, "Lisbon sounds lovely."', **undated, **_SAID},
        "c": {"dia_id": "D1:3", "text": 'Mara said, "I went to the dentist yesterday."', **_DATED, **_SAID},
    }
    memories["c"]["date_grain"] = "day"

    def cand(mid: str, position: int, ranks: dict[str, int], cosine: float) -> dict[str, Any]:
        scores = {arm: cosine for arm in ranks}
        return {"id": mid, "position": position, "rrf": 0.05 - position / 100, "ranks": ranks,
                "scores": scores, "cosine": cosine}  # fmt: skip

    return {
        "dataset": "locomo",
        "index": 0,
        "memories": memories,
        "questions": [
            {
                "question": question,
                "category": 2,
                "window": None,
                "evidence": ["D1:1"],
                "passthrough": ["a", "b", "c"],
                "candidates": [
                    cand("a", 0, {"semantic": 1, **({"temporal": 2} if when_list else {})}, 0.6),
                    cand("b", 1, {"semantic": 2, "keyword": 1}, 0.5),
                    cand("c", 2, {"semantic": 3, **({"temporal": 1} if when_list else {})}, 0.2),
                ],
            }
        ],
    }


def test_every_column_is_zero_outside_a_time_question() -> None:
    (q,) = T.questions_of(_block("Where did Ravi travel?", when_list=False))
    for name in W.EXTRAS:
        assert not np.any(W.extras(q, [name])), name


def test_a_when_question_reads_the_list_rank_and_the_dated_speaker() -> None:
    (q,) = T.questions_of(_block("When did Ravi go to Lisbon?"))
    assert W.extras(q, ["when_list_inv_rank"])[:, 0].tolist() == [0.5, 0.0, 1.0]
    # dated and said by the person the question names: only "a"
    assert W.extras(q, ["when_dated_x_speaker"])[:, 0].tolist() == [1.0, 0.0, 0.0]
    assert W.extras(q, ["when_dated_x_day_grain"])[:, 0].tolist() == [0.0, 0.0, 1.0]


def test_the_frozen_fit_keeps_the_shipped_logits_outside_time_questions() -> None:
    shipped = LearnedScorer.default()
    (when,) = T.questions_of(_block("When did Ravi go to Lisbon?"))
    (other,) = T.questions_of(_block("Where did Ravi travel?", when_list=False))
    model = W.fit([when, other], ["when_list_inv_rank"], frozen=True, shipped=shipped, l2=1.0)
    assert np.array_equal(model.logits(other, shipped), shipped.logits(other.x))
    assert not np.array_equal(model.logits(when, shipped), shipped.logits(when.x))
