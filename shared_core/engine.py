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
import functools
import math
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
import psycopg
from typing_extensions import Unpack

from shared_core.config import DEFAULT_BANK, EngineConfig
from shared_core.embedding_adapters import as_embedder, wraps_same_model
from shared_core.errors import ConfigurationError
from shared_core.models import Models
from shared_core.protocols import DateParser, Embedder, EntityExtractor, TokenCounter
from shared_core.recall.arms.semantic import declare_filter_index
from shared_core.recall.options import RecallKwargs, RecallOptions, RerankerSpec
from shared_core.recall.pipeline import RecallContext, recall_plan
from shared_core.recall.query import TagsMatch
from shared_core.recall.rerank import Reranker
from shared_core.recall.settings import RecallSettings
from shared_core.retain.bulk import DEFAULT_BULK_BATCH_SIZE, DEFAULT_BULK_EXTRACTION_PROCESSES, bulk_flow
from shared_core.retain.flow import RetainContext, retain_flow
from shared_core.schema import apply_migrations, ensure_extensions, schema_dimension
from shared_core.server import (
    acquire_embedded,
    embedded_outage,
    normalise_dsn,
    release_embedded,
    revive_embedded,
)
from shared_core.storage import documents, queries
from shared_core.storage.dimensions import ensure_dimension
from shared_core.storage.documents import StoredDocument
from shared_core.storage.plan import Concurrently, Plan
from shared_core.storage.pools import Pools
from shared_core.storage.stream import MemoryStream
from shared_core.types import BankInfo, BankStats, MemoryRecord, RecallResult, check_bank

if TYPE_CHECKING:
    from shared_core.extraction.facts import FactExtractor

__all__ = ["AsyncMemoryEngine", "BankInfo", "BankStats", "MemoryEngine", "check_bank"]

T = TypeVar("T")


def _checked_dsn(dsn: str) -> str:
    """``dsn`` if libpq can read it; else a ConfigurationError now, before any model loads
    (a DSN is only used after the embedder is loaded and the schema checked)."""
    scheme = dsn.split("://", 1)[0].lower() if "://" in dsn else None
    if scheme is not None and scheme not in ("postgresql", "postgres"):
        raise ConfigurationError(
            f"dsn scheme {scheme!r} is not a Postgres one: expected postgresql://... "
            "(or postgresql+psycopg://..., or libpq 'host=... dbname=...')"
        )
    try:
        psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(
            f"dsn is not a valid connection string ({str(exc).splitlines()[0]}): expected "
            "postgresql://user@host:port/dbname or libpq 'host=... dbname=...'"
        ) from None
    return dsn


def _bootstrap(dsn: str, models: Models, connect_timeout: float) -> None:
    """Create the extensions and migrate the schema (once per engine, before its pools open)."""
    dimension = models.embedder.dimension
    try:
        with psycopg.connect(
            dsn, autocommit=True, connect_timeout=max(2, math.ceil(connect_timeout))
        ) as conn:
            ensure_extensions(conn)
            # Banks of any dimension share the schema (migration 0006); a database made
            # before it first gets HNSW indexes for the dimension it was created with.
            existing = schema_dimension(conn)
            conn.autocommit = False
            apply_migrations(conn, dimension=existing or dimension)
            for size in {existing or dimension, dimension}:
                ensure_dimension(conn, size)
    except psycopg.OperationalError as exc:
        raise ConfigurationError(f"cannot connect to Postgres at {safe_dsn(dsn)}: {exc}") from exc


def _release(pools: Pools, embedded_path: Path | None) -> None:
    """Close an engine's connections and release its embedded server (``close``, or the
    finaliser of an engine nobody closed)."""
    try:
        pools.close()
    finally:
        if embedded_path is not None:
            release_embedded(embedded_path)


def safe_dsn(dsn: str) -> str:
    """``dsn`` without its password, to show in messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparseable dsn>"
    info.pop("password", None)
    return " ".join(f"{k}={v}" for k, v in info.items() if v is not None)


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
        embeddings: your own embedding model instead: any LangChain ``Embeddings``, LlamaIndex
            ``BaseEmbedding`` or ``text -> vector`` function (see
            :mod:`shared_core.embedding_adapters`). Banks remember their model: a bank written
            with another model or dimension raises a typed error, never a silent mix.
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

    def __init__(
        self,
        dsn: str | None = None,
        *,
        data_dir: str | Path | None = None,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
        date_parser: DateParser | None = None,
        entity_extractor: EntityExtractor | None = None,
        reranker: RerankerSpec | None = None,
        config: EngineConfig | None = None,
        embeddings: Any = None,
    ) -> None:
        if embedder is not None and embeddings is not None:
            raise ConfigurationError("pass either embedder= or embeddings=, not both")
        given = embedder if embedder is not None else embeddings
        if config is not None and not isinstance(config, EngineConfig):
            raise ConfigurationError(f"config must be an EngineConfig, got {type(config).__name__}")
        self.config = config or EngineConfig()
        self._embedded_path: Path | None = None
        if dsn is None:
            self._embedded_path, self.dsn = acquire_embedded(data_dir)
        else:
            if data_dir is not None:
                raise ConfigurationError("pass either dsn= or data_dir= (embedded), not both")
            self.dsn = _checked_dsn(normalise_dsn(dsn))
        self.models = Models(
            embedder=as_embedder(given) if given is not None else None,
            token_counter=token_counter,
            date_parser=date_parser,
            entity_extractor=entity_extractor,
            freeze_gc_after_load=self.config.freeze_gc_after_load,
        )
        self._reranker = reranker
        cfg = self.config
        # The pools and the finaliser must not hold the engine: an engine nobody closed is then
        # collected, and its finaliser closes the connections and releases the server.
        bootstrap = functools.partial(_bootstrap, self.dsn, self.models, cfg.connect_timeout)
        self._pools = Pools(
            self.dsn,
            bootstrap=bootstrap,
            min_size=cfg.pool_min_size,
            max_size=cfg.pool_max_size,
            ef_search=cfg.hnsw_ef_search,
            max_scan_tuples=cfg.hnsw_max_scan_tuples,
            connect_timeout=cfg.connect_timeout,
            outage_hint=(
                functools.partial(embedded_outage, self._embedded_path)
                if self._embedded_path is not None
                else None
            ),
            revive=(
                functools.partial(revive_embedded, self._embedded_path, self.dsn)
                if self._embedded_path is not None
                else None
            ),
        )
        self._finalizer = weakref.finalize(self, _release, self._pools, self._embedded_path)
        self._checked_banks: set[str] = set()
        self._closed = False

    # ---------------------------------------------------------------- components
    @property
    def embedder(self) -> Embedder:
        return self.models.embedder

    @property
    def token_counter(self) -> TokenCounter:
        return self.models.token_counter

    def uses_embeddings(self, embeddings: Any) -> bool:
        """Whether this engine embeds with ``embeddings`` (the object given as ``embedder=`` /
        ``embeddings=``, or wrapped from it), without loading the default model."""
        return wraps_same_model(self.models.current_embedder, embeddings)

    def with_embedder(self, embeddings: Any) -> MemoryEngine:
        """A new engine on the same database, configuration and models, embedding with
        ``embeddings`` (an ``Embedder``, LangChain ``Embeddings``, LlamaIndex ``BaseEmbedding``
        or function). It has its own pools: close it when done (this engine stays open, and
        must outlive it when it runs the embedded server).

        >>> with engine.with_embedder(OpenAIEmbeddings()) as openai_engine:  # doctest: +SKIP
        ...     openai_engine.retain(["..."], bank="openai-bank")
        """
        twin = MemoryEngine(
            self.dsn, embedder=as_embedder(embeddings), reranker=self._reranker, config=self.config
        )
        twin.models = self.models.sharing(embedder=twin.models.embedder)
        return twin

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
        self._finalizer()

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
            warnings.warn(
                "MemoryEngine was not closed; call close() or use 'with'", ResourceWarning, stacklevel=1
            )

    def _safe_dsn(self) -> str:
        return safe_dsn(self.dsn)

    def __repr__(self) -> str:
        where = f"embedded at {self._embedded_path}" if self._embedded_path else self._safe_dsn()
        state = "closed" if self._closed else "open"
        return f"<MemoryEngine {state} {where}>"

    # ---------------------------------------------------------------- retain
    def retain_plan(
        self,
        items: Iterable[Any],
        *,
        bank: str = DEFAULT_BANK,
        document_id: str | None = None,
        progress: bool | None = None,
        fact_extractor: FactExtractor | None = None,
    ) -> Plan[list[str]]:
        """:meth:`retain` as a plan, to compose with other statements in one transaction
        (run it with :meth:`run` / :meth:`arun`, or ``yield from`` it inside a plan)."""
        context = RetainContext(models=self.models, config=self.config, now=_utcnow)
        return retain_flow(
            context,
            items,
            bank=bank,
            document_id=document_id,
            progress=progress,
            fact_extractor=fact_extractor,
        )

    def retain(
        self,
        items: Iterable[Any],
        *,
        bank: str = DEFAULT_BANK,
        document_id: str | None = None,
        progress: bool | None = None,
        fact_extractor: FactExtractor | None = None,
    ) -> list[str]:
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
        return self.run(
            self.retain_plan(
                items, bank=bank, document_id=document_id, progress=progress, fact_extractor=fact_extractor
            )
        )

    async def aretain(
        self,
        items: Iterable[Any],
        *,
        bank: str = DEFAULT_BANK,
        document_id: str | None = None,
        progress: bool | None = None,
        fact_extractor: FactExtractor | None = None,
    ) -> list[str]:
        """Async twin of :meth:`retain`."""
        return await self.arun(
            self.retain_plan(
                items, bank=bank, document_id=document_id, progress=progress, fact_extractor=fact_extractor
            )
        )

    def retain_bulk(
        self,
        items: Iterable[Any],
        *,
        bank: str = DEFAULT_BANK,
        batch_size: int = DEFAULT_BULK_BATCH_SIZE,
        progress: bool | None = None,
        processes: int = DEFAULT_BULK_EXTRACTION_PROCESSES,
    ) -> list[str]:
        """Store many memories in one transaction, faster than one :meth:`retain` call: the
        items go in batches of ``batch_size``, and each batch's embedding and extraction run in
        a worker thread while the previous batch is written (:mod:`shared_core.retain.bulk`).
        Each batch is stored as ``retain(batch)`` would store it; every item is validated before
        anything is written, and all land or none. Index references (``caused_by=3``) must stay
        inside their batch. ``processes``: worker processes for the entity and date extraction
        (the same results, spread over the cores; :mod:`shared_core.extraction.processes`); by
        default none (on 2 shared cores they were no faster: the server needs the second core).

        >>> engine.retain_bulk(turns, bank="import", batch_size=1000)  # doctest: +SKIP
        ['0196...', ...]
        """
        return self.run(
            self.retain_bulk_plan(
                items, bank=bank, batch_size=batch_size, progress=progress, processes=processes
            )
        )

    async def aretain_bulk(
        self,
        items: Iterable[Any],
        *,
        bank: str = DEFAULT_BANK,
        batch_size: int = DEFAULT_BULK_BATCH_SIZE,
        progress: bool | None = None,
        processes: int = DEFAULT_BULK_EXTRACTION_PROCESSES,
    ) -> list[str]:
        """Async twin of :meth:`retain_bulk`."""
        return await self.arun(
            self.retain_bulk_plan(
                items, bank=bank, batch_size=batch_size, progress=progress, processes=processes
            )
        )

    def retain_bulk_plan(
        self,
        items: Iterable[Any],
        *,
        bank: str = DEFAULT_BANK,
        batch_size: int = DEFAULT_BULK_BATCH_SIZE,
        progress: bool | None = None,
        processes: int = DEFAULT_BULK_EXTRACTION_PROCESSES,
    ) -> Plan[list[str]]:
        """:meth:`retain_bulk` as a plan."""
        context = RetainContext(models=self.models, config=self.config, now=_utcnow)
        return bulk_flow(
            context, items, bank=bank, batch_size=batch_size, progress=progress, processes=processes
        )

    # ---------------------------------------------------------------- recall
    def recall_context(self, reranker: RerankerSpec | None = None) -> RecallContext:
        """The models and settings a recall plan runs with (loads them on first use)."""
        parser = self.date_parser
        spec = reranker if reranker is not None else self._reranker
        return RecallContext(
            embed_query=self.embedder.embed_query,
            parse_query_dates=parser.parse_query_dates if parser is not None else None,
            counter=self.token_counter,
            reranker=Reranker.from_spec(spec),
            settings=self.config.recall.for_model(self.embedder.model_name),
            now=_utcnow,
        )

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
        context = self.recall_context(opts.reranker)
        return self._pools.run_read(lambda: self._checked_recall(context, query, opts))

    async def arecall(self, query: str, **options: Unpack[RecallKwargs]) -> RecallResult:
        """Async twin of :meth:`recall`."""
        opts = RecallOptions(**options)
        context = await asyncio.to_thread(self.recall_context, opts.reranker)
        return await self._pools.arun_read(lambda: self._checked_recall(context, query, opts))

    def _checked_recall(self, context: RecallContext, query: str, opts: RecallOptions) -> Plan[RecallResult]:
        # A bank written by another model (or dimension) raises, naming both, instead of
        # ranking by noise (or finding nothing); checked once per bank and engine.
        if opts.bank not in self._checked_banks:
            # On a pooled connection of its own (autocommit), not the plan's: the plan's would
            # stay held, in a transaction, through the whole recall, and concurrent first
            # recalls of a bank then held a small pool's every connection while their arms'
            # statements waited for one (60 s, the pool's timeout, in tests/integration/
            # test_launch.py with a pool of 2 under 6 threads).
            (row,) = yield Concurrently((queries.bank_embedder_query(opts.bank),))
            if isinstance(row, BaseException):
                raise row
            if row is not None:
                row.check(opts.bank, self.embedder.model_name, self.embedder.dimension)
                self._checked_banks.add(opts.bank)
        result: RecallResult = yield from recall_plan(context, query, opts)
        return result

    def declare_filter_index(
        self,
        *,
        bank: str = DEFAULT_BANK,
        filter: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        tags_match: TagsMatch = "any",
    ) -> str:
        """Build (if missing) an HNSW index of ``bank``'s memories that pass this filter
        (``filter`` / ``tags`` / ``tags_match`` as :meth:`recall` takes them) and return its name.

        A broad filter (thousands of matches) is otherwise ranked exactly, reading every match;
        recalls under a declared filter, or one implying it, walk its index instead
        (approximate, as an unfiltered recall's walk). Declare it for a filter you run often on
        a low-cardinality key (a team, a tag, a source), as pgvector advises. The build blocks
        writes to the table while it runs; ``DROP INDEX`` by the returned name undoes it;
        declaring the same filter again builds nothing.

        >>> engine.declare_filter_index(bank="support", filter={"team": "er"})  # doctest: +SKIP
        'memory_units_filter_4f1d0c2a_9b8e...'
        """
        return self.run(self._declare_filter_index_plan(bank, filter, tags, tags_match))

    async def adeclare_filter_index(
        self,
        *,
        bank: str = DEFAULT_BANK,
        filter: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        tags_match: TagsMatch = "any",
    ) -> str:
        """Async twin of :meth:`declare_filter_index`."""
        return await self.arun(self._declare_filter_index_plan(bank, filter, tags, tags_match))

    def _declare_filter_index_plan(
        self,
        bank: str,
        filter: Mapping[str, Any] | None,
        tags: Sequence[str] | None,
        tags_match: TagsMatch,
    ) -> Plan[str]:
        """The options checked as recall checks them (typed errors before anything runs), then
        the plan building the index for this engine's query vectors."""
        opts = RecallOptions(bank=bank, filter=filter, tags=tags, tags_match=tags_match)
        return declare_filter_index(
            opts.bank, self.embedder.dimension, filter=opts.filter, tags=opts.tags, tags_match=opts.tags_match
        )

    # ---------------------------------------------------------------- read / delete
    def get(self, memory_id: str, *, bank: str = DEFAULT_BANK) -> MemoryRecord | None:
        """The memory with this id in ``bank``, or None."""
        bank = check_bank(bank)
        return self._pools.run_read(lambda: queries.get_plan(bank, memory_id))

    async def aget(self, memory_id: str, *, bank: str = DEFAULT_BANK) -> MemoryRecord | None:
        """Async twin of :meth:`get`."""
        bank = check_bank(bank)
        return await self._pools.arun_read(lambda: queries.get_plan(bank, memory_id))

    def delete(
        self, ids: Sequence[str] | None = None, *, bank: str = DEFAULT_BANK, document_id: str | None = None
    ) -> int:
        """Delete memories by id, or a whole document; return how many memories went."""
        return self.run(queries.delete_plan(check_bank(bank), ids, document_id))

    async def adelete(
        self, ids: Sequence[str] | None = None, *, bank: str = DEFAULT_BANK, document_id: str | None = None
    ) -> int:
        """Async twin of :meth:`delete`."""
        return await self.arun(queries.delete_plan(check_bank(bank), ids, document_id))

    def get_documents(self, ids: Sequence[str], *, bank: str = DEFAULT_BANK) -> list[StoredDocument]:
        """The documents with these ids (the ``document_id`` they were retained with, or a
        memory id), in the order asked; ids not found are skipped."""
        return self.run(documents.get_documents_plan(check_bank(bank), ids))

    async def aget_documents(self, ids: Sequence[str], *, bank: str = DEFAULT_BANK) -> list[StoredDocument]:
        """Async twin of :meth:`get_documents`."""
        return await self.arun(documents.get_documents_plan(check_bank(bank), ids))

    def delete_documents(self, ids: Sequence[str], *, bank: str = DEFAULT_BANK) -> int:
        """Delete the documents (or memories) with these ids; return how many memories went."""
        return self.run(documents.delete_documents_plan(check_bank(bank), ids))

    async def adelete_documents(self, ids: Sequence[str], *, bank: str = DEFAULT_BANK) -> int:
        """Async twin of :meth:`delete_documents`."""
        return await self.arun(documents.delete_documents_plan(check_bank(bank), ids))

    def vectors(
        self, memory_ids: Sequence[str], *, bank: str = DEFAULT_BANK
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The stored embeddings of these memories, by id."""
        return self.run(documents.vectors_plan(check_bank(bank), memory_ids))

    async def avectors(
        self, memory_ids: Sequence[str], *, bank: str = DEFAULT_BANK
    ) -> dict[str, npt.NDArray[np.float32]]:
        """Async twin of :meth:`vectors`."""
        return await self.arun(documents.vectors_plan(check_bank(bank), memory_ids))

    def banks(self) -> list[BankInfo]:
        """Every bank in the database."""
        return self._pools.run_read(queries.banks_plan)

    async def abanks(self) -> list[BankInfo]:
        """Async twin of :meth:`banks`."""
        return await self._pools.arun_read(queries.banks_plan)

    def stream(self, bank: str | None = None) -> MemoryStream:
        """The memory stream of ``bank`` (its memories in the order added, with access times;
        see :mod:`shared_core.storage.stream`); ``None``: a new private bank that
        :meth:`MemoryStream.drop` removes. Sync and ``a``-prefixed async methods."""
        if bank is None:
            return MemoryStream.private(self)
        return MemoryStream(self, check_bank(bank))

    def stats(self, bank: str = DEFAULT_BANK) -> BankStats:
        """Row counts for ``bank`` (zeros for a bank that does not exist)."""
        bank = check_bank(bank)
        return self._pools.run_read(lambda: queries.stats_plan(bank))

    async def astats(self, bank: str = DEFAULT_BANK) -> BankStats:
        """Async twin of :meth:`stats`."""
        bank = check_bank(bank)
        return await self._pools.arun_read(lambda: queries.stats_plan(bank))


class AsyncMemoryEngine:
    """Async-first face of :class:`MemoryEngine`: the same engine, coroutine methods.

    Takes :class:`MemoryEngine`'s arguments, or wraps an existing engine (``engine=``).

    >>> async with AsyncMemoryEngine() as engine:  # doctest: +SKIP
    ...     await engine.retain(["Alice works at Google."], bank="demo")
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        data_dir: str | Path | None = None,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
        date_parser: DateParser | None = None,
        entity_extractor: EntityExtractor | None = None,
        reranker: RerankerSpec | None = None,
        config: EngineConfig | None = None,
        engine: MemoryEngine | None = None,
    ) -> None:
        if engine is None:
            engine = MemoryEngine(
                dsn,
                data_dir=data_dir,
                embedder=embedder,
                token_counter=token_counter,
                date_parser=date_parser,
                entity_extractor=entity_extractor,
                reranker=reranker,
                config=config,
            )
        self.sync = engine

    async def retain(
        self,
        items: Iterable[Any],
        *,
        bank: str = DEFAULT_BANK,
        document_id: str | None = None,
        progress: bool | None = None,
        fact_extractor: FactExtractor | None = None,
    ) -> list[str]:
        """See :meth:`MemoryEngine.retain`."""
        return await self.sync.aretain(
            items, bank=bank, document_id=document_id, progress=progress, fact_extractor=fact_extractor
        )

    async def retain_bulk(
        self,
        items: Iterable[Any],
        *,
        bank: str = DEFAULT_BANK,
        batch_size: int = DEFAULT_BULK_BATCH_SIZE,
        progress: bool | None = None,
        processes: int = DEFAULT_BULK_EXTRACTION_PROCESSES,
    ) -> list[str]:
        """See :meth:`MemoryEngine.retain_bulk`."""
        return await self.sync.aretain_bulk(
            items, bank=bank, batch_size=batch_size, progress=progress, processes=processes
        )

    async def recall(self, query: str, **options: Unpack[RecallKwargs]) -> RecallResult:
        """See :meth:`MemoryEngine.recall`."""
        return await self.sync.arecall(query, **options)

    async def declare_filter_index(
        self,
        *,
        bank: str = DEFAULT_BANK,
        filter: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        tags_match: TagsMatch = "any",
    ) -> str:
        """See :meth:`MemoryEngine.declare_filter_index`."""
        return await self.sync.adeclare_filter_index(
            bank=bank, filter=filter, tags=tags, tags_match=tags_match
        )

    async def get(self, memory_id: str, *, bank: str = DEFAULT_BANK) -> MemoryRecord | None:
        """See :meth:`MemoryEngine.get`."""
        return await self.sync.aget(memory_id, bank=bank)

    async def delete(
        self, ids: Sequence[str] | None = None, *, bank: str = DEFAULT_BANK, document_id: str | None = None
    ) -> int:
        """See :meth:`MemoryEngine.delete`."""
        return await self.sync.adelete(ids, bank=bank, document_id=document_id)

    async def banks(self) -> list[BankInfo]:
        """See :meth:`MemoryEngine.banks`."""
        return await self.sync.abanks()

    async def stats(self, bank: str = DEFAULT_BANK) -> BankStats:
        """See :meth:`MemoryEngine.stats`."""
        return await self.sync.astats(bank)

    def stream(self, bank: str | None = None) -> MemoryStream:
        """See :meth:`MemoryEngine.stream` (use its ``a``-prefixed methods)."""
        return self.sync.stream(bank)

    async def close(self) -> None:
        await self.sync.aclose()

    async def __aenter__(self) -> AsyncMemoryEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return repr(self.sync).replace("MemoryEngine", "AsyncMemoryEngine", 1)
