"""Conversation context at retain (retain/neighbours.py): which memory is whose predecessor,
what snippet of it is indexed, and how vectors lean (pure units, real token counter)."""

from __future__ import annotations

import datetime as dt

import numpy as np

from shared_core.retain.neighbours import context_snippet, context_vectors, index_contexts, unit_predecessors
from shared_core.retain.prepare import coerce_items, prepare_units
from shared_core.tokens import default_token_counter

NOW = dt.datetime(2024, 5, 1, tzinfo=dt.UTC)


def _units(items: list[object], unit_max_tokens: int = 512) -> list[object]:
    units, _ = prepare_units(
        coerce_items(items),
        now=NOW,
        unit_max_tokens=unit_max_tokens,
        window_tokens=unit_max_tokens // 2,
        counter=default_token_counter(),
    )
    return units  # type: ignore[return-value]


def test_predecessors_follow_each_document_in_input_order() -> None:
    units = _units(
        [
            {"text": "a1", "document_id": "a"},
            {"text": "b1", "document_id": "b"},
            "loose",
            {"text": "a2", "document_id": "a"},
            {"text": "b2", "document_id": "b"},
            {"text": "a3", "document_id": "a"},
        ]
    )
    assert unit_predecessors(units) == [None, None, None, 0, 1, 3]  # type: ignore[arg-type]


def test_windows_of_a_long_item_without_a_document_follow_each_other() -> None:
    long = " ".join(f"Sentence number {i} talks about herons and frogs." for i in range(40))
    units = _units(["short and alone", long], unit_max_tokens=64)
    previous = unit_predecessors(units)  # type: ignore[arg-type]
    assert previous[0] is None and previous[1] is None
    assert previous[2:] == list(range(1, len(units) - 1))


def test_the_snippet_keeps_the_end_of_the_previous_turn_within_the_budget() -> None:
    counter = default_token_counter()
    turn = "I went hiking in the mountains last weekend with my kids. " * 5 + "Do you have any pets?"
    snippet = context_snippet(turn, 16, counter)
    assert snippet.endswith("Do you have any pets?") and counter.count(snippet) <= 16
    one_long_sentence = "word " * 100
    assert counter.count(context_snippet(one_long_sentence, 10, counter)) <= 10
    contexts = index_contexts(["first", turn], [None, 0], mode="previous", max_tokens=0, counter=counter)
    assert contexts == [None, None]


def test_vectors_lean_towards_the_predecessors_own_vector_only() -> None:
    v = np.eye(3, dtype=np.float32)
    mixed = context_vectors(v, [None, 0, 1], 1.0)
    assert np.allclose(np.linalg.norm(mixed, axis=1), 1.0)
    assert np.allclose(mixed[0], v[0])
    assert mixed[2][0] == 0.0  # the third leans on the second's own vector, not its mix
    assert np.allclose(context_vectors(v, [None, 0, 1], 0.0), v)
