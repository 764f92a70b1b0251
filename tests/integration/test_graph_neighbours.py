"""The graph's second round: the document neighbours of the learned reranker's first-stage top
hits (arms/graph.py's neighbour_plan, read by the learned reranker as neighbour_of_top), on the
real server with the real models."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Sequence
from typing import Any

import pytest

import shared_core.recall.pipeline as pipeline
from shared_core import MemoryEngine, MemoryItem
from shared_core.recall.arms.graph import NEIGHBOURS, neighbour_plan
from shared_core.recall.learned import LearnedScorer
from shared_core.storage.plan import Plan, Query

SESSION = [
    "Priya: How was the trip to the coast, Omar?",
    "Omar: Wonderful. We rented a small boat for the whole week.",
    "Priya: Did the kids like it?",
    "Omar: They loved it, they want to go back next summer.",
    "Priya: My sister is moving to Lisbon in March.",
    "Omar: Lisbon is lovely in spring.",
]
OTHER = ["Priya: The bakery on Elm Street closed.", "Omar: What a pity, their rye was the best."]


def _bank() -> str:
    return f"neighbours-{uuid.uuid4().hex[:10]}"


def _retain(engine: MemoryEngine, bank: str) -> tuple[list[str], list[str], list[str]]:
    session = engine.retain([MemoryItem(text=t, document_id="session-1") for t in SESSION], bank=bank)
    other = engine.retain([MemoryItem(text=t, document_id="session-2") for t in OTHER], bank=bank)
    loose = engine.retain(["Omar plays the cello.", "Priya runs on Sundays."], bank=bank)
    return list(session), list(other), list(loose)


def test_neighbours_are_within_the_window_in_the_seeds_document(engine: MemoryEngine) -> None:
    bank = _bank()
    session, other, _ = _retain(engine, bank)
    a = session
    assert engine.run(neighbour_plan(bank, [a[2]], 2)) == {m: {a[2]} for m in (a[0], a[1], a[3], a[4])}
    assert engine.run(neighbour_plan(bank, [a[0]], 1)) == {a[1]: {a[0]}}
    # a document's edge, and two documents at once: nothing crosses into another document
    assert engine.run(neighbour_plan(bank, [a[5], other[0]], 2)) == {
        a[3]: {a[5]},
        a[4]: {a[5]},
        other[1]: {other[0]},
    }
    # each neighbour with every seed it neighbours; seeds neighbouring one another are
    # returned too (the caller leaves the seeds out)
    assert engine.run(neighbour_plan(bank, [a[1], a[2]], 1)) == {
        a[0]: {a[1]},
        a[1]: {a[2]},
        a[2]: {a[1]},
        a[3]: {a[2]},
    }


def test_memories_without_a_document_have_no_neighbours(engine: MemoryEngine) -> None:
    bank = _bank()
    _, _, loose = _retain(engine, bank)
    assert engine.run(neighbour_plan(bank, loose, 2)) == {}
    assert engine.run(neighbour_plan(bank, [], 2)) == {}
    assert engine.run(neighbour_plan(bank, loose, 0)) == {}


def test_neighbours_stay_in_their_bank(engine: MemoryEngine) -> None:
    first, second = _bank(), _bank()
    session, _, _ = _retain(engine, first)
    twin, _, _ = _retain(engine, second)  # same document ids in another bank
    assert set(engine.run(neighbour_plan(first, [session[2]], 1))) == {session[1], session[3]}
    assert set(engine.run(neighbour_plan(second, [twin[2]], 1))) == {twin[1], twin[3]}


class _Spy:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str], int]] = []
        self.found: list[dict[str, frozenset[str]]] = []

    def __call__(self, bank: str, seeds: Sequence[str], window: int) -> Plan[dict[str, frozenset[str]]]:
        self.calls.append((bank, list(seeds), window))
        found = yield from neighbour_plan(bank, seeds, window)
        self.found.append(found)
        return found


def _recall(engine: MemoryEngine, bank: str, **options: Any) -> Any:
    return engine.recall("What did Omar rent on the coast trip?", bank=bank, trace=True, **options)


def test_recall_looks_up_the_neighbours_of_the_first_stage_top_hits(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    scorer = LearnedScorer.default()
    assert scorer.reads_neighbours and scorer.first_stage is not None
    bank = _bank()
    session, other, _ = _retain(engine, bank)
    spy = _Spy()
    monkeypatch.setattr(pipeline, "neighbour_plan", spy)
    result = _recall(engine, bank)
    assert result.trace.reranker == "learned"
    assert len(spy.calls) == 1
    called_bank, seeds, window = spy.calls[0]
    assert called_bank == bank and window == scorer.neighbour_window
    fused = [i for i, _ in result.trace.fusion]
    assert len(seeds) == min(scorer.neighbour_seeds, len(fused)) and set(seeds) <= set(fused)
    # the turn that names the trip is a seed: its document neighbours were looked up
    assert session[0] in seeds or session[1] in seeds
    assert set(spy.found[0]) <= set(session + other)
    assert all(near and near <= set(seeds) for near in spy.found[0].values())


def test_without_the_graph_arm_or_with_the_round_off_no_neighbours_are_read(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    bank = _bank()
    _retain(engine, bank)
    spy = _Spy()
    monkeypatch.setattr(pipeline, "neighbour_plan", spy)
    _recall(engine, bank, arms=("semantic", "keyword", "temporal"))
    assert spy.calls == []
    saved = engine.recall_settings
    engine.recall_settings = dataclasses.replace(saved, graph_neighbours=False)
    try:
        _recall(engine, bank)
    finally:
        engine.recall_settings = saved
    assert spy.calls == []
    _recall(engine, bank)
    assert len(spy.calls) == 1


def _rows_removed(plan: dict[str, Any]) -> int:
    removed = int(plan.get("Rows Removed by Filter", 0))
    return removed + sum(_rows_removed(child) for child in plan.get("Plans", []))


def _explained(bank: str, seeds: list[str]) -> Plan[dict[str, Any]]:
    # With the statistics of the bank as it is now (as autovacuum keeps them): with stale ones
    # (a table analysed when it held a few documents) any plan can look cheapest.
    yield Query("ANALYZE memory_units", {}, fetch="none")
    row: dict[str, Any] = yield Query(
        "EXPLAIN (ANALYZE, FORMAT JSON) " + NEIGHBOURS,
        {"bank": bank, "ids": seeds, "window": 2},
        fetch="one",
    )
    value = row["QUERY PLAN"]
    doc = json.loads(value) if isinstance(value, str) else value
    plan: dict[str, Any] = doc[0]["Plan"]
    return plan


def test_a_seed_at_its_documents_end_reads_only_its_document(engine: MemoryEngine) -> None:
    # A document, then many memories of other documents: the seeds at either end of the first
    # document have nothing on one side, which must not mean reading the rest of the bank.
    bank = _bank()
    session = engine.retain([MemoryItem(text=t, document_id="session-1") for t in SESSION], bank=bank)
    engine.retain(
        [
            MemoryItem(text=f"Note {i}: the shop opens at {i % 12 + 1}.", document_id=f"note-{i}")
            for i in range(80)
        ],
        bank=bank,
    )
    plan = engine.run(_explained(bank, [session[0], session[-1]]))
    assert _rows_removed(plan) == 0
    assert engine.run(neighbour_plan(bank, [session[-1]], 2)) == {
        session[-3]: {session[-1]},
        session[-2]: {session[-1]},
    }


QUESTIONS = [
    "What did Omar rent on the coast trip?",
    "Where is Priya's sister moving?",
    "Who plays the cello?",
    "What closed on Elm Street?",
]


def _every_seed(cut: Any, rows: Any, seeds: Sequence[int]) -> list[str]:
    """The lookup before seeds were narrowed: every seed, whatever the others' documents."""
    return [cut[i].id for i in seeds]


def _ranked(engine: MemoryEngine, bank: str, question: str) -> list[tuple[str, float, float | None]]:
    result = engine.recall(question, bank=bank, reranker="learned")
    return [(m.id, m.score, m.relevance) for m in result.memories]


@pytest.mark.parametrize("documents", [True, False])
def test_only_seeds_sharing_a_document_with_another_candidate_are_looked_up(
    engine: MemoryEngine, monkeypatch: pytest.MonkeyPatch, documents: bool
) -> None:
    """The neighbours of a seed whose document no other candidate shares mark nothing (only a
    candidate that is not a seed is marked, beside a seed of its own document): they are not
    looked up, and without such a seed the statement is not sent. The learned ranking is the
    one every seed's lookup gives, question by question, with documents and without any."""
    bank = _bank()
    if documents:
        _retain(engine, bank)
    else:
        engine.retain([*SESSION, *OTHER, "Omar plays the cello.", "Priya runs on Sundays."], bank=bank)
    spy = _Spy()
    monkeypatch.setattr(pipeline, "neighbour_plan", spy)
    narrowed = {q: _ranked(engine, bank, q) for q in QUESTIONS}
    looked_up = [seeds for _, seeds, _ in spy.calls]
    monkeypatch.setattr(pipeline, "_seeds_sharing_a_document", _every_seed)
    spy.calls.clear()
    every = {q: _ranked(engine, bank, q) for q in QUESTIONS}
    assert narrowed == every
    assert all(narrowed.values())
    if not documents:
        # nothing to mark: no statement, where every seed's lookup sent one per recall
        assert looked_up == [] and len(spy.calls) == len(QUESTIONS)
    else:
        every_seed = {i for _, seeds, _ in spy.calls for i in seeds}
        assert looked_up and {i for seeds in looked_up for i in seeds} <= every_seed
