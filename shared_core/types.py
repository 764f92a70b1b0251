"""Value types shared by the pipeline: inputs (:class:`MemoryItem`), time windows, and results.

All are frozen, keyword-only dataclasses. Datetimes are always timezone-aware in UTC once they
leave this module's constructors: naive datetimes are taken as UTC (documented behaviour).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from shared_core.errors import ConfigurationError, InvalidTimeWindowError
from shared_core.storable import text_problem

__all__ = [
    "ARM_NAMES",
    "FACT_TYPES",
    "LINK_TYPES",
    "ArmName",
    "BankInfo",
    "BankStats",
    "DateGrain",
    "DateMention",
    "EntityMention",
    "FactType",
    "LinkType",
    "MemoryItem",
    "MemoryRecord",
    "RecallResult",
    "RecallTrace",
    "RecalledMemory",
    "ScoreBreakdown",
    "TimeWindow",
    "as_utc",
    "check_bank",
]

FactType = Literal["world", "experience", "observation"]
FACT_TYPES: tuple[FactType, ...] = get_args(FactType)

LinkType = Literal["semantic", "temporal", "causes", "caused_by", "enables", "prevents"]
LINK_TYPES: tuple[LinkType, ...] = get_args(LinkType)
CAUSAL_LINK_TYPES: tuple[LinkType, ...] = ("causes", "caused_by", "enables", "prevents")

DateGrain = Literal["second", "minute", "hour", "day", "week", "month", "season", "quarter", "year", "decade"]
DATE_GRAINS: tuple[DateGrain, ...] = get_args(DateGrain)

ArmName = Literal["semantic", "keyword", "graph", "temporal"]
ARM_NAMES: tuple[ArmName, ...] = get_args(ArmName)

MAX_BANK_LENGTH = 200

_REAL_DATETIME = _dt.datetime  # bound at import: langchain's mock_now patches the module attribute


def as_utc(value: _dt.datetime) -> _dt.datetime:
    """Return ``value`` as an aware UTC datetime; naive values are taken as UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=_dt.UTC)
    return value.astimezone(_dt.UTC)


def check_bank(bank: object) -> str:
    """A bank name: a non-empty string of at most ``MAX_BANK_LENGTH`` characters that Postgres
    can store (no NUL, no lone surrogate).

    >>> check_bank("demo")
    'demo'
    """
    if not isinstance(bank, str) or not bank.strip():
        raise ConfigurationError("bank must be a non-empty string")
    if len(bank) > MAX_BANK_LENGTH:
        raise ConfigurationError(f"bank must be at most {MAX_BANK_LENGTH} characters")
    problem = text_problem(bank)
    if problem is not None:
        raise ConfigurationError(f"bank {problem}")
    return bank


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeWindow:
    """A closed interval of time ``[start, end]`` with the grain it was expressed in.

    >>> import datetime as dt
    >>> w = TimeWindow(start=dt.datetime(2023, 6, 1), end=dt.datetime(2023, 6, 30, 23, 59, 59))
    >>> w.start.tzinfo is dt.UTC
    True
    """

    start: _dt.datetime
    end: _dt.datetime
    grain: DateGrain | None = None

    def __post_init__(self) -> None:
        start, end = as_utc(self.start), as_utc(self.end)
        if end < start:
            raise InvalidTimeWindowError(
                f"time window ends ({end.isoformat()}) before it starts ({start.isoformat()})"
            )
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "end", end)

    @property
    def centre(self) -> _dt.datetime:
        """The middle of the window."""
        return self.start + (self.end - self.start) / 2

    @property
    def span(self) -> _dt.timedelta:
        return self.end - self.start

    def overlaps(self, other: TimeWindow) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass(frozen=True, slots=True, kw_only=True)
class DateMention:
    """A date expression found in a text, resolved to a window."""

    text: str
    window: TimeWindow
    start_char: int = 0
    end_char: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityMention:
    """An entity mentioned in a text: its canonical name and the NER label that found it."""

    name: str
    label: str = "PROPN"


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryItem:
    """One memory to retain.

    ``entities`` given explicitly skip entity extraction for this item. ``caused_by`` (and
    ``causes``, ``enables``, ``prevents``) reference other memories, either by id (a string) or by
    the index of another item in the same ``retain`` call (an int).

    >>> MemoryItem(text="Alice joined Google in March 2021.", tags=("work",))
    MemoryItem(text='Alice joined Google in March 2021.', fact_type='world', ...)
    """

    text: str
    context: str | None = None
    fact_type: FactType = "world"
    occurred_start: _dt.datetime | None = None
    occurred_end: _dt.datetime | None = None
    mentioned_at: _dt.datetime | None = None
    tags: Sequence[str] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    document_id: str | None = None
    proof_count: int = 1
    entities: Sequence[str] | None = None
    caused_by: Sequence[str | int] = ()
    causes: Sequence[str | int] = ()
    enables: Sequence[str | int] = ()
    prevents: Sequence[str | int] = ()
    embedding: Sequence[float] | None = None

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"MemoryItem(text={text!r}, fact_type={self.fact_type!r}, ...)"


@dataclass(frozen=True, slots=True, kw_only=True)
class BankInfo:
    """A memory bank and the embedding model it was created with."""

    bank: str
    embedding_model: str
    embedding_dimension: int
    created_at: _dt.datetime
    memory_count: int


@dataclass(frozen=True, slots=True, kw_only=True)
class BankStats:
    """Row counts of one bank."""

    bank: str
    memories: int
    memories_by_type: dict[str, int] = field(default_factory=dict)
    documents: int = 0
    chunks: int = 0
    entities: int = 0
    links_by_type: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryRecord:
    """A stored memory unit as returned by ``engine.get``."""

    id: str
    bank: str
    text: str
    context: str | None
    fact_type: FactType
    occurred_start: _dt.datetime | None
    occurred_end: _dt.datetime | None
    mentioned_at: _dt.datetime | None
    date_grain: DateGrain | None
    created_at: _dt.datetime
    updated_at: _dt.datetime
    last_accessed_at: _dt.datetime | None
    tags: tuple[str, ...]
    metadata: Mapping[str, Any]
    proof_count: int
    document_id: str | None
    chunk_id: str | None
    entities: tuple[str, ...] = ()

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"MemoryRecord(id={self.id!r}, bank={self.bank!r}, text={text!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoreBreakdown:
    """Every number that went into a recalled memory's final score.

    ``arm_ranks`` / ``arm_scores`` hold the 1-based rank and raw score in each arm that found the
    memory; boosts are multiplicative factors centred on 1.
    """

    arm_ranks: Mapping[ArmName, int] = field(default_factory=dict)
    arm_scores: Mapping[ArmName, float] = field(default_factory=dict)
    rrf: float = 0.0
    reranker_raw: float | None = None
    reranker: float = 0.0
    recency_boost: float = 1.0
    temporal_boost: float = 1.0
    proof_boost: float = 1.0
    temporal_proximity: float | None = None
    final: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class RecalledMemory:
    """One memory in a recall result, best first."""

    id: str
    text: str
    fact_type: FactType
    score: float
    context: str | None = None
    occurred_start: _dt.datetime | None = None
    occurred_end: _dt.datetime | None = None
    mentioned_at: _dt.datetime | None = None
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    document_id: str | None = None
    chunk_id: str | None = None
    #: This memory's position among its document's memories (0-based, in the order retain
    #: created them) and how many there are: a long document is split into several.
    piece: int = 0
    pieces: int = 1
    entities: tuple[str, ...] = ()
    scores: ScoreBreakdown = field(default_factory=ScoreBreakdown)
    #: Cosine similarity of the memory to the query (every returned memory has one).
    similarity: float | None = None
    #: True for a memory added only to fill ``k``: no arm found it above its thresholds.
    below_threshold: bool = False
    #: Calibrated relevance in [0, 1] from the reranker: the learned reranker's probability
    #: that the memory answers the query, or a cross-encoder's sigmoid score (before boosts).
    #: None under passthrough, whose scores only encode the rank.
    relevance: float | None = None

    def __repr__(self) -> str:
        text = self.text if len(self.text) <= 60 else self.text[:57] + "..."
        return f"RecalledMemory(score={self.score:.3f}, text={text!r})"


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallTrace:
    """What each stage of a recall did, for debugging and notebooks."""

    query: str
    query_truncated: bool
    budget_n: int
    time_window: TimeWindow | None
    time_window_source: Literal["parsed", "caller", "none"]
    arms: Mapping[ArmName, Sequence[tuple[str, float]]]
    #: The fused ranking, cut to the candidates handed to the reranker (rerank_max_candidates).
    fusion: Sequence[tuple[str, float]]
    rerank: Sequence[tuple[str, float]]
    reranker: str
    timings_ms: Mapping[str, float]
    notes: Sequence[str] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallResult:
    """Result of ``engine.recall``: memories best first, optional chunks and trace."""

    memories: Sequence[RecalledMemory]
    #: With ``include_chunks``: source texts in rank order, chosen from the ranking before (and
    #: independently of) the ``max_tokens`` cut, up to ``max_chunk_tokens``. Keyed by
    #: ``chunk_id`` (the whole item a long memory was split from), or by the memory's id for a
    #: memory stored whole (its source text is its own text).
    chunks: Mapping[str, str] = field(default_factory=dict)
    trace: RecallTrace | None = None
    #: Keys of ``chunks`` whose text was cut to fit ``max_chunk_tokens`` (only the last one).
    truncated_chunks: frozenset[str] = frozenset()

    def chunk_of(self, memory: RecalledMemory) -> str | None:
        """The source text of ``memory`` among :attr:`chunks`, if it was returned."""
        return self.chunks.get(memory.chunk_id if memory.chunk_id is not None else memory.id)

    def __len__(self) -> int:
        return len(self.memories)

    def __iter__(self) -> Iterator[RecalledMemory]:
        return iter(self.memories)

    def __repr__(self) -> str:
        return f"RecallResult({len(self.memories)} memories, {len(self.chunks)} chunks)"
