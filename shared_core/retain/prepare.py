"""Pure preparation of a retain: validate items, split long ones, and build unit rows.

Nothing here does I/O, so every rule (what is a bad item, how a long text is split) is unit
tested without a database. Validation runs over the whole input before anything is written:
one bad item rejects the call, naming the item's index.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from shared_core.errors import InvalidItemError
from shared_core.ids import uuid7
from shared_core.protocols import TokenCounter
from shared_core.storable import text_problem
from shared_core.text import split_sentences
from shared_core.types import FACT_TYPES, DateGrain, MemoryItem, as_utc

__all__ = [
    "MAX_CONTEXT_BYTES",
    "MAX_DOCUMENT_ID_BYTES",
    "MAX_EMBEDDING_DIMENSION",
    "MAX_ENTITY_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_PROOF_COUNT",
    "MAX_TAG_BYTES",
    "PreparedChunk",
    "PreparedUnit",
    "coerce_items",
    "json_dumps",
    "materialise_items",
    "prepare_units",
    "sentence_windows",
]

_REAL_DATETIME = _dt.datetime  # bound at import: langchain's mock_now patches the module attribute
_ITEM_FIELDS = {f.name for f in dataclasses.fields(MemoryItem)}
_REFERENCE_FIELDS = ("caused_by", "causes", "enables", "prevents")

# Limits that keep every value within what Postgres stores and indexes. A B-tree or GIN index
# entry must fit in about a third of an 8 kB page (2,704 bytes), with the bank id (at most
# 200 characters, 800 bytes) beside it in the composite keys.
MAX_TAG_BYTES: Final = 1024
"""A tag's UTF-8 size (GIN index on tags)."""
MAX_DOCUMENT_ID_BYTES: Final = 1024
"""A document id's UTF-8 size (B-tree key (bank_id, document_id))."""
MAX_ENTITY_BYTES: Final = 1024
"""An entity name's UTF-8 size (unique B-tree key (bank_id, match_key))."""
MAX_CONTEXT_BYTES: Final = 256 * 1024
"""A context's UTF-8 size: it goes into every unit's ``tsvector``, which Postgres caps at 1 MB;
a tsvector of distinct short words takes up to ~3x the bytes of its text."""
MAX_METADATA_DEPTH: Final = 100
"""Nesting depth of metadata (jsonb parsing is recursive on the server, and so is json)."""
MAX_PROOF_COUNT: Final = 2**31 - 1
"""The ``integer`` column's maximum."""
MAX_EMBEDDING_DIMENSION: Final = 16000
"""pgvector's ``vector`` maximum."""
# One day inside Python's datetime range: later arithmetic (windows, links) must not overflow.
_MIN_UTC: Final = _dt.datetime(1, 1, 2, tzinfo=_dt.UTC)
_MAX_UTC: Final = _dt.datetime(9999, 12, 30, tzinfo=_dt.UTC)


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
    index_context: str | None = None
    """Neighbour context indexed with the unit (keyword and semantic arms), never returned:
    see :mod:`shared_core.retain.neighbours`."""


def _json_default(value: Any) -> Any:
    if isinstance(value, _REAL_DATETIME | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def json_dumps(value: Any) -> str:
    """JSON for jsonb columns; datetimes become ISO strings (LangChain metadata often has them)."""
    return json.dumps(value, default=_json_default, ensure_ascii=False, allow_nan=False)


def _check_text(index: int, name: str, value: Any, *, max_bytes: int | None = None) -> str:
    if not isinstance(value, str):
        raise InvalidItemError(index, f"{name} must be a string, got {type(value).__name__}")
    problem = text_problem(value, max_bytes=max_bytes)
    if problem is not None:
        raise InvalidItemError(index, f"{name} {problem}")
    return value


def _check_strings(index: int, name: str, values: Any, *, max_bytes: int) -> tuple[str, ...]:
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Iterable):
        raise InvalidItemError(index, f"{name} must be a sequence of strings, got {type(values).__name__}")
    return tuple(_check_text(index, f"{name}[{i}]", v, max_bytes=max_bytes) for i, v in enumerate(values))


def _metadata_problem(metadata: Mapping[Any, Any]) -> str | None:
    """Walk ``metadata`` without recursion (a 5,000-deep value must not blow the stack): every
    string storable, nesting within :data:`MAX_METADATA_DEPTH`."""
    stack: list[tuple[Any, int, str]] = [(metadata, 1, "metadata")]
    while stack:
        value, depth, where = stack.pop()
        if depth > MAX_METADATA_DEPTH:
            return f"{where} is nested more than {MAX_METADATA_DEPTH} levels deep"
        if isinstance(value, str):
            problem = text_problem(value)
            if problem is not None:
                return f"{where} {problem}"
        elif isinstance(value, Mapping):
            for key, child in value.items():
                if isinstance(key, str) and (problem := text_problem(key)) is not None:
                    return f"{where} key {key!r} {problem}"
                stack.append((child, depth + 1, f"{where}[{key!r}]"))
        elif isinstance(value, list | tuple | set | frozenset):
            stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(value))
    return None


def _check_datetime(index: int, name: str, value: Any) -> _dt.datetime | None:
    if value is None:
        return None
    if not isinstance(value, _REAL_DATETIME):
        raise InvalidItemError(index, f"{name} must be a datetime, got {type(value).__name__}")
    try:
        utc = as_utc(value)
    except (OverflowError, ValueError) as exc:
        raise InvalidItemError(
            index, f"{name} {value.isoformat()} is outside the years 1..9999 once converted to UTC"
        ) from exc
    if not _MIN_UTC <= utc <= _MAX_UTC:
        raise InvalidItemError(
            index,
            f"{name} {value.isoformat()} is too close to the ends "
            f"of the datetime range (years {_MIN_UTC.year}.."
            f"{_MAX_UTC.year} in UTC are accepted)",
        )
    return utc


def _check_embedding(index: int, embedding: Any) -> tuple[float, ...]:
    """A caller's vector as a unit vector (cosine only uses its direction), or an error.

    Normalising here, in float64 and scaled by its largest component, keeps vectors whose raw
    values would overflow or underflow float32 (pgvector's storage) usable; only a vector with
    no direction (all zeros) or with non-finite values is refused.
    """
    try:
        vector = np.asarray(embedding, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        vector = np.zeros(0)
    if vector.ndim != 1 or vector.size == 0 or not np.isfinite(vector).all():
        raise InvalidItemError(index, "embedding must be a non-empty sequence of finite numbers")
    if vector.size > MAX_EMBEDDING_DIMENSION:
        raise InvalidItemError(
            index,
            f"embedding has {vector.size} dimensions; pgvector stores at most {MAX_EMBEDDING_DIMENSION}",
        )
    peak = float(np.max(np.abs(vector)))
    if peak == 0.0:
        raise InvalidItemError(
            index, "embedding is all zeros: it has no direction, so cosine similarity is undefined"
        )
    scaled = vector / peak
    unit = scaled / float(np.linalg.norm(scaled))
    return tuple(float(x) for x in unit.astype(np.float32))


def _check_reference(index: int, name: str, ref: Any) -> str | int:
    if isinstance(ref, bool) or not isinstance(ref, str | int):
        raise InvalidItemError(
            index, f"{name} entries must be memory ids (str) or item indexes (int), got {type(ref).__name__}"
        )
    if isinstance(ref, int):
        return ref
    try:
        return str(uuid.UUID(_check_text(index, name, ref)))
    except ValueError as exc:
        raise InvalidItemError(
            index, f"{name} reference {ref!r} is neither an item index nor a memory id (a UUID)"
        ) from exc


def _as_item(index: int, raw: Any) -> MemoryItem:
    if isinstance(raw, MemoryItem):
        return raw
    if isinstance(raw, str):
        return MemoryItem(text=raw)
    if isinstance(raw, Mapping):
        unknown = set(raw) - _ITEM_FIELDS
        if unknown:
            raise InvalidItemError(
                index, f"unknown field(s) {sorted(map(repr, unknown))}; allowed: {sorted(_ITEM_FIELDS)}"
            )
        if "text" not in raw:
            raise InvalidItemError(index, "missing 'text'")
        return MemoryItem(**raw)
    raise InvalidItemError(index, f"expected a str, a dict or a MemoryItem, got {type(raw).__name__}")


def _coerce_one(index: int, raw: Any, document_id: Any) -> MemoryItem:
    item = _as_item(index, raw)
    text = _check_text(index, "text", item.text)
    if not text.strip():
        raise InvalidItemError(index, "text is empty or only whitespace")
    if item.context is not None:
        _check_text(index, "context", item.context, max_bytes=MAX_CONTEXT_BYTES)
    if not isinstance(item.fact_type, str) or item.fact_type not in FACT_TYPES:
        raise InvalidItemError(
            index, f"unknown fact_type {item.fact_type!r}; expected one of {list(FACT_TYPES)}"
        )
    start = _check_datetime(index, "occurred_start", item.occurred_start)
    end = _check_datetime(index, "occurred_end", item.occurred_end)
    mentioned = _check_datetime(index, "mentioned_at", item.mentioned_at)
    if start is not None and end is not None and end < start:
        raise InvalidItemError(
            index, f"occurred_end ({end.isoformat()}) is before occurred_start ({start.isoformat()})"
        )
    tags = _check_strings(index, "tags", item.tags, max_bytes=MAX_TAG_BYTES)
    if not isinstance(item.metadata, Mapping):
        raise InvalidItemError(index, f"metadata must be a mapping, got {type(item.metadata).__name__}")
    problem = _metadata_problem(item.metadata)
    if problem is not None:
        raise InvalidItemError(index, problem)
    try:
        json_dumps(dict(item.metadata))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidItemError(index, f"metadata is not JSON serialisable: {exc}") from exc
    if (
        not isinstance(item.proof_count, int)
        or isinstance(item.proof_count, bool)
        or not 1 <= item.proof_count <= MAX_PROOF_COUNT
    ):
        raise InvalidItemError(
            index, f"proof_count must be an integer in 1..{MAX_PROOF_COUNT}, got {item.proof_count!r}"
        )
    doc = item.document_id if item.document_id is not None else document_id
    if doc is not None:
        _check_text(index, "document_id", doc, max_bytes=MAX_DOCUMENT_ID_BYTES)
        if not doc:
            # get_documents / delete_documents refuse "", so a document under it could be
            # written but never fetched or deleted by id.
            raise InvalidItemError(index, "document_id must be a non-empty string (or None for none)")
    entities = (
        None
        if item.entities is None
        else _check_strings(index, "entities", item.entities, max_bytes=MAX_ENTITY_BYTES)
    )
    references: dict[str, tuple[str | int, ...]] = {}
    for name in _REFERENCE_FIELDS:
        refs = getattr(item, name)
        if isinstance(refs, str | bytes | Mapping) or not isinstance(refs, Iterable):
            raise InvalidItemError(
                index, f"{name} must be a sequence of ids or item indexes, got {type(refs).__name__}"
            )
        references[name] = tuple(_check_reference(index, name, ref) for ref in refs)
    embedding = None if item.embedding is None else _check_embedding(index, item.embedding)
    return dataclasses.replace(
        item,
        occurred_start=start,
        occurred_end=end,
        mentioned_at=mentioned,
        tags=tuple(dict.fromkeys(tags)),
        document_id=doc,
        entities=entities,
        embedding=embedding,
        caused_by=references["caused_by"],
        causes=references["causes"],
        enables=references["enables"],
        prevents=references["prevents"],
    )


def materialise_items(items: Any) -> list[Any]:
    """``retain``'s input as a list; a single item, or anything that is not a sequence, is an
    error (a dict would otherwise iterate as its keys, a string as its characters).

    >>> materialise_items(iter(["a", "b"]))
    ['a', 'b']
    >>> materialise_items({"text": "x"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    shared_core.errors.InvalidItemError: item 0: retain expects a sequence of items, got dict; ...
    """
    if isinstance(items, str | bytes | Mapping | MemoryItem) or not isinstance(items, Iterable):
        raise InvalidItemError(
            0, f"retain expects a sequence of items, got {type(items).__name__}; wrap a single item in a list"
        )
    return list(items)


def coerce_items(items: Iterable[Any], *, document_id: str | None = None) -> list[MemoryItem]:
    r"""Validate and normalise every input item; raise :class:`InvalidItemError` on the first bad
    one (nothing has been written at this point).

    Every value Postgres could reject is caught here, naming the item and the field: NUL
    characters and lone surrogates in any string, tags, ids and entity names too long for an
    index row, a ``context`` too long for a ``tsvector``, metadata nested too deep, integers
    out of range, zero or non-finite embeddings, datetimes outside Python's range once in UTC.

    >>> coerce_items(["Alice works at Google."])[0].fact_type
    'world'
    >>> coerce_items(["ok", "  "])
    Traceback (most recent call last):
    ...
    shared_core.errors.InvalidItemError: item 1: text is empty or only whitespace
    >>> coerce_items([{"text": "ok", "tags": ["a\x00"]}])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    shared_core.errors.InvalidItemError: item 0: tags[0] contains a NUL character, which ...
    """
    if isinstance(items, str | bytes | Mapping | MemoryItem) or not isinstance(items, Iterable):
        raise InvalidItemError(0, "retain expects a sequence of items; wrap a single item in a list")
    out = [_coerce_one(i, raw, document_id) for i, raw in enumerate(items)]
    for i, item in enumerate(out):
        for name in _REFERENCE_FIELDS:
            for ref in getattr(item, name):
                if isinstance(ref, int) and not (0 <= ref < len(out) and ref != i):
                    raise InvalidItemError(i, f"{name} index {ref} does not name another item of this call")
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
            sentence = sentence[len(head) :].strip()
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


def prepare_units(
    items: Sequence[MemoryItem],
    *,
    now: _dt.datetime,
    unit_max_tokens: int,
    window_tokens: int,
    counter: TokenCounter,
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
            chunks.append(
                PreparedChunk(chunk_id=chunk_id, document_id=item.document_id, chunk_index=n, text=item.text)
            )
            pieces = sentence_windows(item.text, window_tokens, counter)
        grain: DateGrain | None = "second" if item.occurred_start is not None else None
        for piece in pieces:
            units.append(
                PreparedUnit(
                    id=str(uuid7()),
                    item_index=index,
                    text=piece,
                    context=item.context,
                    fact_type=item.fact_type,
                    occurred_start=item.occurred_start,
                    occurred_end=item.occurred_end or item.occurred_start,
                    date_grain=grain,
                    mentioned_at=mentioned,
                    tags=tuple(item.tags),
                    metadata_json=json_dumps(dict(item.metadata)),
                    proof_count=item.proof_count,
                    document_id=item.document_id,
                    chunk_id=chunk_id,
                )
            )
    return units, chunks
