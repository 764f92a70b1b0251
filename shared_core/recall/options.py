"""The options of one recall, defined once.

:class:`RecallOptions` is the single definition: ``MemoryEngine.recall`` / ``arecall``, the
async engine and both adapters take their keyword arguments from it (:class:`RecallKwargs`
mirrors its fields for typed ``**kwargs``; a test keeps the two in step). Every option is
checked when the object is built, with an :class:`~shared_core.errors.InvalidOptionError`
naming the option (``bank``: :class:`~shared_core.errors.ConfigurationError`, as everywhere).

A new option is a field here (and in :class:`RecallKwargs`), read where the pipeline needs it.

>>> RecallOptions(budget="high", tags=["work"]).tags
('work',)
>>> RecallOptions(query_timestamp="2024-07-01").query_timestamp.isoformat()
'2024-07-01T00:00:00+00:00'
>>> RecallOptions(budget=None)
Traceback (most recent call last):
  ...
shared_core.errors.InvalidOptionError: budget: must be one of low, mid, high, adaptive, ...; got None
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, get_args

from shared_core.config import DEFAULT_BANK, DEFAULT_MAX_CHUNK_TOKENS, DEFAULT_MAX_TOKENS
from shared_core.errors import InvalidOptionError, InvalidQueryError
from shared_core.protocols import PairScorer
from shared_core.recall.budget import resolve_budget
from shared_core.recall.filters import FilterExpr, parse_filter
from shared_core.recall.query import TAGS_MATCH_MODES, TagsMatch, check_tags, check_types
from shared_core.recall.rerank import Reranker
from shared_core.storable import text_problem
from shared_core.types import ARM_NAMES, ArmName, FactType, TimeWindow, check_bank

__all__ = ["BUDGETS", "Budget", "RecallKwargs", "RecallOptions", "RerankerSpec", "recall_option_names"]

Budget = Literal["low", "mid", "high", "adaptive", "adaptive-low", "adaptive-mid", "adaptive-high"]
"""Candidates fetched per arm: fixed (100/300/1000) or scaled with ``max_tokens``."""
BUDGETS: tuple[Budget, ...] = get_args(Budget)

RerankerSpec = str | PairScorer | Reranker
"""``"passthrough"``/``"none"``, a cross-encoder name, a pair scorer, or a :class:`Reranker`."""

_REAL_DATETIME = _dt.datetime  # bound at import: langchain's mock_now patches the module attribute
_REAL_DATE = _dt.date


@contextmanager
def _named(option: str) -> Iterator[None]:
    """Re-raise a query error from a shared check as an error naming ``option``."""
    try:
        yield
    except InvalidOptionError:
        raise
    except InvalidQueryError as exc:
        raise InvalidOptionError(option, str(exc)) from None


_MIN_INSTANT = _dt.datetime(1, 1, 2, tzinfo=_dt.UTC)
_MAX_INSTANT = _dt.datetime(9999, 12, 30, tzinfo=_dt.UTC)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidOptionError(name, f"must be a positive integer, got {value!r}")
    return value


def _count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidOptionError(name, f"must be an integer >= 0, got {value!r}")
    return value


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidOptionError(name, f"must be True or False, got {value!r}")
    return value


def _instant(name: str, value: object) -> _dt.datetime:
    """A datetime, a date (midnight) or an ISO-8601 string, as aware UTC (naive = UTC)."""
    if isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = _REAL_DATETIME.fromisoformat(text)
        except ValueError:
            raise InvalidOptionError(name, f"is not an ISO-8601 date or datetime: {value!r}") from None
    elif isinstance(value, _REAL_DATE) and not isinstance(value, _REAL_DATETIME):
        value = _REAL_DATETIME(value.year, value.month, value.day)
    if not isinstance(value, _REAL_DATETIME):
        raise InvalidOptionError(
            name, f"must be a datetime, a date or an ISO-8601 string, got {type(value).__name__}"
        )
    try:
        utc = (
            value.replace(tzinfo=_dt.UTC)
            if value.tzinfo is None or value.utcoffset() is None
            else value.astimezone(_dt.UTC)
        )
    except OverflowError:
        utc = None
    # A day inside datetime's range: windows computed around the instant must not overflow.
    if utc is None or not _MIN_INSTANT <= utc <= _MAX_INSTANT:
        raise InvalidOptionError(
            name, f"{value.isoformat()} is outside the years 1..9999 (UTC), one day from either end"
        )
    return utc


def _window(value: object) -> TimeWindow:
    if isinstance(value, TimeWindow):
        return value
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 2:
        return TimeWindow(
            start=_instant("temporal_window", value[0]), end=_instant("temporal_window", value[1])
        )
    raise InvalidOptionError(
        "temporal_window", f"must be a TimeWindow or a (start, end) pair, got {type(value).__name__}"
    )


def _strings(name: str, value: object) -> Sequence[str] | str:
    if isinstance(value, str):  # one string is one value: checked like a list's items
        problem = text_problem(value)
        if problem is not None:
            raise InvalidOptionError(name, problem)
        return value
    if not isinstance(value, Iterable) or isinstance(value, bytes | Mapping):
        raise InvalidOptionError(name, f"must be a list of strings, got {type(value).__name__}")
    items = list(value)
    if not all(isinstance(v, str) for v in items):
        raise InvalidOptionError(name, "must hold strings only")
    for index, item in enumerate(items):
        problem = text_problem(item)
        if problem is not None:
            raise InvalidOptionError(name, f"[{index}] {problem}")
    return items


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallOptions:
    """Every option of one recall (the query itself aside), validated on construction.

    ``types`` and ``tags`` come out as tuples, ``query_timestamp`` as an aware UTC datetime,
    ``temporal_window`` as a :class:`~shared_core.types.TimeWindow`, ``arms`` as a frozenset.
    Change one with :func:`dataclasses.replace` (it validates again).
    """

    bank: str = DEFAULT_BANK
    max_tokens: int = DEFAULT_MAX_TOKENS
    budget: Budget = "mid"
    types: Sequence[FactType] | None = None
    tags: Sequence[str] | None = None
    tags_match: TagsMatch = "any"
    query_timestamp: _dt.datetime | _dt.date | str | None = None
    temporal_window: TimeWindow | tuple[Any, Any] | None = None
    include_chunks: bool = False
    max_chunk_tokens: int = DEFAULT_MAX_CHUNK_TOKENS
    reranker: RerankerSpec | None = None
    trace: bool = False
    arms: Iterable[ArmName] = field(default=frozenset(ARM_NAMES))
    filter: FilterExpr | Mapping[str, Any] | None = None
    k: int | None = None

    def __post_init__(self) -> None:
        check_bank(self.bank)
        _count("max_tokens", self.max_tokens)  # 0: no memories (with include_chunks, chunks only)
        _positive_int("max_chunk_tokens", self.max_chunk_tokens)
        if not isinstance(self.budget, str):
            raise InvalidOptionError(
                "budget", f"must be one of {', '.join(BUDGETS[:4])}, ...; got {self.budget!r}"
            )
        try:
            resolve_budget(self.budget, self.max_tokens)
        except InvalidQueryError as exc:
            raise InvalidOptionError("budget", str(exc)) from None
        if self.types is not None:
            with _named("types"):
                self._set("types", check_types(_strings("types", self.types)))
        if self.tags_match not in TAGS_MATCH_MODES:
            raise InvalidOptionError(
                "tags_match", f"must be one of {', '.join(TAGS_MATCH_MODES)}; got {self.tags_match!r}"
            )
        self._set(
            "tags", check_tags(None if self.tags is None else _strings("tags", self.tags), self.tags_match)[0]
        )
        if self.query_timestamp is not None:
            self._set("query_timestamp", _instant("query_timestamp", self.query_timestamp))
        if self.temporal_window is not None:
            self._set("temporal_window", _window(self.temporal_window))
        _flag("include_chunks", self.include_chunks)
        _flag("trace", self.trace)
        if isinstance(self.arms, str) or not isinstance(self.arms, Iterable):
            raise InvalidOptionError("arms", f"must be a collection of arm names, got {self.arms!r}")
        arms = frozenset(self.arms)
        if not arms or not arms <= set(ARM_NAMES):
            raise InvalidOptionError("arms", f"must be a non-empty subset of {list(ARM_NAMES)}")
        self._set("arms", arms)
        # PGVector's filter syntax or a filter tree; InvalidFilterError names the bad part.
        self._set("filter", parse_filter(self.filter))
        if self.k is not None:
            _positive_int("k", self.k)
        if self.reranker is not None and not isinstance(self.reranker, str | Reranker | PairScorer):
            raise InvalidOptionError(
                "reranker",
                "must be a model name, 'passthrough', a Reranker or an object with predict(); "
                f"got {type(self.reranker).__name__}",
            )

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)

    @property
    def timestamp(self) -> _dt.datetime | None:
        """``query_timestamp`` as validated (aware UTC)."""
        value = self.query_timestamp
        assert value is None or isinstance(value, _REAL_DATETIME)
        return value

    @property
    def window(self) -> TimeWindow | None:
        """``temporal_window`` as validated."""
        value = self.temporal_window
        assert value is None or isinstance(value, TimeWindow)
        return value

    @property
    def metadata_filter(self) -> FilterExpr | None:
        """``filter`` as validated (a filter tree)."""
        value = self.filter
        assert value is None or not isinstance(value, Mapping)
        return value

    @property
    def arm_names(self) -> frozenset[ArmName]:
        """``arms`` as validated."""
        return frozenset(self.arms)


class RecallKwargs(TypedDict, total=False):
    """:class:`RecallOptions`' fields as typed keyword arguments (``**kwargs: Unpack[...]``)."""

    bank: str
    max_tokens: int
    budget: Budget
    types: Sequence[FactType] | None
    tags: Sequence[str] | None
    tags_match: TagsMatch
    query_timestamp: _dt.datetime | _dt.date | str | None
    temporal_window: TimeWindow | tuple[Any, Any] | None
    include_chunks: bool
    max_chunk_tokens: int
    reranker: RerankerSpec | None
    trace: bool
    arms: Iterable[ArmName]
    filter: FilterExpr | Mapping[str, Any] | None
    k: int | None


def recall_option_names() -> tuple[str, ...]:
    """The names of every recall option, in definition order."""
    return tuple(f.name for f in dataclasses.fields(RecallOptions))
