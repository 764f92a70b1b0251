"""Tests of the optional LLM fact extractor, with LangChain's fake chat models (no network).

Two paths are covered: models without tool calling (``FakeListChatModel``,
``GenericFakeChatModel``), whose JSON reply is parsed from the message content, and a minimal
fake that supports ``bind_tools`` so ``with_structured_output`` is really used.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import (
    FakeListChatModel,
    GenericFakeChatModel,
)
from langchain_core.messages import AIMessage, BaseMessage
from pydantic import Field

from shared_core.errors import HindsightError, InvalidItemError
from shared_core.extraction.facts import (
    DEFAULT_PROMPT,
    CausalRelation,
    ExtractedFact,
    FactExtractionError,
    FactExtractor,
    FactList,
    LangChainFactExtractor,
    facts_to_items,
)
from shared_core.types import MemoryItem

UTC = dt.UTC
SAID = dt.datetime(2023, 5, 8, 13, 56, tzinfo=UTC)

STORY = {
    "facts": [
        {
            "text": "Caroline's car broke down on the highway.",
            "fact_type": "experience",
            "entities": ["Caroline"],
            "occurred_start": "2023-05-07",
            "occurred_end": None,
            "causal_relations": [],
        },
        {
            "text": "Caroline missed her job interview at Google.",
            "fact_type": "experience",
            "entities": ["Caroline", "Google", " google ", ""],
            "occurred_start": "2023-05-07T10:00:00",
            "occurred_end": "2023-05-07T13:00:00+02:00",
            "causal_relations": [{"target_fact_index": 0, "relation_type": "caused_by"}],
        },
        {
            "text": "Google is headquartered in Mountain View.",
            "fact_type": "world",
            "entities": ["Google", "Mountain View"],
            "occurred_start": None,
            "occurred_end": None,
            "causal_relations": [],
        },
    ]
}


def _fake(*replies: str) -> FakeListChatModel:
    return FakeListChatModel(responses=list(replies))


class RecordingFake(FakeListChatModel):
    """A fake that keeps the messages it was sent."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self.seen.append(list(messages))
        return super()._call(messages, *args, **kwargs)


class ToolCallingFake(GenericFakeChatModel):
    """A fake chat model with tool calling, so ``with_structured_output`` works on it."""

    bound: list[Any] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.bound.append((list(tools), kwargs))
        return self


def _tool_reply(args: dict[str, Any]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": "FactList", "args": args, "id": "call-1"}])


# --- the protocol and the models -------------------------------------------------------------------


def test_extractor_satisfies_protocol() -> None:
    assert isinstance(LangChainFactExtractor(_fake("{}")), FactExtractor)


def test_models_validate_the_documented_shape() -> None:
    facts = FactList.model_validate(STORY)
    assert [f.fact_type for f in facts.facts] == ["experience", "experience", "world"]
    assert facts.facts[1].causal_relations == [CausalRelation(target_fact_index=0, relation_type="caused_by")]
    assert ExtractedFact(text="x").entities == []
    schema = FactList.model_json_schema()
    assert "facts" in schema["properties"]


# --- JSON parsing path (no with_structured_output) -------------------------------------------------


def test_facts_become_memory_items_with_entities_dates_and_links() -> None:
    extractor = LangChainFactExtractor(_fake(json.dumps(STORY)))
    items = extractor.extract_facts(
        ["Caroline: my car broke down yesterday, so I missed the Google interview."],
        mentioned_at=SAID,
        context="chat",
    )
    assert len(items) == 3
    assert all(isinstance(i, MemoryItem) for i in items)
    car, missed, hq = items
    assert car.text == "Caroline's car broke down on the highway."
    assert car.fact_type == "experience" and hq.fact_type == "world"
    # a date-only start covers that whole day
    assert car.occurred_start == dt.datetime(2023, 5, 7, tzinfo=UTC)
    assert car.occurred_end == dt.datetime(2023, 5, 7, 23, 59, 59, 999999, tzinfo=UTC)
    # naive datetimes are UTC, aware ones are converted
    assert missed.occurred_start == dt.datetime(2023, 5, 7, 10, tzinfo=UTC)
    assert missed.occurred_end == dt.datetime(2023, 5, 7, 11, tzinfo=UTC)
    assert hq.occurred_start is None and hq.occurred_end is None
    # entities are stripped, de-duplicated and empty names dropped
    assert missed.entities == ("Caroline", "Google")
    assert missed.caused_by == (0,)
    assert car.caused_by == () and hq.caused_by == ()
    assert all(i.mentioned_at == SAID and i.context == "chat" for i in items)
    assert missed.metadata["source_text_index"] == 0


def test_prompt_carries_mentioned_at_and_the_numbered_texts() -> None:
    model = RecordingFake(responses=['{"facts": []}'])
    model.seen.clear()
    LangChainFactExtractor(model).extract_facts(
        ["first text", "second text"], mentioned_at=SAID, context="a diary"
    )
    (messages,) = model.seen
    joined = "\n".join(str(m.content) for m in messages)
    assert "2023-05-08T13:56:00+00:00" in joined
    assert "[0] first text" in joined and "[1] second text" in joined
    assert "a diary" in joined
    assert "causal_relations" in joined  # the JSON shape is described for models without tools


def test_code_fenced_json_and_a_bare_list_are_accepted() -> None:
    fenced = "Here you go:\n```json\n" + json.dumps(STORY) + "\n```\nAnything else?"
    bare = json.dumps(STORY["facts"][:1])
    extractor = LangChainFactExtractor(_fake(fenced, bare))
    assert len(extractor.extract_facts(["a"])) == 3
    assert [i.text for i in extractor.extract_facts(["b"])] == ["Caroline's car broke down on the highway."]


def test_generic_fake_chat_model_works_too() -> None:
    model = GenericFakeChatModel(messages=iter([AIMessage(content=json.dumps(STORY))]))
    items = LangChainFactExtractor(model).extract_facts(["x"], mentioned_at=SAID)
    assert items[1].caused_by == (0,)


def test_invalid_relations_are_dropped() -> None:
    reply = {
        "facts": [
            {
                "text": "A happened.",
                "causal_relations": [
                    {"target_fact_index": 0, "relation_type": "caused_by"},  # self-link
                    {"target_fact_index": 7, "relation_type": "caused_by"},  # out of range
                    {"target_fact_index": -1, "relation_type": "causes"},  # negative
                    {"target_fact_index": 1, "relation_type": "inspired"},  # unknown type
                    {"target_fact_index": "1", "relation_type": "enables"},  # string index: accepted
                    {"target_fact_index": True, "relation_type": "causes"},  # bool is not an index
                    {"relation_type": "causes"},  # no target
                    "garbage",
                ],
            },
            {
                "text": "B happened.",
                "causal_relations": [
                    {"target_fact_index": 0, "relation_type": "caused_by"},
                    {"target_fact_index": 0, "relation_type": "caused_by"},  # duplicate
                    {"target_fact_index": 0, "relation_type": "prevents"},
                ],
            },
        ]
    }
    a, b = LangChainFactExtractor(_fake(json.dumps(reply))).extract_facts(["x"])
    assert a.caused_by == () and a.causes == () and a.prevents == ()
    assert a.enables == (1,)
    assert b.caused_by == (0,) and b.prevents == (0,)


def test_bad_dates_and_fields_are_dropped_not_fatal() -> None:
    reply = {
        "facts": [
            {"text": "Bad date.", "occurred_start": "last Tuesday", "occurred_end": "2023-13-45"},
            {"text": "End before start.", "occurred_start": "2023-05-10", "occurred_end": "2023-05-01"},
            {"text": "Month only.", "occurred_start": "2023-05", "fact_type": "opinion", "entities": "Alice"},
            {"text": "Year only.", "occurred_start": "2021", "occurred_end": "2022"},
            {"text": "Zulu.", "occurred_start": "2023-05-07T10:00:00Z", "occurred_end": 12},
        ]
    }
    bad, backwards, month, year, zulu = LangChainFactExtractor(_fake(json.dumps(reply))).extract_facts(["x"])
    assert bad.occurred_start is None and bad.occurred_end is None
    # an end before the start is dropped; the start keeps its own (day) window
    assert backwards.occurred_start == dt.datetime(2023, 5, 10, tzinfo=UTC)
    assert backwards.occurred_end == dt.datetime(2023, 5, 10, 23, 59, 59, 999999, tzinfo=UTC)
    assert month.occurred_start == dt.datetime(2023, 5, 1, tzinfo=UTC)
    assert month.occurred_end == dt.datetime(2023, 5, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert month.fact_type == "world"  # unknown fact types fall back to world
    assert month.entities == ("Alice",)  # a lone string is one entity
    assert year.occurred_start == dt.datetime(2021, 1, 1, tzinfo=UTC)
    assert year.occurred_end == dt.datetime(2022, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)
    assert zulu.occurred_start == dt.datetime(2023, 5, 7, 10, tzinfo=UTC)
    assert zulu.occurred_end is None


def test_facts_without_text_are_dropped_and_links_renumbered() -> None:
    reply = {
        "facts": [
            {"text": "   "},
            {"text": "Rain fell."},
            "not a fact",
            {
                "text": "The match was cancelled.",
                "causal_relations": [
                    {"target_fact_index": 1, "relation_type": "caused_by"},
                    {"target_fact_index": 0, "relation_type": "caused_by"},
                ],
            },
        ]
    }
    items = LangChainFactExtractor(_fake(json.dumps(reply))).extract_facts(["x"])
    assert [i.text for i in items] == ["Rain fell.", "The match was cancelled."]
    assert items[1].caused_by == (0,)  # index 1 renumbered to 0; the link to a dropped fact goes


def test_empty_entities_leave_extraction_to_the_engine() -> None:
    reply = {"facts": [{"text": "It rained.", "entities": []}, {"text": "No key."}]}
    items = LangChainFactExtractor(_fake(json.dumps(reply))).extract_facts(["x"])
    assert [i.entities for i in items] == [None, None]


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("I could not find any facts, sorry.", "no JSON"),
        ('{"facts": [{"text": "a"}', "no JSON"),
        ('{"statements": []}', "facts"),
        ('{"facts": "a, b"}', "facts"),
        ("42", "facts"),
    ],
)
def test_malformed_output_raises_a_typed_error_naming_the_problem(reply: str, problem: str) -> None:
    # max_concurrency=1: a FakeListChatModel answers in call order
    extractor = LangChainFactExtractor(_fake('{"facts": []}', reply), batch_size=1, max_concurrency=1)
    with pytest.raises(FactExtractionError) as err:
        extractor.extract_facts(["fine", "bad"])
    assert isinstance(err.value, InvalidItemError) and isinstance(err.value, HindsightError)
    assert err.value.index == 1  # the first text of the failing batch
    assert problem in str(err.value)


# --- batching ---------------------------------------------------------------------------------------


def test_batches_offset_the_fact_indexes() -> None:
    first = {
        "facts": [
            {"text": "A0", "causal_relations": []},
            {"text": "A1", "causal_relations": [{"target_fact_index": 0, "relation_type": "caused_by"}]},
        ]
    }
    second = {
        "facts": [
            {"text": "B0", "source_index": 5},
            {
                "text": "B1",
                "source_index": 1,
                "causal_relations": [
                    {"target_fact_index": 0, "relation_type": "caused_by"},
                    {"target_fact_index": 2, "relation_type": "caused_by"},
                ],
            },
        ]
    }
    third = {"facts": [{"text": "C0"}]}
    model = RecordingFake(responses=[json.dumps(first), json.dumps(second), json.dumps(third)])
    model.seen.clear()
    items = LangChainFactExtractor(model, batch_size=2, max_concurrency=1).extract_facts(
        ["t0", "t1", "t2", "t3", "t4"]
    )
    assert len(model.seen) == 3
    assert [i.text for i in items] == ["A0", "A1", "B0", "B1", "C0"]
    assert items[1].caused_by == (0,)
    assert items[3].caused_by == (2,)  # batch-local 0 is global 2; local 2 is out of range
    # source indexes are batch-local; one outside the batch is ignored; a one-text batch is
    # the source of all its facts
    assert "source_text_index" not in items[0].metadata
    assert "source_text_index" not in items[2].metadata
    assert items[3].metadata["source_text_index"] == 3
    assert items[4].metadata["source_text_index"] == 4


def test_no_texts_makes_no_calls() -> None:
    model = RecordingFake(responses=[])
    model.seen.clear()
    assert LangChainFactExtractor(model).extract_facts([]) == []
    assert model.seen == []


def test_blank_texts_are_skipped() -> None:
    model = RecordingFake(responses=['{"facts": [{"text": "x"}]}'])
    model.seen.clear()
    assert LangChainFactExtractor(model).extract_facts(["  ", ""]) == []
    assert model.seen == []


def test_bad_configuration_is_rejected() -> None:
    from shared_core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="batch_size"):
        LangChainFactExtractor(_fake("{}"), batch_size=0)
    with pytest.raises(ConfigurationError, match="chat model"):
        LangChainFactExtractor(object())
    with pytest.raises(ConfigurationError, match="texts"):
        LangChainFactExtractor(_fake("{}")).extract_facts("one string")  # type: ignore[arg-type]


# --- with_structured_output path --------------------------------------------------------------------


def test_structured_output_is_used_when_the_model_supports_tools() -> None:
    model = ToolCallingFake(messages=iter([_tool_reply(STORY)]))
    model.bound.clear()
    items = LangChainFactExtractor(model).extract_facts(["x"], mentioned_at=SAID)
    ((tools, kwargs),) = model.bound
    assert tools == [FactList] and kwargs.get("tool_choice") == "any"
    assert [i.text for i in items][1] == "Caroline missed her job interview at Google."
    assert items[1].caused_by == (0,)
    assert items[0].occurred_start == dt.datetime(2023, 5, 7, tzinfo=UTC)


def test_structured_output_that_fails_strict_validation_is_parsed_leniently() -> None:
    args = {
        "facts": [
            {"text": "A."},
            {
                "text": "B.",
                "fact_type": "opinion",
                "causal_relations": [
                    {"target_fact_index": 0, "relation_type": "inspired_by"},
                    {"target_fact_index": 0, "relation_type": "causes"},
                ],
            },
        ]
    }
    model = ToolCallingFake(messages=iter([_tool_reply(args)]))
    _, b = LangChainFactExtractor(model).extract_facts(["x"])
    assert b.fact_type == "world" and b.causes == (0,) and b.caused_by == ()


def test_structured_output_without_a_tool_call_falls_back_to_the_content() -> None:
    model = ToolCallingFake(messages=iter([AIMessage(content=json.dumps(STORY))]))
    assert len(LangChainFactExtractor(model).extract_facts(["x"])) == 3


def test_structured_output_with_nothing_usable_raises() -> None:
    model = ToolCallingFake(messages=iter([AIMessage(content="no idea")]))
    with pytest.raises(FactExtractionError, match="no JSON"):
        LangChainFactExtractor(model).extract_facts(["x"])


# --- async ------------------------------------------------------------------------------------------


class KeyedFake(FakeListChatModel):
    """Replies by the text it is asked about, so concurrent calls stay deterministic."""

    replies: dict[str, str] = Field(default_factory=dict)

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        asked = str(messages[-1].content)
        return next(r for key, r in self.replies.items() if f"] {key}" in asked)


async def test_async_twin_matches_sync() -> None:
    replies = {
        "a": json.dumps(STORY),
        "b": json.dumps(
            {
                "facts": [
                    {
                        "text": "Later fact.",
                        "causal_relations": [{"target_fact_index": 0, "relation_type": "caused_by"}],
                    }
                ]
            }
        ),
    }
    model = KeyedFake(responses=[], replies=replies)
    extractor = LangChainFactExtractor(model, batch_size=1)
    sync_items = extractor.extract_facts(["a", "b"], mentioned_at=SAID)
    async_items = await extractor.aextract_facts(["a", "b"], mentioned_at=SAID)
    assert sync_items == async_items
    assert [i.text for i in async_items][-1] == "Later fact."
    assert async_items[3].caused_by == ()  # the second batch's self-link was dropped
    assert async_items[3].metadata["source_text_index"] == 1


async def test_async_malformed_output_names_the_batch() -> None:
    model = KeyedFake(responses=[], replies={"a": '{"facts": []}', "b": "nope"})
    with pytest.raises(FactExtractionError, match="no JSON") as err:
        await LangChainFactExtractor(model, batch_size=1).aextract_facts(["a", "b"])
    assert err.value.index == 1


async def test_async_structured_output() -> None:
    model = ToolCallingFake(messages=iter([_tool_reply(STORY)]))
    items = await LangChainFactExtractor(model).aextract_facts(["x"])
    assert items[1].caused_by == (0,)


# --- pure conversion --------------------------------------------------------------------------------


def test_facts_to_items_accepts_models_and_dicts() -> None:
    items = facts_to_items(FactList.model_validate(STORY), mentioned_at=SAID)
    assert items == facts_to_items(STORY, mentioned_at=SAID)
    assert items[1].caused_by == (0,)


def test_default_prompt_mentions_the_reference_time_placeholder() -> None:
    assert "{mentioned_at}" in DEFAULT_PROMPT
