"""LLM-extracted facts retained end to end: a fake LangChain chat model (canned JSON, no
network) feeds :class:`LangChainFactExtractor`, and the items go through the real engine."""

from __future__ import annotations

import datetime as dt
import json

import psycopg
import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from shared_core import InvalidItemError, MemoryEngine, MemoryItem
from shared_core.extraction.facts import LangChainFactExtractor

REPLY = {
    "facts": [
        {
            "text": "Caroline's car broke down on the highway.",
            "fact_type": "experience",
            "entities": ["Caroline"],
            "occurred_start": "2023-05-07",
            "causal_relations": [],
        },
        {
            "text": "Caroline missed her job interview at Google.",
            "fact_type": "experience",
            "entities": ["Caroline", "Google"],
            "occurred_start": "2023-05-07",
            "causal_relations": [
                {"target_fact_index": 0, "relation_type": "caused_by"},
                {"target_fact_index": 5, "relation_type": "caused_by"},
            ],
        },
    ]
}


def test_extracted_facts_are_retained_with_their_causal_link(engine: MemoryEngine, bank: str) -> None:
    extractor = LangChainFactExtractor(FakeListChatModel(responses=[json.dumps(REPLY)]))
    items = extractor.extract_facts(
        ["Caroline: my car broke down yesterday, so I missed the Google interview."],
        mentioned_at=dt.datetime(2023, 5, 8, 13, 56),
    )
    cause, effect = engine.retain(items, bank=bank)

    with psycopg.connect(engine.dsn) as conn:
        links = conn.execute(
            """
            SELECT from_id::text, to_id::text, weight FROM memory_links
            WHERE bank_id = %(bank)s AND link_type = 'caused_by'""",
            {"bank": bank},
        ).fetchall()
    assert links == [(effect, cause, 1.0)]

    record = engine.get(effect, bank=bank)
    assert record is not None
    assert record.fact_type == "experience"
    assert set(record.entities) == {"Caroline", "Google"}
    assert record.occurred_start == dt.datetime(2023, 5, 7, tzinfo=dt.UTC)
    assert record.occurred_end is not None and record.occurred_end.date() == dt.date(2023, 5, 7)
    assert record.mentioned_at == dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
    assert record.metadata["source_text_index"] == 0


def test_retain_with_a_fact_extractor_uses_the_llm_only_when_passed(engine: MemoryEngine, bank: str) -> None:
    extractor = LangChainFactExtractor(FakeListChatModel(responses=[json.dumps(REPLY)]))
    text = "Caroline: my car broke down yesterday, so I missed the Google interview."
    ids = engine.retain([text], bank=bank, fact_extractor=extractor)
    assert [engine.get(i, bank=bank).text for i in ids] == [  # type: ignore[union-attr]
        f["text"] for f in REPLY["facts"]
    ]
    plain = engine.retain([text], bank=bank + "-plain")  # no extractor: stored as given
    assert engine.get(plain[0], bank=bank + "-plain").text == text  # type: ignore[union-attr]


def test_a_fact_extractor_needs_string_items(engine: MemoryEngine, bank: str) -> None:
    extractor = LangChainFactExtractor(FakeListChatModel(responses=[json.dumps(REPLY)]))
    with pytest.raises(InvalidItemError) as err:
        engine.retain(["fine", MemoryItem(text="not a string")], bank=bank, fact_extractor=extractor)
    assert err.value.index == 1
