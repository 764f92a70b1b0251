"""RecallOptions: every option validated once, with a typed error naming it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import inspect
import typing

import pytest

from shared_core import ConfigurationError, InvalidQueryError, MemoryEngine
from shared_core.engine import AsyncMemoryEngine
from shared_core.errors import InvalidOptionError
from shared_core.recall.options import RecallKwargs, RecallOptions, recall_option_names
from shared_core.types import TimeWindow


def test_recall_kwargs_mirror_the_options_type() -> None:
    hints = typing.get_type_hints(RecallOptions)
    kwargs = typing.get_type_hints(RecallKwargs)
    assert list(kwargs) == list(recall_option_names())
    assert all(kwargs[name] == hints[name] for name in kwargs)


@pytest.mark.parametrize("method", [MemoryEngine.recall, MemoryEngine.arecall, AsyncMemoryEngine.recall])
def test_engine_recall_signatures_come_from_the_options(method: object) -> None:
    params = inspect.signature(method).parameters  # type: ignore[arg-type]
    assert list(params) == ["self", "query", "options"]
    assert params["options"].kind is inspect.Parameter.VAR_KEYWORD


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("budget", None),
        ("budget", 5),
        ("budget", "enormous"),
        ("max_tokens", -1),
        ("max_tokens", "10"),
        ("max_tokens", True),
        ("max_chunk_tokens", -1),
        ("tags", 5),
        ("tags", [1, 2]),
        ("tags", "\ud800"),  # one tag as a bare string is checked like a list's (hypothesis found it)
        ("tags", ["ok", "\ud800"]),
        ("tags_match", "some"),
        ("tags_match", None),
        ("types", ["opinion"]),
        ("types", 3),
        ("query_timestamp", "yesterday"),
        ("query_timestamp", 1700000000),
        ("temporal_window", (1, 2, 3)),
        ("temporal_window", "2024"),
        ("temporal_window", ("2024-02-01", "2024-01-01")),
        ("include_chunks", "yes"),
        ("trace", 1),
        ("arms", []),
        ("arms", ["vector"]),
        ("arms", 7),
        ("reranker", 42),
    ],
)
def test_a_bad_option_raises_a_typed_error_naming_it(option: str, value: object) -> None:
    with pytest.raises(InvalidQueryError) as info:
        RecallOptions(**{option: value})  # type: ignore[arg-type]
    if isinstance(info.value, InvalidOptionError):
        assert info.value.option == option
    assert option in str(info.value) or "time window" in str(info.value)


@pytest.mark.parametrize("bank", ["", "  ", None, "x" * 201, "a\x00b"])
def test_a_bad_bank_is_a_configuration_error(bank: object) -> None:
    with pytest.raises(ConfigurationError, match="bank"):
        RecallOptions(bank=bank)  # type: ignore[arg-type]


def test_options_are_normalised() -> None:
    opts = RecallOptions(
        types="world",
        tags=["a", "a", "b"],
        query_timestamp="2024-07-01T12:00",
        temporal_window=(dt.date(2024, 1, 1), "2024-01-31T00:00:00+02:00"),
        arms=["keyword"],
        budget="adaptive",
    )
    assert opts.types == ("world",) and opts.tags == ("a", "b")
    assert opts.query_timestamp == dt.datetime(2024, 7, 1, 12, tzinfo=dt.UTC)
    assert opts.temporal_window == TimeWindow(start=dt.datetime(2024, 1, 1), end=dt.datetime(2024, 1, 30, 22))
    assert opts.arms == frozenset({"keyword"})
    assert dataclasses.replace(opts, budget="high").budget == "high"
    assert RecallOptions(query_timestamp=dt.date(2024, 3, 1)).query_timestamp == dt.datetime(
        2024, 3, 1, tzinfo=dt.UTC
    )
