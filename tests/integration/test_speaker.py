"""The learned reranker reads who says a memory (speaker_named): asked about Melanie, the turn
Melanie says ranks above the turn Caroline says to her, whether the speaker is written in the
text ("Melanie said, ...") or given as the memory's context. Real server, real models."""

from __future__ import annotations

import uuid

import pytest

from shared_core import MemoryEngine, MemoryItem

QUESTION = "What books has Melanie read?"
# Caroline's line names Melanie and asks about books: by its words and its cosine it is as
# close to the question as Melanie's answer, so only the speaker separates them.
CAROLINE = "Melanie, have you read any good books lately? I always love a book recommendation."
MELANIE = "I just read Charlotte's Web with the kids, such a lovely book."
FILLER = [
    ("Caroline", "The weather was great for the parade last weekend."),
    ("Melanie", "We went camping at the lake and roasted marshmallows."),
    ("Caroline", "My adoption interview went well, I am so relieved."),
    ("Melanie", "The kids painted a sunset on the porch yesterday."),
]


def _bank() -> str:
    return f"speaker-{uuid.uuid4().hex[:10]}"


def _learned(engine: MemoryEngine) -> bool:
    return engine.recall_context().reranker.is_learned


def _rank(engine: MemoryEngine, bank: str, ids: dict[str, str]) -> list[str]:
    result = engine.recall(QUESTION, bank=bank, k=len(ids))
    by_id = {v: k for k, v in ids.items()}
    return [by_id[m.id] for m in result.memories if m.id in by_id]


def test_the_named_persons_turn_ranks_above_a_turn_said_to_her(engine: MemoryEngine) -> None:
    if not _learned(engine):
        pytest.skip("a cross-encoder is the default reranker here")
    bank = _bank()
    turns = [("Caroline", CAROLINE), ("Melanie", MELANIE), *FILLER]
    ids = engine.retain(
        [MemoryItem(text=f'{who} said, "{text}"', document_id="chat") for who, text in turns], bank=bank
    )
    order = _rank(engine, bank, {"caroline": ids[0], "melanie": ids[1]})
    assert order == ["melanie", "caroline"]


def test_the_speaker_can_come_from_the_context(engine: MemoryEngine) -> None:
    # The same texts, without a speech form, in two banks that differ only in who the context
    # says spoke Melanie's answer: her, or Caroline. The semantic arm alone (the context also
    # enters the keyword index), so both banks give the reranker the same candidates.
    if not _learned(engine):
        pytest.skip("a cross-encoder is the default reranker here")
    turns = [("Caroline", CAROLINE), ("Melanie", MELANIE), *FILLER]
    relevance = {}
    for speaker in ("Melanie", "Caroline"):
        bank = _bank()
        items = [
            MemoryItem(text=text, context=speaker if i == 1 else who) for i, (who, text) in enumerate(turns)
        ]
        ids = engine.retain(items, bank=bank)
        result = engine.recall(QUESTION, bank=bank, k=len(turns), arms=("semantic",))
        relevance[speaker] = {m.id: m.relevance for m in result.memories}[ids[1]]
    assert relevance["Melanie"] is not None and relevance["Caroline"] is not None
    assert relevance["Melanie"] > relevance["Caroline"]
