"""``MemoryEngine``: the public entry point (sync methods and their ``a``-prefixed async twins).

The engine owns the connection pools, the models and the configuration. Every operation is a
sans-I/O plan (see :mod:`shared_core.storage.plan`) executed by the sync or the async runner,
so both faces share one implementation.

>>> with MemoryEngine() as engine:                       # embedded Postgres, default models
...     ids = engine.retain(["Alice joined Google in March 2021."], bank="demo")
...     result = engine.recall("Where does Alice work?", bank="demo")
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as _dt
import gc
import threading
import warnings
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector, register_vector_async
from psycopg import sql
from psycopg_pool import AsyncConnectionPool, ConnectionPool

from shared_core.config import (
    DEFAULT_BANK,
    DEFAULT_MAX_CHUNK_TOKENS,
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPORAL_LINK_FLOOR,
    EngineConfig,
)
from shared_core.embedding import default_embedder
from shared_core.errors import (
    ConfigurationError,
    DimensionMismatchError,
    HindsightError,
    InvalidItemError,
)
from shared_core.protocols import (
    DateParser,
    Embedder,
    EntityExtractor,
    PairScorer,
    TokenCounter,
)
from shared_core.recall.pipeline import RecallContext, RecallOptions, RecallSettings, recall_plan
from shared_core.recall.rerank import Reranker
from shared_core.retain.extract import extract
from shared_core.retain.plan import RetainRequest, merge_vectors, retain_plan
from shared_core.retain.prepare import coerce_items, prepare_units
from shared_core.schema import (
    apply_migrations,
    ensure_extensions,
    schema_dimension,
    schema_model,
)
from shared_core.server import acquire_embedded, normalise_dsn, release_embedded
from shared_core.storable import text_problem
from shared_core.storage import queries
from shared_core.storage.plan import Compute, Plan
from shared_core.storage.runner import run_async, run_sync
from shared_core.tokens import default_token_counter
from shared_core.types import ArmName, MemoryRecord, RecallResult, TimeWindow

if TYPE_CHECKING:
    from shared_core.extraction.facts import FactExtractor

__all__ = ["AsyncMemoryEngine", "BankInfo", "BankStats", "MemoryEngine"]

T = TypeVar("T")
_MAX_BANK_LENGTH = 200
_SESSION_SETTINGS = sql.SQL(
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', false), "
    "set_config('hnsw.ef_search', {ef}, false), "
    "set_config('hnsw.max_scan_tuples', {tuples}, false)")


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


def check_bank(bank: str) -> str:
    if not isinstance(bank, str) or not bank.strip():
        raise ConfigurationError("bank must be a non-empty string")
    if len(bank) > _MAX_BANK_LENGTH:
        raise ConfigurationError(f"bank must be at most {_MAX_BANK_LENGTH} characters")
    problem = text_problem(bank)
    if problem is not None:
        raise ConfigurationError(f"bank {problem}")
    return bank


def _utcnow() -> _dt.datetime:
    # Looked up through the module at call time so langchain's mock_now applies.
    now = _dt.datetime.now(_dt.UTC)
    return now if now.tzinfo is not None else now.replace(tzinfo=_dt.UTC)


async def _close_at_loop_shutdown(pool: AsyncConnectionPool[Any]) -> None:
    """Close ``pool`` when its event loop shuts down (``asyncio.run`` ending cancels every
    task). The pool's own workers may be cancelled mid-connect and go back to waiting for work
    (psycopg_pool retries a failed connection), which hung ``asyncio.run``'s exit; closing the
    pool sends them their stop message. A no-op once the pool is closed by ``aclose``."""
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError:
        if not pool.closed:
            await pool.close(timeout=1.0)
        raise


class MemoryEngine:
    """Long-term memory on Postgres + pgvector: ``retain`` memories, ``recall`` them.

    Args:
        dsn: any libpq DSN or SQLAlchemy-style URL (``postgresql+psycopg://...``). ``None``
            starts (or reuses) the embedded PostgreSQL 18 + pgvector server.
        data_dir: the embedded server's data directory (default: the user data dir).
        embedder: an :class:`~shared_core.protocols.Embedder` (default all-MiniLM-L6-v2).
        token_counter: a :class:`~shared_core.protocols.TokenCounter` (default cl100k_base).
        config: an :class:`~shared_core.config.EngineConfig`.

    Naive datetimes given to the engine are taken as UTC. The engine is thread-safe; close it
    (or use it as a context manager) to release its connections and the embedded server.
    """

    def __init__(self, dsn: str | None = None, *, data_dir: str | Path | None = None,
                 embedder: Embedder | None = None, token_counter: TokenCounter | None = None,
                 config: EngineConfig | None = None, **components: Any) -> None:
        self.config = config or EngineConfig()
        self._embedded_path: Path | None = None
        if dsn is None:
            self._embedded_path, self.dsn = acquire_embedded(data_dir)
        else:
            if data_dir is not None:
                raise ConfigurationError("pass either dsn= or data_dir= (embedded), not both")
            self.dsn = normalise_dsn(dsn)
        self._embedder = embedder
        self._counter = token_counter
        self._components = components
        self.recall_settings = RecallSettings(ts_config=self.config.ts_config)
        self._lock = threading.Lock()
        self._pool: ConnectionPool[Any] | None = None
        self._async_pools: dict[asyncio.AbstractEventLoop, AsyncConnectionPool[Any]] = {}
        self._pool_closers: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}
        self._pools_opening: dict[asyncio.AbstractEventLoop,
                                  asyncio.Future[AsyncConnectionPool[Any]]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._closed = False

    # ---------------------------------------------------------------- components
    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = default_embedder()
            self._models_loaded()
        return self._embedder

    @property
    def token_counter(self) -> TokenCounter:
        if self._counter is None:
            self._counter = default_token_counter()
        return self._counter

    def _models_loaded(self) -> None:
        # Model objects live as long as the process: keep the cyclic collector from
        # rescanning them in every full collection (see DEFAULT_FREEZE_GC_AFTER_LOAD).
        if self.config.freeze_gc_after_load:
            gc.freeze()

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

    def _session_settings(self) -> sql.Composed:
        # Iterative scans let a filtered ANN query (bank, fact type, tags) return its full LIMIT
        # instead of stopping at ef_search candidates.
        return _SESSION_SETTINGS.format(ef=sql.Literal(str(int(self.config.hnsw_ef_search))),
                                        tuples=sql.Literal(
                                            str(int(self.config.hnsw_max_scan_tuples))))

    def _configure_sync(self, conn: psycopg.Connection[Any]) -> None:
        register_vector(conn)
        conn.execute(self._session_settings())
        conn.commit()

    async def _configure_async(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await register_vector_async(conn)
        await conn.execute(self._session_settings())
        await conn.commit()

    def _sync_pool(self) -> ConnectionPool[Any]:
        if self._closed:
            raise HindsightError("this engine is closed")
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._bootstrap()
                    self._executor = ThreadPoolExecutor(max_workers=4,
                                                        thread_name_prefix="hindsight")
                    self._pool = ConnectionPool(
                        self.dsn, min_size=self.config.pool_min_size,
                        max_size=self.config.pool_max_size, configure=self._configure_sync,
                        open=True, name="hindsight")
        return self._pool

    async def _async_pool(self) -> AsyncConnectionPool[Any]:
        loop = asyncio.get_running_loop()
        pool = self._async_pools.get(loop)
        if pool is not None:
            return pool
        # Concurrent first calls on one loop (gather of arecalls) must share one pool: each
        # used to open its own, and the orphans' workers hung asyncio.run's exit.
        opening = self._pools_opening.get(loop)
        if opening is not None:
            return await asyncio.shield(opening)
        opening = loop.create_future()
        self._pools_opening[loop] = opening
        try:
            pool = await self._open_async_pool(loop)
        except asyncio.CancelledError:
            opening.cancel()
            raise
        except BaseException as exc:
            opening.set_exception(exc)
            opening.exception()  # mark it retrieved: the waiters, if any, get it too
            raise
        finally:
            self._pools_opening.pop(loop, None)
        opening.set_result(pool)
        return pool

    async def _open_async_pool(self, loop: asyncio.AbstractEventLoop
                               ) -> AsyncConnectionPool[Any]:
        # Bootstrapping (models, migrations) is blocking work: keep it off the loop.
        await asyncio.to_thread(self._sync_pool)
        for stale in [lp for lp in self._async_pools if lp.is_closed()]:
            del self._async_pools[stale]
            self._pool_closers.pop(stale, None)
        pool = AsyncConnectionPool(
            self.dsn, min_size=self.config.pool_min_size,
            max_size=self.config.pool_max_size, configure=self._configure_async,
            open=False, name="hindsight-async")
        await pool.open()
        self._async_pools[loop] = pool
        # The loop keeps only a weak reference to a task: hold this one.
        self._pool_closers[loop] = loop.create_task(
            _close_at_loop_shutdown(pool), name="hindsight-async-pool-closer")
        return pool

    def run(self, plan: Plan[T]) -> T:
        """Run a sans-I/O plan (see :mod:`shared_core.storage.plan`) in one transaction.

        The extension point for adapters and advanced users: write a plan once, run it with
        :meth:`run` or :meth:`arun`.
        """
        pool = self._sync_pool()
        assert self._executor is not None
        return run_sync(pool, plan, executor=self._executor)

    async def arun(self, plan: Plan[T]) -> T:
        """Async twin of :meth:`run`."""
        return await run_async(await self._async_pool(), plan)

    _run = run
    _arun = arun

    def close(self) -> None:
        """Close the pools and release the embedded server (stopped when no engine uses it)."""
        if self._closed:
            return
        self._closed = True
        if self._pool is not None:
            self._pool.close()
        for loop, pool in list(self._async_pools.items()):
            if not loop.is_closed() and loop.is_running():
                # Closing from another loop is not possible; the pool's workers die with it.
                continue
            if not loop.is_closed():
                loop.run_until_complete(pool.close())
        self._async_pools.clear()
        self._pool_closers.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=False)
        if self._embedded_path is not None:
            release_embedded(self._embedded_path)

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        loop = asyncio.get_running_loop()
        pool = self._async_pools.pop(loop, None)
        if pool is not None:
            await pool.close()
        closer = self._pool_closers.pop(loop, None)
        if closer is not None:
            closer.cancel()
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
    def _embed_with_progress(self, texts: list[str], progress: bool
                             ) -> npt.NDArray[np.float32]:
        size = self.config.embed_batch_size
        if not progress or len(texts) <= self.config.progress_threshold:
            return self.embedder.embed_documents(texts)
        from tqdm.auto import tqdm

        parts = []
        with tqdm(total=len(texts), desc="embedding", unit="memory") as bar:
            for start in range(0, len(texts), size):
                parts.append(self.embedder.embed_documents(texts[start:start + size]))
                bar.update(len(parts[-1]))
        return np.concatenate(parts, axis=0)

    def _prepare_retain(self, items: Sequence[Any], bank: str, document_id: str | None,
                        progress: bool) -> tuple[RetainRequest, npt.NDArray[np.float32]]:
        now = _utcnow()
        validated = coerce_items(items, document_id=document_id)
        units, chunks = prepare_units(
            validated, now=now, unit_max_tokens=self.config.unit_max_tokens,
            window_tokens=self.config.sentence_window_tokens, counter=self.token_counter)
        vectors = merge_vectors(validated, units,
                                lambda texts: self._embed_with_progress(texts, progress))
        cfg = self.config
        extraction = extract(
            units, validated,
            date_parser=self.date_parser if cfg.extract_dates else None,
            entity_extractor=self.entity_extractor if cfg.extract_entities else None,
            entity_threshold=cfg.entity_similarity_threshold)
        replace = sorted({i.document_id for i in validated if i.document_id is not None})
        request = RetainRequest(
            bank=bank, items=validated, units=extraction.units, chunks=chunks,
            replace_documents=replace, embedding_model=self.embedder.model_name,
            ts_config=cfg.ts_config, now=now, signals=extraction.signals, cjk=extraction.cjk,
            entities=extraction.entities, entity_threshold=cfg.entity_similarity_threshold,
            semantic_link_min=cfg.semantic_link_min_similarity,
            semantic_link_k=cfg.semantic_link_top_k, temporal_link_k=cfg.temporal_link_top_k,
            temporal_link_floor=DEFAULT_TEMPORAL_LINK_FLOOR, cue_links=cfg.causal_cue_links)
        return request, vectors

    def _retain_flow(self, items: Iterable[Any], bank: str, document_id: str | None,
                     progress: bool, fact_extractor: FactExtractor | None = None
                     ) -> Plan[list[str]]:
        check_bank(bank)
        materialised = list(items) if not isinstance(items, str | bytes) else items
        if fact_extractor is not None and not isinstance(materialised, str | bytes):
            for index, raw in enumerate(materialised):
                if not isinstance(raw, str):
                    raise InvalidItemError(index, "with a fact_extractor, items must be strings "
                                                  "(the extractor turns them into facts)")
            materialised = yield Compute(fact_extractor.extract_facts, (materialised,))
        request, vectors = yield Compute(self._prepare_retain,
                                         (materialised, bank, document_id, progress))
        ids: list[str] = yield from retain_plan(request, vectors)
        return ids

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

        >>> engine.retain(["Alice works at Google.",
        ...                {"text": "Bob moved to Paris.", "tags": ["bob"]}], bank="demo")
        ['0196...', '0196...']
        """
        return self._run(self._retain_flow(items, bank, document_id, progress, fact_extractor))

    async def aretain(self, items: Iterable[Any], *, bank: str = DEFAULT_BANK,
                      document_id: str | None = None, progress: bool = True,
                      fact_extractor: FactExtractor | None = None) -> list[str]:
        """Async twin of :meth:`retain`."""
        return await self._arun(self._retain_flow(items, bank, document_id, progress,
                                                  fact_extractor))

    # ---------------------------------------------------------------- recall
    @property
    def date_parser(self) -> DateParser | None:
        """The date parser for query windows (and retain); None if it cannot load."""
        if "date_parser" not in self._components:
            try:
                from shared_core.extraction.dates import default_date_parser

                self._components["date_parser"] = default_date_parser()
                self._models_loaded()
            except Exception as exc:  # optional model: fall back loudly, once
                warnings.warn(f"date parsing disabled: {exc}", RuntimeWarning, stacklevel=2)
                self._components["date_parser"] = None
        parser: DateParser | None = self._components["date_parser"]
        return parser

    @property
    def entity_extractor(self) -> EntityExtractor | None:
        """The entity extractor used at retain (spaCy by default); None if it cannot load."""
        if "entity_extractor" not in self._components:
            try:
                from shared_core.extraction.entities import SpacyEntityExtractor

                extractor = SpacyEntityExtractor()
                extractor.pipeline  # noqa: B018  (load now, so a failure is reported here)
                self._components["entity_extractor"] = extractor
                self._models_loaded()
            except Exception as exc:  # optional model: fall back loudly, once
                warnings.warn(f"entity extraction disabled: {exc}", RuntimeWarning,
                              stacklevel=2)
                self._components["entity_extractor"] = None
        found: EntityExtractor | None = self._components["entity_extractor"]
        return found

    def _recall_context(self, reranker: str | PairScorer | Reranker | None) -> RecallContext:
        parser = self.date_parser
        spec = reranker if reranker is not None else self._components.get("reranker")
        return RecallContext(
            embed_query=self.embedder.embed_query,
            parse_query_dates=parser.parse_query_dates if parser is not None else None,
            counter=self.token_counter, reranker=Reranker.from_spec(spec),
            settings=self.recall_settings, now=_utcnow)

    def _recall_options(self, query: str, **kwargs: Any) -> RecallOptions:
        arms = kwargs.pop("arms", None)
        options = RecallOptions(query=query, **kwargs)
        if arms is not None:
            options = dataclasses.replace(options, arms=frozenset(arms))
        check_bank(options.bank)
        return options

    def recall(self, query: str, *, bank: str = DEFAULT_BANK, max_tokens: int = DEFAULT_MAX_TOKENS,
               budget: str = "mid", types: Sequence[str] | None = None,
               tags: Sequence[str] | None = None, tags_match: str = "any",
               query_timestamp: _dt.datetime | None = None,
               temporal_window: TimeWindow | None = None, include_chunks: bool = False,
               max_chunk_tokens: int = DEFAULT_MAX_CHUNK_TOKENS,
               reranker: str | PairScorer | Reranker | None = None, trace: bool = False,
               arms: Iterable[ArmName] | None = None) -> RecallResult:
        """Recall the memories of ``bank`` that answer ``query``, best first.

        Four arms (semantic, keyword, entity graph, temporal) run concurrently; their lists
        are fused with RRF (k=60), reranked (cross-encoder, or passthrough when none can be
        loaded offline), boosted for recency, temporal proximity and evidence, and cut to
        ``max_tokens`` of memory text. ``budget`` (low/mid/high/adaptive) sets how many
        candidates each arm fetches. Relative dates in the query ("last spring") resolve
        against ``query_timestamp`` (default: now, UTC); ``temporal_window`` replaces parsing.
        ``arms`` restricts the arms (ablations).

        >>> result = engine.recall("Where does Alice work?", bank="demo", trace=True)
        >>> result.memories[0].text
        'Alice works at Google as a software engineer in Zurich.'
        """
        options = self._recall_options(
            query, bank=bank, max_tokens=max_tokens, budget=budget, types=types, tags=tags,
            tags_match=tags_match, query_timestamp=query_timestamp,
            temporal_window=temporal_window, include_chunks=include_chunks,
            max_chunk_tokens=max_chunk_tokens, trace=trace, arms=arms)
        return self.run(recall_plan(self._recall_context(reranker), options))

    async def arecall(self, query: str, *, bank: str = DEFAULT_BANK,
                      max_tokens: int = DEFAULT_MAX_TOKENS, budget: str = "mid",
                      types: Sequence[str] | None = None, tags: Sequence[str] | None = None,
                      tags_match: str = "any", query_timestamp: _dt.datetime | None = None,
                      temporal_window: TimeWindow | None = None, include_chunks: bool = False,
                      max_chunk_tokens: int = DEFAULT_MAX_CHUNK_TOKENS,
                      reranker: str | PairScorer | Reranker | None = None, trace: bool = False,
                      arms: Iterable[ArmName] | None = None) -> RecallResult:
        """Async twin of :meth:`recall`."""
        options = self._recall_options(
            query, bank=bank, max_tokens=max_tokens, budget=budget, types=types, tags=tags,
            tags_match=tags_match, query_timestamp=query_timestamp,
            temporal_window=temporal_window, include_chunks=include_chunks,
            max_chunk_tokens=max_chunk_tokens, trace=trace, arms=arms)
        context = await asyncio.to_thread(self._recall_context, reranker)
        return await self.arun(recall_plan(context, options))

    # ---------------------------------------------------------------- read / delete
    def get(self, memory_id: str, *, bank: str = DEFAULT_BANK) -> MemoryRecord | None:
        """The memory with this id in ``bank``, or None."""
        return self._run(queries.get_plan(check_bank(bank), memory_id))

    async def aget(self, memory_id: str, *, bank: str = DEFAULT_BANK) -> MemoryRecord | None:
        return await self._arun(queries.get_plan(check_bank(bank), memory_id))

    def delete(self, ids: Sequence[str] | None = None, *, bank: str = DEFAULT_BANK,
               document_id: str | None = None) -> int:
        """Delete memories by id, or a whole document; return how many memories went."""
        return self._run(queries.delete_plan(check_bank(bank), ids, document_id))

    async def adelete(self, ids: Sequence[str] | None = None, *, bank: str = DEFAULT_BANK,
                      document_id: str | None = None) -> int:
        return await self._arun(queries.delete_plan(check_bank(bank), ids, document_id))

    def banks(self) -> list[BankInfo]:
        """Every bank in the database."""
        return [BankInfo(**row) for row in self._run(queries.banks_plan())]

    async def abanks(self) -> list[BankInfo]:
        return [BankInfo(**row) for row in await self._arun(queries.banks_plan())]

    def stats(self, bank: str = DEFAULT_BANK) -> BankStats:
        """Row counts for ``bank`` (zeros for a bank that does not exist)."""
        return BankStats(**self._run(queries.stats_plan(check_bank(bank))))

    async def astats(self, bank: str = DEFAULT_BANK) -> BankStats:
        return BankStats(**await self._arun(queries.stats_plan(check_bank(bank))))


class AsyncMemoryEngine:
    """Async-first face of :class:`MemoryEngine`: the same engine, coroutine methods.

    >>> async with AsyncMemoryEngine() as engine:
    ...     await engine.retain(["Alice works at Google."], bank="demo")
    """

    def __init__(self, dsn: str | None = None, **kwargs: Any) -> None:
        self.sync = MemoryEngine(dsn, **kwargs)

    async def retain(self, items: Iterable[Any], **kwargs: Any) -> list[str]:
        return await self.sync.aretain(items, **kwargs)

    async def recall(self, query: str, **kwargs: Any) -> RecallResult:
        return await self.sync.arecall(query, **kwargs)

    async def get(self, memory_id: str, **kwargs: Any) -> MemoryRecord | None:
        return await self.sync.aget(memory_id, **kwargs)

    async def delete(self, ids: Sequence[str] | None = None, **kwargs: Any) -> int:
        return await self.sync.adelete(ids, **kwargs)

    async def banks(self) -> list[BankInfo]:
        return await self.sync.abanks()

    async def stats(self, bank: str = DEFAULT_BANK) -> BankStats:
        return await self.sync.astats(bank)

    async def close(self) -> None:
        await self.sync.aclose()

    async def __aenter__(self) -> AsyncMemoryEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return repr(self.sync).replace("MemoryEngine", "AsyncMemoryEngine", 1)
