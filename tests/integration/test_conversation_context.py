"""Conversation context at retain (issue 11.4, migration 0010), on the real server and models.

A short reply is indexed with the turn before it in its document, for the keyword and semantic
arms; what recall returns, and what the token budget counts, stays the memory's own text.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

from shared_core import EngineConfig, MemoryEngine, MemoryItem
from shared_core.errors import ConfigurationError, InvalidItemError
from tests.integration.test_keyword_stats import _counted, _stats

SESSION = [
    "Caroline: I started a pottery class on Tuesdays, it is so relaxing.",
    "Melanie: That sounds great. My kids and I went camping at the lake last month.",
    "Caroline: Camping is fun! Do you have any pets at home?",
    "Melanie: Yes, a cat named Pixel.",
    "Caroline: I am reading a novel about a lighthouse keeper.",
    "Melanie: I just finished painting a sunset over the sea.",
]
REPLY = SESSION[3]
QUESTION = "What pets does Melanie have at home?"


def _bank(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def no_context(engine: MemoryEngine) -> Iterator[MemoryEngine]:
    """The same server and models, indexing each memory's own text only."""
    eng = MemoryEngine(engine.dsn, config=dataclasses.replace(engine.config, retain_context="none"))
    yield eng
    eng.close()


def _rank(eng: MemoryEngine, bank: str, question: str, text: str) -> int | None:
    texts = [m.text for m in eng.recall(question, bank=bank, reranker="none").memories]
    return texts.index(text) if text in texts else None


def _rows(dsn: str, bank: str) -> dict[str, tuple[str | None, list[float]]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT text, index_context, embedding::text FROM memory_units WHERE bank_id = %s", (bank,)
        ).fetchall()
    return {t: (c, [float(x) for x in v.strip("[]").split(",")]) for t, c, v in rows}


def test_a_short_reply_is_found_through_the_turn_before_it(
    engine: MemoryEngine, no_context: MemoryEngine
) -> None:
    with_ctx, without = _bank("ctx"), _bank("noctx")
    for eng, bank in ((engine, with_ctx), (no_context, without)):
        eng.retain([MemoryItem(text=t, document_id="session-1") for t in SESSION], bank=bank)
    ranked = _rank(engine, with_ctx, QUESTION, REPLY)
    assert ranked is not None and ranked <= 1  # the question's own turn may come first
    before = _rank(no_context, without, QUESTION, REPLY)
    assert before is None or before > ranked


def test_recall_returns_and_budgets_the_memorys_own_text(engine: MemoryEngine) -> None:
    bank = _bank("own")
    engine.retain([MemoryItem(text=t, document_id="s") for t in SESSION], bank=bank)
    result = engine.recall(QUESTION, bank=bank, trace=True)
    reply = next(m for m in result.memories if m.text == REPLY)
    assert "pets" not in reply.text
    # the token budget counts the own text: a budget of exactly the reply's tokens keeps it
    tokens = engine.models.token_counter.count(REPLY)
    only = engine.recall(QUESTION, bank=bank, max_tokens=tokens, reranker="none")
    assert [m.text for m in only.memories] in ([REPLY], [])
    assert all(engine.models.token_counter.count(m.text) <= tokens for m in only.memories)
    context, _ = _rows(engine.dsn, bank)[REPLY]
    assert context is not None and "pets" in context


def test_no_context_without_a_document_or_for_a_first_turn(engine: MemoryEngine) -> None:
    bank = _bank("first")
    engine.retain([MemoryItem(text=t, document_id="s") for t in SESSION[:2]], bank=bank)
    engine.retain(["Yes, a cat named Pixel.", "Blue is my favourite colour."], bank=bank)
    rows = _rows(engine.dsn, bank)
    assert rows[SESSION[0]][0] is None
    assert rows[SESSION[1]][0] == SESSION[0]
    assert rows["Yes, a cat named Pixel."][0] is None and rows["Blue is my favourite colour."][0] is None
    own = engine.models.embedder.embed_documents(["Blue is my favourite colour.", SESSION[1]])
    assert np.allclose(rows["Blue is my favourite colour."][1], own[0], atol=1e-4)
    assert not np.allclose(rows[SESSION[1]][1], own[1], atol=1e-3)  # leans towards turn 0


def test_context_none_indexes_the_own_text_only(no_context: MemoryEngine) -> None:
    bank = _bank("none")
    no_context.retain([MemoryItem(text=t, document_id="s") for t in SESSION[:2]], bank=bank)
    rows = _rows(no_context.dsn, bank)
    assert all(context is None for context, _ in rows.values())
    own = no_context.models.embedder.embed_documents([SESSION[1]])
    assert np.allclose(rows[SESSION[1]][1], own[0], atol=1e-4)


def test_bank_statistics_stay_exact_with_context(engine: MemoryEngine) -> None:
    bank = _bank("stats")
    ids = engine.retain([MemoryItem(text=t, document_id="s") for t in SESSION], bank=bank)
    engine.retain([MemoryItem(text=t, document_id="t") for t in reversed(SESSION)], bank=bank)
    assert _stats(engine.dsn, bank) == _counted(engine.dsn, bank)
    engine.retain([MemoryItem(text=t, document_id="s") for t in SESSION[:3]], bank=bank)  # replaces "s"
    assert _stats(engine.dsn, bank) == _counted(engine.dsn, bank)
    engine.delete(ids[:1], bank=bank)  # already replaced: a no-op
    engine.delete(document_id="t", bank=bank)
    assert _stats(engine.dsn, bank) == _counted(engine.dsn, bank)
    (memories, _), _ = _counted(engine.dsn, bank)
    assert memories == 3


def test_a_retain_with_context_lands_whole_or_not_at_all(engine: MemoryEngine) -> None:
    bank = _bank("atomic")
    engine.retain(["an earlier memory"], bank=bank)
    before = _counted(engine.dsn, bank)
    items: list[object] = [MemoryItem(text=t, document_id="s") for t in SESSION]
    items.insert(3, {"text": "x", "document_id": "s", "occurred_start": "yesterday"})
    with pytest.raises(InvalidItemError, match="item 3"):
        engine.retain(items, bank=bank)
    assert _counted(engine.dsn, bank) == before == _stats(engine.dsn, bank)


@pytest.mark.parametrize(
    "field, value",
    [("retain_context", "next"), ("context_tokens", -1), ("context_vector_weight", float("nan"))],
)
def test_bad_context_settings_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ConfigurationError, match=field):
        EngineConfig(**{field: value})  # type: ignore[arg-type]
