"""Pure preparation of a retain: validate items, split long ones, and build unit rows.

Nothing here does I/O, so every rule (what is a bad item, how a long text is split) is unit
tested without a database. Validation runs over the whole input before anything is written:
one bad item rejects the call, naming the item's index.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shared_core.errors import InvalidItemError
from shared_core.ids import uuid7
from shared_core.protocols import TokenCounter
from shared_core.text import split_sentences
from shared_core.types import FACT_TYPES, DateGrain, MemoryItem, as_utc

__all__ = ["PreparedChunk", "PreparedUnit", "coerce_items", "json_dumps", "prepare_units",
           "sentence_windows"]

_REAL_DATETIME = _dt.datetime  # bound at import: langchain's mock_now patches the module attribute
_ITEM_FIELDS = {f.name for f in dataclasses.fields(MemoryItem)}
_REFERENCE_FIELDS = ("caused_by", "causes", "enables", "prevents")


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedChunk:
    chunk_id: str
    document_id: str | None
    chunk_index: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedUnit:
    """One memory_units row to write, plus what extraction needs to know about its origin."""

    id: str
    item_index: int
    text: str
    context: str | None
    fact_type: str
    occurred_start: _dt.datetime | None
    occurred_end: _dt.datetime | None
    date_grain: DateGrain | None
    mentioned_at: _dt.datetime
    tags: tuple[str, ...]
    metadata_json: str
    proof_count: int
    document_id: str | None
    chunk_id: str | None


def _json_default(value: Any) -> Any:
    if isinstance(value, _REAL_DATETIME | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def json_dumps(value: Any) -> str:
    """JSON for jsonb columns; datetimes become ISO strings (LangChain metadata often has them)."""
    return json.dumps(value, default=_json_default, ensure_ascii=False, allow_nan=False)


def _check_datetime(index: int, name: str, value: Any) -> _dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, _REAL_DATETIME):
        raise InvalidItemError(index, f"{name} must be a datetime, got {type(value).__name__}")
    return as_utc(value)


def _coerce_one(index: int, raw: Any, document_id: str | None) -> MemoryItem:
    if isinstance(raw, MemoryItem):
        item = raw
    elif isinstance(raw, str):
        item = MemoryItem(text=raw)
    elif isinstance(raw, Mapping):
        unknown = set(raw) - _ITEM_FIELDS
        if unknown:
            raise InvalidItemError(index, f"unknown field(s) {sorted(unknown)}; "
                                          f"allowed: {sorted(_ITEM_FIELDS)}")
        if "text" not in raw:
            raise InvalidItemError(index, "missing 'text'")
        item = MemoryItem(**raw)
    else:
        raise InvalidItemError(
            index, f"expected a str, a dict or a MemoryItem, got {type(raw).__name__}")

    if not isinstance(item.text, str):
        raise InvalidItemError(index, f"text must be a string, got {type(item.text).__name__}")
    if not item.text.strip():
        raise InvalidItemError(index, "text is empty or only whitespace")
    if "\x00" in item.text or (item.context and "\x00" in item.context):
        raise InvalidItemError(index, "text contains a NUL byte, which Postgres text cannot store")
    if item.context is not None and not isinstance(item.context, str):
        raise InvalidItemError(index, "context must be a string or None")
    if item.fact_type not in FACT_TYPES:
        raise InvalidItemError(
            index, f"unknown fact_type {item.fact_type!r}; expected one of {list(FACT_TYPES)}")
    start = _check_datetime(index, "occurred_start", item.occurred_start)
    end = _check_datetime(index, "occurred_end", item.occurred_end)
    mentioned = _check_datetime(index, "mentioned_at", item.mentioned_at)
    if start is not None and end is not None and end < start:
        raise InvalidItemError(
            index, f"occurred_end ({end.isoformat()}) is before occurred_start "
                   f"({start.isoformat()})")
    if isinstance(item.tags, str) or not all(isinstance(t, str) for t in item.tags):
        raise InvalidItemError(index, "tags must be a sequence of strings")
    if not isinstance(item.metadata, Mapping):
        raise InvalidItemError(index, "metadata must be a mapping")
    try:
        json_dumps(dict(item.metadata))
    except (TypeError, ValueError) as exc:
        raise InvalidItemError(index, f"metadata is not JSON serialisable: {exc}") from exc
    if not isinstance(item.proof_count, int) or isinstance(item.proof_count, bool) \
            or item.proof_count < 1:
        raise InvalidItemError(index, "proof_count must be an integer >= 1")
    if item.entities is not None and (isinstance(item.entities, str) or
                                      not all(isinstance(e, str) for e in item.entities)):
        raise InvalidItemError(index, "entities must be a sequence of strings")
    for name in _REFERENCE_FIELDS:
        refs = getattr(item, name)
        if isinstance(refs, str | int):
            raise InvalidItemError(index, f"{name} must be a sequence of ids or item indexes")
        for ref in refs:
            if isinstance(ref, bool) or not isinstance(ref, str | int):
                raise InvalidItemError(index, f"{name} entries must be ids (str) or indexes (int)")
    if item.embedding is not None:
        try:
            vector = np.asarray(item.embedding, dtype=np.float64)
        except (TypeError, ValueError):
            vector = np.zeros(0)
        if vector.ndim != 1 or vector.size == 0 or not np.isfinite(vector).all():
            raise InvalidItemError(index, "embedding must be a non-empty sequence of finite numbers")
    return dataclasses.replace(
        item, occurred_start=start, occurred_end=end, mentioned_at=mentioned,
        tags=tuple(dict.fromkeys(item.tags)),
        document_id=item.document_id if item.document_id is not None else document_id,
    )


def coerce_items(items: Iterable[Any], *, document_id: str | None = None) -> list[MemoryItem]:
    """Validate and normalise every input item; raise :class:`InvalidItemError` on the first bad
    one (nothing has been written at this point).

    >>> coerce_items(["Alice works at Google."])[0].fact_type
    'world'
    >>> coerce_items(["ok", "  "])
    Traceback (most recent call last):
    ...
    shared_core.errors.InvalidItemError: item 1: text is empty or only whitespace
    """
    if isinstance(items, str | bytes | Mapping | MemoryItem):
        raise InvalidItemError(0, "retain expects a sequence of items; wrap a single item in a list")
    out = [_coerce_one(i, raw, document_id) for i, raw in enumerate(items)]
    for i, item in enumerate(out):
        for name in _REFERENCE_FIELDS:
            for ref in getattr(item, name):
                if isinstance(ref, int) and not (0 <= ref < len(out) and ref != i):
                    raise InvalidItemError(i, f"{name} index {ref} does not name another item "
                                              "of this call")
    return out


def sentence_windows(text: str, max_tokens: int, counter: TokenCounter) -> list[str]:
    """Split ``text`` into consecutive windows of whole sentences of at most ``max_tokens``.

    A single sentence longer than the limit is cut by tokens, so every window fits.
    """
    windows: list[str] = []
    current: list[str] = []
    used = 0
    for sentence in split_sentences(text):
        n = counter.count(sentence)
        while n > max_tokens:
            head = counter.truncate(sentence, max_tokens)
            if current:
                windows.append(" ".join(current))
                current, used = [], 0
            windows.append(head)
            sentence = sentence[len(head):].strip()
            n = counter.count(sentence)
        if not sentence:
            continue
        if current and used + n > max_tokens:
            windows.append(" ".join(current))
            current, used = [], 0
        current.append(sentence)
        used += n
    if current:
        windows.append(" ".join(current))
    return windows


def prepare_units(items: Sequence[MemoryItem], *, now: _dt.datetime, unit_max_tokens: int,
                  window_tokens: int, counter: TokenCounter
                  ) -> tuple[list[PreparedUnit], list[PreparedChunk]]:
    """Turn validated items into unit rows (and chunk rows for long items).

    An item longer than ``unit_max_tokens`` is kept whole as a chunk and split into
    sentence-window units that point at it, so recall can return the precise passage and the
    caller can still fetch the full source.
    """
    units: list[PreparedUnit] = []
    chunks: list[PreparedChunk] = []
    chunk_counter: dict[str | None, int] = {}
    for index, item in enumerate(items):
        mentioned = item.mentioned_at or now
        pieces = [item.text.strip()]
        chunk_id: str | None = None
        if counter.count(item.text) > unit_max_tokens:
            chunk_id = str(uuid7())
            n = chunk_counter.get(item.document_id, 0)
            chunk_counter[item.document_id] = n + 1
            chunks.append(PreparedChunk(chunk_id=chunk_id, document_id=item.document_id,
                                        chunk_index=n, text=item.text))
            pieces = sentence_windows(item.text, window_tokens, counter)
        grain: DateGrain | None = "second" if item.occurred_start is not None else None
        for piece in pieces:
            units.append(PreparedUnit(
                id=str(uuid7()), item_index=index, text=piece, context=item.context,
                fact_type=item.fact_type, occurred_start=item.occurred_start,
                occurred_end=item.occurred_end or item.occurred_start, date_grain=grain,
                mentioned_at=mentioned, tags=tuple(item.tags),
                metadata_json=json_dumps(dict(item.metadata)), proof_count=item.proof_count,
                document_id=item.document_id, chunk_id=chunk_id,
            ))
    return units, chunks
