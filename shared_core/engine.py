"""``MemoryEngine``: the public entry point (sync methods and their ``a``-prefixed async twins).

The engine is a shell: its connections live in :class:`~shared_core.storage.pools.Pools`, its
models in :class:`~shared_core.models.Models`, and every operation is a sans-I/O plan
(:mod:`shared_core.recall.pipeline`, :mod:`shared_core.retain.flow`,
:mod:`shared_core.storage.queries`) run by the sync or the async runner, so both faces share
one implementation.

>>> with MemoryEngine() as engine:                       # embedded Postgres, default models  # doctest: +SKIP
...     ids = engine.retain(["Alice joined Google in March 2021."], bank="demo")
...     result = engine.recall("Where does Alice work?", bank="demo")
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from typing_extensions import Unpack

from shared_core.config import DEFAULT_BANK, EngineConfig
from shared_core.errors import ConfigurationError, DimensionMismatchError
from shared_core.models import Models
from shared_core.protocols import DateParser, Embedder, EntityExtractor, TokenCounter
from shared_core.recall.options import RecallKwargs, RecallOptions, RerankerSpec
from shared_core.recall.pipeline import RecallContext, recall_plan
from shared_core.recall.rerank import Reranker
from shared_core.recall.settings import RecallSettings
from shared_core.retain.flow import RetainContext, retain_flow
from shared_core.schema import apply_migrations, ensure_extensions, schema_dimension, schema_model
from shared_core.server import acquire_embedded, normalise_dsn, release_embedded
from shared_core.storage import queries
from shared_core.storage.plan import Plan
from shared_core.storage.pools import Pools
from shared_core.types import MemoryRecord, RecallResult, check_bank

if TYPE_CHECKING:
    from shared_core.extraction.facts import FactExtractor

__all__ = ["AsyncMemoryEngine", "BankInfo", "BankStats", "MemoryEngine", "check_bank"]

T = TypeVar("T")


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


def _utcnow() -> _dt.datetime:
    # Looked up through the module at call time so langchain's mock_now applies.
    now = _dt.datetime.now(_dt.UTC)
    return now if now.tzinfo is not None else now.replace(tzinfo=_dt.UTC)


class MemoryEngine:
    """Long-term memory on Postgres + pgvector: ``retain`` memories, ``recall`` them.

    Args:
        dsn: any libpq DSN or SQLAlchemy-style URL (``postgresql+psycopg://...``). ``None``
            starts (or reuses) the embedded PostgreSQL 18 + pgvector server.
        data_dir: the embedded server's data directory (default: the user data dir).
        embedder: an :class:`~shared_core.protocols.Embedder` (default all-MiniLM-L6-v2).
        token_counter: a :class:`~shared_core.protocols.TokenCounter` (default cl100k_base).
        date_parser: a :class:`~shared_core.protocols.DateParser` (default Duckling).
        entity_extractor: an :class:`~shared_core.protocols.EntityExtractor` (default spaCy).
        reranker: the default reranker of every recall (default: the cross-encoder, or
            passthrough when it cannot load offline).
        config: an :class:`~shared_core.config.EngineConfig` (recall tunables in
            ``config.recall``).

    Naive datetimes given to the engine are taken as UTC. The engine is thread-safe; close it
    (or use it as a context manager) to release its connections and the embedded server.
    """

    def __init__(self, dsn: str | None = None, *, data_dir: str | Path | None = None,
                 embedder: Embedder | None = None, token_counter: TokenCounter | None = None,
                 date_parser: DateParser | None = None,
                 entity_extractor: EntityExtractor | None = None,
                 reranker: RerankerSpec | None = None,
                 config: EngineConfig | None = None) -> None:
        self.config = config or EngineConfig()
        self._embedded_path: Path | None = None
        if dsn is None:
            self._embedded_path, self.dsn = acquire_embedded(data_dir)
        else:
            if data_dir is not None:
                raise ConfigurationError("pass either dsn= or data_dir= (embedded), not both")
            self.dsn = normalise_dsn(dsn)
        self.models = Models(embedder=embedder, token_counter=token_counter,
                             date_parser=date_parser, entity_extractor=entity_extractor,
                             freeze_gc_after_load=self.config.freeze_gc_after_load)
        self._reranker = reranker
        cfg = self.config
        self._pools = Pools(self.dsn, bootstrap=self._bootstrap, min_size=cfg.pool_min_size,
                            max_size=cfg.pool_max_size, ef_search=cfg.hnsw_ef_search,
                            max_scan_tuples=cfg.hnsw_max_scan_tuples)
        self._closed = False

    # ---------------------------------------------------------------- components
    @property
    def embedder(self) -> Embedder:
        return self.models.embedder

    @property
    def token_counter(self) -> TokenCounter:
        return self.models.token_counter

    @property
    def date_parser(self) -> DateParser | None:
        """The date parser for query windows (and retain); None if it cannot load."""
        return self.models.date_parser

    @property
    def entity_extractor(self) -> EntityExtractor | None:
        """The entity extractor used at retain (spaCy by default); None if it cannot load."""
        return self.models.entity_extractor

    @property
    def recall_settings(self) -> RecallSettings:
        """``config.recall``; assigning replaces it in ``config`` (``dataclasses.replace``)."""
        return self.config.recall

    @recall_settings.setter
    def recall_settings(self, settings: RecallSettings) -> None:
        self.config = dataclasses.replace(self.config, recall=settings)

    # ---------------------------------------------------------------- lifecycle
    def _bootstrap(self) -> None:
        dimension = self.embedder.dimension
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                ensure_extensions(conn)
                existing = schema_dimension(conn)
                if existing is not None and existing != dimension:
                    raise DimensionMismatchError(
                        bank=None, bank_model=schema_model(conn), bank_dimension=existing,
                        embedder_model=self.embedder.model_name, embedder_dimension=dimension)
                conn.autocommit = False
                apply_migrations(conn, dimension=dimension)
        except psycopg.OperationalError as exc:
            raise ConfigurationError(f"cannot connect to Postgres at {self._safe_dsn()}: {exc}"
                                     ) from exc

    def run(self, plan: Plan[T]) -> T:
        """Run a sans-I/O plan (see :mod:`shared_core.storage.plan`) in one transaction.

        The extension point for adapters and advanced users: write a plan once, run it with
        :meth:`run` or :meth:`arun`.
        """
        return self._pools.run(plan)

    async def arun(self, plan: Plan[T]) -> T:
        """Async twin of :meth:`run`."""
        return await self._pools.arun(plan)

    def close(self) -> None:
        """Close the pools and release the embedded server (stopped when no engine uses it)."""
        if self._closed:
            return
        self._closed = True
        self._pools.close()
        if self._embedded_path is not None:
            release_embedded(self._embedded_path)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        await self._pools.aclose()
        await asyncio.to_thread(self.close)

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemoryEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            warnings.warn("MemoryEngine was not closed; call close() or use 'with'",
                          ResourceWarning, stacklevel=1)

    def _safe_dsn(self) -> str:
        try:
            info = psycopg.conninfo.conninfo_to_dict(self.dsn)
        except psycopg.ProgrammingError:
            return "<unparseable dsn>"
        info.pop("password", None)
        return " ".join(f"{k}={v}" for k, v in info.items() if v is not None)

    def __repr__(self) -> str:
        where = f"embedded at {self._embedded_path}" if self._embedded_path else self._safe_dsn()
        state = "closed" if self._closed else "open"
        return f"<MemoryEngine {state} {where}>"

    # ---------------------------------------------------------------- retain
    def retain_plan(self, items: Iterable[Any], *, bank: str = DEFAULT_BANK,
                    document_id: str | None = None, progress: bool = False,
                    fact_extractor: FactExtractor | None = None) -> Plan[list[str]]:
        """:meth:`retain` as a plan, to compose with other statements in one transaction
        (run it with :meth:`run` / :meth:`arun`, or ``yield from`` it inside a plan)."""
        context = RetainContext(models=self.models, config=self.config, now=_utcnow)
        return retain_flow(context, items, bank=bank, document_id=document_id,
                           progress=progress, fact_extractor=fact_extractor)

    def retain(self, items: Iterable[Any], *, bank: str = DEFAULT_BANK,
               document_id: str | None = None, progress: bool = True,
               fact_extractor: FactExtractor | None = None) -> list[str]:
        """Store memories; return the new memory ids in input order.

        ``items`` are strings, dicts of :class:`~shared_core.types.MemoryItem` fields, or
        ``MemoryItem`` objects. The call is one transaction: all items land, or none (a bad
        item raises :class:`~shared_core.errors.InvalidItemError` naming its index). Retaining
        a ``document_id`` again replaces that document's memories. Items longer than
        ``config.unit_max_tokens`` are stored whole as a chunk and split into sentence windows.
        With a ``fact_extractor`` (e.g. :class:`~shared_core.extraction.facts.
        LangChainFactExtractor` over any chat model), string items are first turned into
        facts, with entities, dates and causal links, by the LLM; without one, no LLM is used.

        >>> engine.retain(["Alice works at Google.",  # doctest: +SKIP
        ...                {"text": "Bob moved to Paris.", "tags": ["bob"]}], bank="demo")
        ['0196...', '0196...']
        """
        return self.run(self.retain_plan(items, bank=bank, document_id=document_id,
                                         progress=progress, fact_extractor=fact_extractor))

    async def aretain(self, items: Iterable[Any], *, bank: str = DEFAULT_BANK,
                      document_id: str | None = None, progress: bool = True,
                      fact_extractor: FactExtractor | None = None) -> list[str]:
        """Async twin of :meth:`retain`."""
        return await self.arun(self.retain_plan(items, bank=bank, document_id=document_id,
                                                progress=progress, fact_extractor=fact_extractor))

    # ---------------------------------------------------------------- recall
    def recall_context(self, reranker: RerankerSpec | None = None) -> RecallContext:
        """The models and settings a recall plan runs with (loads them on first use)."""
        parser = self.date_parser
        spec = reranker if reranker is not None else self._reranker
        return RecallContext(
            embed_query=self.embedder.embed_query,
            parse_query_dates=parser.parse_query_dates if parser is not None else None,
            counter=self.token_counter, reranker=Reranker.from_spec(spec),
            settings=self.config.recall, now=_utcnow)

    def recall(self, query: str, **options: Unpack[RecallKwargs]) -> RecallResult:
        """Recall the memories of ``bank`` that answer ``query``, best first.

        Four arms (semantic, keyword, entity graph, temporal) run concurrently; their lists
        are fused with RRF (k=60), reranked (cross-encoder, or passthrough when none can be
        loaded offline), boosted for recency, temporal proximity and evidence, and cut to
        ``max_tokens`` of memory text. The options are those of
        :class:`~shared_core.recall.options.RecallOptions` (``bank``, ``max_tokens``,
        ``budget`` low/mid/high/adaptive, ``types``, ``tags``, ``tags_match``,
        ``query_timestamp``, ``temporal_window``, ``include_chunks``, ``max_chunk_tokens``,
        ``reranker``, ``trace``, ``arms``); a bad one raises
        :class:`~shared_core.errors.InvalidOptionError` naming it. Relative dates in the query
        ("last spring") resolve against ``query_timestamp`` (default: now, UTC);
        ``temporal_window`` replaces parsing.

        >>> result = engine.recall("Where does Alice work?", bank="demo", trace=True)  # doctest: +SKIP
        >>> result.memories[0].text  # doctest: +SKIP
        'Alice works at Google as a software engineer in Zurich.'
        """
        opts = RecallOptions(**options)
        return self.run(recall_plan(self.recall_context(opts.reranker), query, opts))

    async def arecall(self, query: str, **options: Unpack[RecallKwargs]) -> RecallResult:
        """Async twin of :meth:`recall`."""
        opts = RecallOptions(**options)
        context = await asyncio.to_thread(self.recall_context, opts.reranker)
        return await self.arun(recall_plan(context, query, opts))

    # ---------------------------------------------------------------- read / delete
    def get(self, memory_id: str, *, bank: str = DEFAULT_BANK) -> MemoryRecord | None:
        """The memory with this id in ``bank``, or None."""
        return self.run(queries.get_plan(check_bank(bank), memory_id))

    async def aget(self, memory_id: str, *, bank: str = DEFAULT_BANK) -> MemoryRecord | None:
        """Async twin of :meth:`get`."""
        return await self.arun(queries.get_plan(check_bank(bank), memory_id))

    def delete(self, ids: Sequence[str] | None = None, *, bank: str = DEFAULT_BANK,
               document_id: str | None = None) -> int:
        """Delete memories by id, or a whole document; return how many memories went."""
        return self.run(queries.delete_plan(check_bank(bank), ids, document_id))

    async def adelete(self, ids: Sequence[str] | None = None, *, bank: str = DEFAULT_BANK,
                      document_id: str | None = None) -> int:
        """Async twin of :meth:`delete`."""
        return await self.arun(queries.delete_plan(check_bank(bank), ids, document_id))

    def banks(self) -> list[BankInfo]:
        """Every bank in the database."""
        return [BankInfo(**row) for row in self.run(queries.banks_plan())]

    async def abanks(self) -> list[BankInfo]:
        """Async twin of :meth:`banks`."""
        return [BankInfo(**row) for row in await self.arun(queries.banks_plan())]

    def stats(self, bank: str = DEFAULT_BANK) -> BankStats:
        """Row counts for ``bank`` (zeros for a bank that does not exist)."""
        return BankStats(**self.run(queries.stats_plan(check_bank(bank))))

    async def astats(self, bank: str = DEFAULT_BANK) -> BankStats:
        """Async twin of :meth:`stats`."""
        return BankStats(**await self.arun(queries.stats_plan(check_bank(bank))))


class AsyncMemoryEngine:
    """Async-first face of :class:`MemoryEngine`: the same engine, coroutine methods.

    Takes :class:`MemoryEngine`'s arguments, or wraps an existing engine (``engine=``).

    >>> async with AsyncMemoryEngine() as engine:  # doctest: +SKIP
    ...     await engine.retain(["Alice works at Google."], bank="demo")
    """

    def __init__(self, dsn: str | None = None, *, data_dir: str | Path | None = None,
                 embedder: Embedder | None = None, token_counter: TokenCounter | None = None,
                 date_parser: DateParser | None = None,
                 entity_extractor: EntityExtractor | None = None,
                 reranker: RerankerSpec | None = None, config: EngineConfig | None = None,
                 engine: MemoryEngine | None = None) -> None:
        if engine is None:
            engine = MemoryEngine(dsn, data_dir=data_dir, embedder=embedder,
                                  token_counter=token_counter, date_parser=date_parser,
                                  entity_extractor=entity_extractor, reranker=reranker,
                                  config=config)
        self.sync = engine

    async def retain(self, items: Iterable[Any], *, bank: str = DEFAULT_BANK,
                     document_id: str | None = None, progress: bool = True,
                     fact_extractor: FactExtractor | None = None) -> list[str]:
        """See :meth:`MemoryEngine.retain`."""
        return await self.sync.aretain(items, bank=bank, document_id=document_id,
                                       progress=progress, fact_extractor=fact_extractor)

    async def recall(self, query: str, **options: Unpack[RecallKwargs]) -> RecallResult:
        """See :meth:`MemoryEngine.recall`."""
        return await self.sync.arecall(query, **options)

    async def get(self, memory_id: str, *, bank: str = DEFAULT_BANK) -> MemoryRecord | None:
        """See :meth:`MemoryEngine.get`."""
        return await self.sync.aget(memory_id, bank=bank)

    async def delete(self, ids: Sequence[str] | None = None, *, bank: str = DEFAULT_BANK,
                     document_id: str | None = None) -> int:
        """See :meth:`MemoryEngine.delete`."""
        return await self.sync.adelete(ids, bank=bank, document_id=document_id)

    async def banks(self) -> list[BankInfo]:
        """See :meth:`MemoryEngine.banks`."""
        return await self.sync.abanks()

    async def stats(self, bank: str = DEFAULT_BANK) -> BankStats:
        """See :meth:`MemoryEngine.stats`."""
        return await self.sync.astats(bank)

    async def close(self) -> None:
        await self.sync.aclose()

    async def __aenter__(self) -> AsyncMemoryEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return repr(self.sync).replace("MemoryEngine", "AsyncMemoryEngine", 1)
