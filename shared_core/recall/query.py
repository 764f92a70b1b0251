"""Pure query analysis: validation and bounding of the query, fact types and tag filters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

from shared_core.errors import InvalidQueryError
from shared_core.protocols import TokenCounter
from shared_core.storable import text_problem
from shared_core.types import FACT_TYPES, FactType

__all__ = [
    "KEYWORD_RANKINGS",
    "TAGS_MATCH_MODES",
    "KeywordRanking",
    "TagsMatch",
    "bound_query",
    "check_tags",
    "check_types",
]

TagsMatch = Literal["any", "all", "any_strict", "all_strict", "exact"]
TAGS_MATCH_MODES: tuple[TagsMatch, ...] = get_args(TagsMatch)
KeywordRanking = Literal["fulltext", "bm25"]
KEYWORD_RANKINGS: tuple[KeywordRanking, ...] = get_args(KeywordRanking)


def bound_query(query: object, counter: TokenCounter, max_tokens: int) -> tuple[str, bool]:
    """Validate a query and cut it to ``max_tokens``; return ``(text, was_truncated)``.

    NUL bytes are removed (Postgres text cannot hold them); a query that is empty or only
    whitespace (after that), or that holds a lone surrogate, is an :class:`InvalidQueryError`.

    >>> from shared_core.tokens import TiktokenCounter
    >>> bound_query("  where?  ", TiktokenCounter(), 500)
    ('where?', False)
    """
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}")
    text = query.replace("\x00", "").strip()
    if not text:
        raise InvalidQueryError("query is empty or only whitespace")
    problem = text_problem(text)
    if problem is not None:  # a lone surrogate: the tokenizers and Postgres cannot take it
        raise InvalidQueryError(f"query {problem}")
    if counter.count(text) > max_tokens:
        return counter.truncate(text, max_tokens).strip(), True
    return text, False


def check_types(types: Sequence[str] | str | None) -> tuple[FactType, ...]:
    """The fact types to search (all when None)."""
    if types is None:
        return FACT_TYPES
    if isinstance(types, str):
        types = [types]
    out: list[FactType] = []
    for t in types:
        if t not in FACT_TYPES:
            raise InvalidQueryError(f"unknown fact type {t!r}; expected some of {list(FACT_TYPES)}")
        out.append(t)
    if not out:
        raise InvalidQueryError("types must name at least one fact type (or be None for all)")
    return tuple(dict.fromkeys(out))


def check_tags(tags: Sequence[str] | str | None, tags_match: str) -> tuple[tuple[str, ...] | None, TagsMatch]:
    """Validate a tag filter. ``None``/empty tags mean "no filter", except for ``exact``,
    where they mean "only untagged memories"."""
    if tags_match not in TAGS_MATCH_MODES:
        raise InvalidQueryError(
            f"unknown tags_match {tags_match!r}; expected one of {list(TAGS_MATCH_MODES)}"
        )
    if tags is None:
        return None, tags_match
    if isinstance(tags, str):
        tags = [tags]
    if not all(isinstance(t, str) for t in tags):
        raise InvalidQueryError("tags must be strings")
    return tuple(dict.fromkeys(t.replace("\x00", "") for t in tags)), tags_match
