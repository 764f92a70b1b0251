"""Pure query analysis: validation, bounding, keyword terms, tag-filter semantics."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from shared_core.errors import InvalidQueryError
from shared_core.protocols import TokenCounter
from shared_core.text import cjk_bigrams
from shared_core.types import FACT_TYPES, FactType

__all__ = ["KEYWORD_RANKINGS", "TAGS_MATCH_MODES", "KeywordRanking", "KeywordTerms", "TagsMatch",
           "bound_query", "check_tags",
           "check_types", "keyword_terms"]

TagsMatch = Literal["any", "all", "any_strict", "all_strict", "exact"]
TAGS_MATCH_MODES: tuple[TagsMatch, ...] = get_args(TagsMatch)
KeywordRanking = Literal["fulltext", "bm25"]
KEYWORD_RANKINGS: tuple[KeywordRanking, ...] = get_args(KeywordRanking)

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
# Postgres rejects tsquery lexemes longer than this; such "words" are never useful terms.
_MAX_TERM_CHARS = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class KeywordTerms:
    """The keyword arm's input: distinct word terms (query order) and CJK bigrams."""

    words: tuple[str, ...]
    bigrams: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.words or self.bigrams)


def bound_query(query: object, counter: TokenCounter, max_tokens: int) -> tuple[str, bool]:
    """Validate a query and cut it to ``max_tokens``; return ``(text, was_truncated)``.

    NUL bytes are removed (Postgres text cannot hold them); a query that is empty or only
    whitespace (after that) is an :class:`InvalidQueryError`.

    >>> from shared_core.tokens import TiktokenCounter
    >>> bound_query("  where?  ", TiktokenCounter(), 500)
    ('where?', False)
    """
    if not isinstance(query, str):
        raise InvalidQueryError(f"query must be a string, got {type(query).__name__}")
    text = query.replace("\x00", "").strip()
    if not text:
        raise InvalidQueryError("query is empty or only whitespace")
    if counter.count(text) > max_tokens:
        return counter.truncate(text, max_tokens).strip(), True
    return text, False


def keyword_terms(text: str) -> KeywordTerms:
    """Word terms for the OR-ed full-text query, plus CJK character bigrams.

    Terms come out of a word regex, so no user text is ever parsed as tsquery syntax
    (``&``, ``|``, ``!``, ``:*`` are not words).

    >>> keyword_terms("Alice & Bob's 'job'?").words
    ('alice', 'bob', 's', 'job')
    """
    words: dict[str, None] = {}
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if _CJK_CHAR.search(word):
            # CJK runs are handled as bigrams; keep any latin part of a mixed token.
            word = _CJK_CHAR.sub(" ", word).strip()
            for part in word.split():
                if len(part) <= _MAX_TERM_CHARS:
                    words.setdefault(part)
            continue
        if len(word) <= _MAX_TERM_CHARS and word.replace("_", ""):
            words.setdefault(word)
    return KeywordTerms(words=tuple(words), bigrams=tuple(dict.fromkeys(cjk_bigrams(text))))


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


def check_tags(tags: Sequence[str] | str | None, tags_match: str
               ) -> tuple[tuple[str, ...] | None, TagsMatch]:
    """Validate a tag filter. ``None``/empty tags mean "no filter", except for ``exact``,
    where they mean "only untagged memories"."""
    if tags_match not in TAGS_MATCH_MODES:
        raise InvalidQueryError(
            f"unknown tags_match {tags_match!r}; expected one of {list(TAGS_MATCH_MODES)}")
    if tags is None:
        return None, tags_match
    if isinstance(tags, str):
        tags = [tags]
    if not all(isinstance(t, str) for t in tags):
        raise InvalidQueryError("tags must be strings")
    return tuple(dict.fromkeys(t.replace("\x00", "") for t in tags)), tags_match
