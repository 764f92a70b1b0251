"""Hostile input (issue 14, items 3 and 4): every bad value gets a typed error, or works.

A table of hand-written cases (each bad value at the start and in the middle of a batch of
valid items, so the error must name the right index and nothing of the batch may land), plus
hypothesis strategies over text, tags, metadata, banks and recall options. The only outcomes
allowed: success, or a :class:`~shared_core.errors.HindsightError` subclass with nothing
written.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import MemoryEngine
from shared_core.errors import ConfigurationError, HindsightError, InvalidItemError
from shared_core.types import MemoryItem

_TABLES = (
    "banks",
    "documents",
    "chunks",
    "memory_units",
    "entities",
    "unit_entities",
    "memory_links",
    "bank_stats",
    "term_stats",
)
_DIM = 384
_ONES = [1.0] * _DIM
_UTC = dt.UTC
_PLUS5 = dt.timezone(dt.timedelta(hours=5))
_MINUS5 = dt.timezone(dt.timedelta(hours=-5))
_OK = "ok"


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


class _Weird:
    def __repr__(self) -> str:
        raise RuntimeError("repr of a hostile object")


@dataclass(frozen=True)
class Case:
    """One retain call; ``field`` (and ``index``) name what the error must mention."""

    name: str
    items: Any
    bank: Any = "hostile"
    document_id: Any = None
    error: type[HindsightError] | None = None
    index: int | None = None
    field: str | None = None


# (field name, bad value for MemoryItem field, expected error or None for success)
_ITEM_VALUES: list[tuple[str, str, Any, bool]] = [
    # text
    ("text", "nul", "a\x00b", False),
    ("text", "surrogate", "a\ud800b", False),
    ("text", "low-surrogate", "\udfff", False),
    ("text", "empty", "", False),
    ("text", "blank", " \t\n ", False),
    ("text", "int", 5, False),
    ("text", "none", None, False),
    ("text", "bytes", b"bytes", False),
    ("text", "list", ["a"], False),
    ("text", "emoji", "🦜 parrots 🦜", True),
    ("text", "rtl", "مرحبا بالعالم", True),
    ("text", "zero-width", "\u200b", True),
    ("text", "combining", "e\u0301" * 50, True),
    ("text", "control", "\x01\x02\x1f", True),
    ("text", "cjk", "東京で会議がありました。", True),
    ("text", "sql", "'); DROP TABLE memory_units; --", True),
    ("text", "tsquery", "a & | ! :* <-> (", True),
    ("text", "long-word", "x" * 5000, True),
    # context
    ("context", "nul", "a\x00", False),
    ("context", "surrogate", "\ud800", False),
    ("context", "int", 5, False),
    ("context", "over-1mb", "word " * 220_000, False),
    ("context", "256kb+1", "w" * (256 * 1024 + 1), False),
    ("context", "empty", "", True),
    ("context", "normal", "from a chat", True),
    # tags
    ("tags", "3000-chars", ["x" * 3000], False),
    ("tags", "nul", ["a\x00"], False),
    ("tags", "surrogate", ["\ud800"], False),
    ("tags", "str", "notalist", False),
    ("tags", "int", 5, False),
    ("tags", "int-entry", [5], False),
    ("tags", "none-entry", [None], False),
    ("tags", "nested", [["a"]], False),
    ("tags", "mapping", {"a": 1}, False),
    ("tags", "1200-bytes", ["é" * 600], False),
    ("tags", "600-bytes", ["é" * 300], True),
    ("tags", "dupes", ["a"] * 500, True),
    ("tags", "empty-tag", [""], True),
    ("tags", "set", {"a", "b"}, True),
    # metadata
    ("metadata", "nul-value", {"k": "a\x00"}, False),
    ("metadata", "nul-key", {"a\x00": 1}, False),
    ("metadata", "surrogate-value", {"k": "\ud800"}, False),
    ("metadata", "surrogate-key", {"\ud800": 1}, False),
    ("metadata", "5000-deep", _nested(5000), False),
    ("metadata", "101-deep", _nested(101), False),
    ("metadata", "99-deep", _nested(99), True),
    ("metadata", "nan", {"k": math.nan}, False),
    ("metadata", "inf", {"k": math.inf}, False),
    ("metadata", "object", {"k": object()}, False),
    ("metadata", "weird", {"k": _Weird()}, False),
    ("metadata", "tuple-key", {(1, 2): 1}, False),
    ("metadata", "int", 5, False),
    ("metadata", "str", "s", False),
    ("metadata", "list", [1], False),
    ("metadata", "huge-int", {"k": 10**5000}, False),
    ("metadata", "bytes", {"k": b"x"}, False),
    ("metadata", "nul-deep", {"a": [{"b": ["\x00"]}]}, False),
    ("metadata", "big-int", {"k": 2**70}, True),
    ("metadata", "datetime", {"k": dt.datetime(2020, 1, 1)}, True),
    ("metadata", "set", {"k": {1, 2}}, True),
    ("metadata", "int-key", {1: "x"}, True),
    ("metadata", "neg-zero", {"k": -0.0}, True),
    ("metadata", "unicode", {"ключ": "значение"}, True),
    # document_id
    ("document_id", "int", 5, False),
    ("document_id", "nul", "a\x00", False),
    ("document_id", "surrogate", "\ud800", False),
    ("document_id", "3000-chars", "x" * 3000, False),
    ("document_id", "float", 5.0, False),
    ("document_id", "list", ["d"], False),
    ("document_id", "uuid-like", str(uuid.uuid4()), True),
    # proof_count
    ("proof_count", "zero", 0, False),
    ("proof_count", "negative", -1, False),
    ("proof_count", "2**31", 2**31, False),
    ("proof_count", "bool", True, False),
    ("proof_count", "float", 1.5, False),
    ("proof_count", "str", "3", False),
    ("proof_count", "none", None, False),
    ("proof_count", "max", 2**31 - 1, True),
    # embedding
    ("embedding", "all-zero", [0.0] * _DIM, False),
    ("embedding", "nan", [math.nan, *_ONES[1:]], False),
    ("embedding", "inf", [math.inf, *_ONES[1:]], False),
    ("embedding", "float32-overflow", [1e39] * _DIM, True),
    ("embedding", "short", _ONES[:-1], False),
    ("embedding", "empty", [], False),
    ("embedding", "str", "abc", False),
    ("embedding", "2d", [_ONES], False),
    ("embedding", "strings", ["a"] * _DIM, False),
    ("embedding", "16001-dims", [1.0] * 16001, False),
    ("embedding", "ok", _ONES, True),
    ("embedding", "float64-huge", [1e300] * _DIM, True),
    ("embedding", "mixed-sign", [(-1.0) ** i for i in range(_DIM)], True),
    ("embedding", "one-hot", [1.0] + [0.0] * (_DIM - 1), True),
    ("embedding", "tiny", [1e-30] * _DIM, True),
    ("embedding", "huge", [1e30] * _DIM, True),
    ("embedding", "denormal", [1e-45] * _DIM, True),
    # datetimes
    ("occurred_start", "year1-aware", dt.datetime(1, 1, 1, 1, tzinfo=_PLUS5), False),
    ("occurred_start", "year9999-aware", dt.datetime(9999, 12, 31, 23, tzinfo=_MINUS5), False),
    ("occurred_start", "year9999-utc", dt.datetime(9999, 12, 31, tzinfo=_UTC), False),
    ("occurred_start", "year1-naive", dt.datetime(1, 1, 1), False),
    ("occurred_start", "str", "2020-01-01", False),
    ("occurred_start", "date", dt.date(2020, 1, 1), False),
    ("occurred_start", "int", 5, False),
    ("occurred_start", "ok", dt.datetime(2020, 5, 1, tzinfo=_PLUS5), True),
    ("occurred_start", "year2", dt.datetime(2, 1, 1, tzinfo=_UTC), True),
    ("occurred_start", "year9998", dt.datetime(9998, 1, 1, tzinfo=_UTC), True),
    ("mentioned_at", "year1-aware", dt.datetime(1, 1, 1, tzinfo=_PLUS5), False),
    ("mentioned_at", "year9999-aware", dt.datetime(9999, 12, 31, 23, tzinfo=_MINUS5), False),
    ("mentioned_at", "str", "yesterday", False),
    ("mentioned_at", "year9998", dt.datetime(9998, 6, 1), True),
    ("occurred_end", "year9999-aware", dt.datetime(9999, 12, 31, 23, tzinfo=_MINUS5), False),
    ("occurred_end", "float", 1.5, False),
    # fact_type
    ("fact_type", "bogus", "bogus", False),
    ("fact_type", "int", 5, False),
    ("fact_type", "none", None, False),
    ("fact_type", "list", ["world"], False),
    ("fact_type", "experience", "experience", True),
    # entities
    ("entities", "int-entry", [5], False),
    ("entities", "str", "Alice", False),
    ("entities", "3000-chars", ["x" * 3000], False),
    ("entities", "surrogate", ["\ud800"], False),
    ("entities", "nul", ["a\x00"], False),
    ("entities", "int", 5, False),
    ("entities", "empty", [], True),
    ("entities", "names", ["Alice", "Google"], True),
    # references
    ("caused_by", "out-of-range", [99], False),
    ("caused_by", "negative", [-1], False),
    ("caused_by", "not-uuid", ["not-a-uuid"], False),
    ("caused_by", "bool", [True], False),
    ("caused_by", "str", "abc", False),
    ("caused_by", "float", [1.5], False),
    ("caused_by", "missing-id", [str(uuid.uuid4())], False),
    ("caused_by", "surrogate", ["\ud800"], False),
    ("causes", "int", 5, False),
    ("enables", "nul", ["a\x00"], False),
    ("prevents", "none", [None], False),
]

_VALID = [
    {"text": "Alice joined Google in March 2021.", "tags": ["t"]},
    {"text": "Bob moved to Paris last spring.", "metadata": {"src": "chat"}},
    {"text": "Carol adopted a heron called Pip."},
]


def _item_cases() -> Iterator[Case]:
    # A bad value first, in the middle and last of a batch (the error must name its index);
    # a value that must work, once (success runs the whole pipeline, which is slower).
    for field, label, value, ok in _ITEM_VALUES:
        for position in (0, 2, 3) if not ok else (0,):
            items = [dict(v) for v in (*_VALID, *_VALID[:1])]
            items[position][field] = value
            if field == "occurred_end" and not ok:
                items[position]["occurred_start"] = dt.datetime(2020, 1, 1, tzinfo=_UTC)
            yield Case(
                name=f"{field}-{label}-at-{position}",
                items=items,
                error=None if ok else InvalidItemError,
                index=position,
                field=field,
            )


def _container_cases() -> Iterator[Case]:
    bad: list[tuple[str, Any, bool]] = [
        ("int", 5, False),
        ("none", None, False),
        ("str", "just text", False),
        ("bytes", b"x", False),
        ("dict", {"text": "x"}, False),
        ("memory-item", MemoryItem(text="x"), False),
        ("int-item", [5], False),
        ("none-item", [None], False),
        ("misspelt", [{"txt": "x"}], False),
        ("int-key", [{1: "x", "text": "y"}], False),
        ("unknown-field", [{"text": "x", "bogus": 1}], False),
        ("bytes-item", [b"x"], False),
        ("float-item", [1.5], False),
        ("generator", (t for t in ["gen one", "gen two"]), True),
        ("tuple", ("tuple one",), True),
        ("memory-items", [MemoryItem(text="m")], True),
    ]
    for label, items, ok in bad:
        yield Case(name=f"items-{label}", items=items, error=None if ok else InvalidItemError)


def _bank_cases() -> Iterator[Case]:
    bad: list[tuple[str, Any, bool]] = [
        ("empty", "", False),
        ("blank", "   ", False),
        ("nul", "a\x00", False),
        ("surrogate", "\ud800", False),
        ("201-chars", "x" * 201, False),
        ("int", 5, False),
        ("none", None, False),
        ("bytes", b"b", False),
        ("list", ["b"], False),
        ("200-chars", "y" * 200, True),
        ("emoji", "bank🦜", True),
        ("sql", "b'; --", True),
        ("4-byte-200", "𝔅" * 200, True),
    ]
    for label, bank, ok in bad:
        yield Case(
            name=f"bank-{label}", items=["bank case"], bank=bank, error=None if ok else ConfigurationError
        )
    for label, doc, ok in [
        ("int", 5, False),
        ("surrogate", "\ud800", False),
        ("nul", "\x00", False),
        ("long", "d" * 2000, False),
        ("ok", "doc-1", True),
    ]:
        yield Case(
            name=f"document-param-{label}",
            items=["doc case", "doc case 2"],
            document_id=doc,
            error=None if ok else InvalidItemError,
            index=0,
            field="document_id",
        )


CASES = [*_item_cases(), *_container_cases(), *_bank_cases()]


@pytest.fixture(autouse=True, scope="module")
def _schema(engine: MemoryEngine) -> Iterator[None]:
    engine.stats("hostile")  # the schema exists before the first footprint is taken
    yield
    for conn in _connections.values():
        conn.close()


_COUNTS = "SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in _TABLES)
_connections: dict[str, psycopg.Connection[Any]] = {}


def _footprint(dsn: str) -> tuple[int, ...]:
    """Row counts of every table (one statement on a connection kept for the module)."""
    conn = _connections.get(dsn)
    if conn is None or conn.closed:
        conn = _connections[dsn] = psycopg.connect(dsn, autocommit=True)
    row = conn.execute(_COUNTS).fetchone()
    assert row is not None
    return tuple(row)


def _attempt(call: Callable[[], Any], dsn: str) -> tuple[Any, BaseException | None]:
    before = _footprint(dsn)
    try:
        return call(), None
    except HindsightError as exc:
        assert _footprint(dsn) == before, f"{type(exc).__name__} but rows were written"
        return None, exc
    except Exception as exc:  # anything else is a defect
        raise AssertionError(f"untyped error {type(exc).__name__}: {exc!r}"[:500]) from exc


def test_the_table_has_at_least_300_cases() -> None:
    assert len(CASES) >= 300, len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_retain(engine: MemoryEngine, case: Case) -> None:
    kwargs: dict[str, Any] = {"bank": case.bank, "progress": False}
    if case.document_id is not None:
        kwargs["document_id"] = case.document_id
    result, error = _attempt(lambda: engine.retain(case.items, **kwargs), engine.dsn)
    if case.error is None:
        assert error is None, f"expected success, got {error!r}"
        assert isinstance(result, list) and all(isinstance(i, str) for i in result)
        return
    assert isinstance(error, case.error), f"expected {case.error.__name__}, got {error!r}"
    if case.index is not None:
        assert isinstance(error, InvalidItemError) and error.index == case.index, error
    if case.field is not None:
        assert case.field in str(error), error


def test_empty_retain_returns_an_empty_list(engine: MemoryEngine) -> None:
    assert engine.retain([], bank="hostile") == []


# ------------------------------------------------------------------------------ hypothesis
_any_char = st.characters(exclude_categories=())  # surrogates and NUL included
_hostile_text = st.one_of(
    st.text(_any_char, max_size=40), st.text(st.sampled_from("\x00\ud800\udfff a\u200b🦜é東"), max_size=12)
)
_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), _hostile_text)
_metadata = st.dictionaries(
    _hostile_text,
    st.recursive(
        _json_leaf,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_hostile_text, inner, max_size=3),
        max_leaves=8,
    ),
    max_size=4,
)
_SETTINGS = settings(
    max_examples=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_SETTINGS
@given(text=_hostile_text, tags=st.lists(_hostile_text, max_size=3), metadata=_metadata)
def test_hypothesis_items(engine: MemoryEngine, text: str, tags: list[str], metadata: dict[str, Any]) -> None:
    items = [{"text": "A valid neighbour."}, {"text": text, "tags": tags, "metadata": metadata}]
    _, error = _attempt(lambda: engine.retain(items, bank="hostile-hyp", progress=False), engine.dsn)
    if isinstance(error, InvalidItemError):
        assert error.index == 1


@_SETTINGS
@given(bank=st.one_of(_hostile_text, st.integers(), st.none()))
def test_hypothesis_banks(engine: MemoryEngine, bank: Any) -> None:
    _attempt(lambda: engine.retain(["bank probe"], bank=bank, progress=False), engine.dsn)
    _attempt(lambda: engine.recall("bank probe", bank=bank), engine.dsn)
    _attempt(lambda: engine.stats(bank), engine.dsn)


_option_values = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    _hostile_text,
    st.lists(_hostile_text, max_size=2),
    st.booleans(),
    st.datetimes(),
    st.dates(),
    st.tuples(st.datetimes(), st.datetimes()),
)
_OPTIONS = (
    "max_tokens",
    "budget",
    "types",
    "tags",
    "tags_match",
    "query_timestamp",
    "temporal_window",
    "include_chunks",
    "max_chunk_tokens",
    "arms",
)


@_SETTINGS
@given(query=_hostile_text, option=st.sampled_from(_OPTIONS), value=_option_values)
def test_hypothesis_recall_options(engine: MemoryEngine, query: str, option: str, value: Any) -> None:
    _attempt(lambda: engine.recall(query, bank="hostile", **{option: value}), engine.dsn)


_RECALL_CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("budget-none", {"budget": None}, False),
    ("budget-int", {"budget": 5}, False),
    ("budget-bogus", {"budget": "bogus"}, False),
    ("budget-high", {"budget": "high"}, True),
    ("max-tokens-neg", {"max_tokens": -1}, False),
    ("max-tokens-str", {"max_tokens": "5"}, False),
    ("max-tokens-huge", {"max_tokens": 10**20}, True),
    ("types-bogus", {"types": ["bogus"]}, False),
    ("types-int", {"types": 5}, False),
    ("tags-int", {"tags": 5}, False),
    ("tags-surrogate", {"tags": ["\ud800"]}, False),
    ("tags-nul", {"tags": ["a\x00"]}, False),
    ("tags-match-bogus", {"tags_match": "bogus"}, False),
    ("ts-iso", {"query_timestamp": "2024-03-01T12:00:00+00:00"}, True),
    ("ts-iso-date", {"query_timestamp": "2024-03-01"}, True),
    ("ts-date", {"query_timestamp": dt.date(2024, 3, 1)}, True),
    ("ts-garbage", {"query_timestamp": "not a date"}, False),
    ("ts-int", {"query_timestamp": 5}, False),
    ("ts-9999", {"query_timestamp": dt.datetime(9999, 12, 31, 23, tzinfo=_MINUS5)}, False),
    ("window-tuple", {"temporal_window": (dt.datetime(2020, 1, 1), dt.datetime(2021, 1, 1))}, True),
    ("window-int", {"temporal_window": 5}, False),
    ("chunks-neg", {"max_chunk_tokens": -5}, False),
    ("arms-bogus", {"arms": ["bogus"]}, False),
    ("arms-int", {"arms": 5}, False),
    ("reranker-unloadable", {"reranker": "bogus"}, True),
]


@pytest.mark.parametrize(("name", "options", "ok"), _RECALL_CASES, ids=[c[0] for c in _RECALL_CASES])
def test_hostile_recall_options(engine: MemoryEngine, name: str, options: dict[str, Any], ok: bool) -> None:
    _, error = _attempt(
        lambda: engine.recall("Where does Alice work?", bank="hostile", **options), engine.dsn
    )
    if ok:
        assert error is None, f"expected success, got {error!r}"
    else:
        assert error is not None
        option = next(iter(options))
        assert option in str(error) or option.replace("_", " ") in str(error), error


@pytest.mark.parametrize(
    "query",
    ["", "   ", "\ud800", "a\x00b", 5, None, b"q", "x" * 100_000, "🦜" * 1000, "' OR 1=1 --", "a & | !"],
)
def test_hostile_queries(engine: MemoryEngine, query: Any) -> None:
    _attempt(lambda: engine.recall(query, bank="hostile"), engine.dsn)


def test_empty_inputs_through_the_adapters(engine: MemoryEngine) -> None:
    from hindsight_langchain import HindsightRetriever as LangChainRetriever
    from hindsight_llamaindex import HindsightRetriever as LlamaIndexRetriever

    assert LangChainRetriever(engine=engine, bank="hostile").add_documents([]) == []
    assert LlamaIndexRetriever(engine=engine, bank="hostile").insert([]) == []
