"""Copy a ``langchain-postgres`` collection into a Hindsight bank.

Both storage layouts of langchain-postgres are read with plain psycopg:

* the deprecated ``PGVector`` (``collection_name=``): two shared tables,
  ``langchain_pg_collection(uuid, name, cmetadata)`` and
  ``langchain_pg_embedding(id, collection_id, embedding, document, cmetadata)``;
* ``PGVectorStore`` (``table_name=``): one table per collection with ``langchain_id``,
  ``content``, ``embedding``, a ``langchain_metadata`` JSON column and optional metadata
  columns (column names are configurable, as in ``PGVectorStore.create``).

Rows are read in primary-key order, ``batch_size`` at a time (keyset pagination: no long-lived
read transaction on the source), and each batch is retained into the bank as **its own
transaction**. An import that fails half-way leaves the earlier batches in the bank; because
each row's source id becomes its ``document_id``, simply running the import again replaces
them instead of duplicating them. Rows deleted from the source since an earlier import are not
removed from the bank.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import decimal
import uuid
import warnings
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import psycopg
from langchain_core.documents import Document
from psycopg import sql

from hindsight_langchain.documents import document_to_item
from shared_core.engine import AsyncMemoryEngine, MemoryEngine
from shared_core.errors import ConfigurationError
from shared_core.integrations import resolve_engine
from shared_core.server import normalise_dsn
from shared_core.storage.plan import Statement
from shared_core.types import MemoryItem, check_bank

__all__ = ["aimport_pgvector_collection", "import_pgvector_collection"]

_COLLECTION_TABLE = "langchain_pg_collection"
_EMBEDDING_TABLE = "langchain_pg_embedding"


class _NewKwargs(TypedDict):
    """``PGVectorStore``'s column options, as the import functions take them."""

    id_column: str
    content_column: str
    embedding_column: str
    metadata_json_column: str | None
    metadata_columns: Sequence[str] | None


_COLUMNS_QUERY = """
SELECT a.attname, t.typname
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attrelid = to_regclass(%(relation)s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum"""


def _model_key(name: str) -> str:
    key = name.strip().lower()
    return key.removeprefix("sentence-transformers/")


def _model_name(model: Any) -> str | None:
    """A model name from a string or a LangChain ``Embeddings`` object (``model_name``/``model``)."""
    if model is None or isinstance(model, str):
        return model
    for attr in ("model_name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str):
            return value
    raise ConfigurationError(
        f"embedding_model must be a model name (or an Embeddings object with a model_name), "
        f"got {type(model).__name__}"
    )


def _jsonable(value: Any) -> Any:
    """Postgres column values as JSON-friendly metadata (datetimes are kept: the date mapping
    reads them and the engine stores them as ISO strings)."""
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True, slots=True)
class _Source:
    """How to read one collection: a paginated SELECT returning
    ``(source_id, text, metadata, vector, *extra)`` and the names of the extra columns."""

    label: str
    count: sql.Composed
    page: sql.Composed
    params: Mapping[str, Any]
    extra_columns: tuple[str, ...]


@dataclasses.dataclass(slots=True)
class _Options:
    bank: str
    reuse: bool
    dimension: int
    batch_size: int
    progress: bool
    progress_threshold: int
    skipped_empty: int = 0
    mismatched: int = 0


def _old_source(schema: str, collection_uuid: Any, name: str, reuse: bool) -> _Source:
    table = sql.Identifier(schema, _EMBEDDING_TABLE)
    vector = sql.SQL("e.embedding::real[]") if reuse else sql.SQL("NULL::real[]")
    page = sql.SQL(
        "SELECT e.id, e.document, e.cmetadata, {vector} FROM {table} AS e "
        "WHERE e.collection_id = %(collection)s AND (%(first)s OR e.id > %(after)s) "
        "ORDER BY e.id LIMIT %(limit)s"
    ).format(vector=vector, table=table)
    count = sql.SQL("SELECT count(*) FROM {table} WHERE collection_id = %(collection)s").format(table=table)
    return _Source(
        label=f"collection {name!r}",
        count=count,
        page=page,
        params={"collection": collection_uuid},
        extra_columns=(),
    )


def _new_source(
    schema: str,
    table_name: str,
    columns: Sequence[tuple[str, str]],
    *,
    id_column: str,
    content_column: str,
    embedding_column: str,
    metadata_json_column: str | None,
    metadata_columns: Sequence[str] | None,
    reuse: bool,
) -> _Source:
    types = dict(columns)
    where = f"{schema}.{table_name}"
    if not types:
        raise ConfigurationError(f"no table {where!r} in the source database")
    for role, column in (
        ("id_column", id_column),
        ("content_column", content_column),
        ("embedding_column", embedding_column),
    ):
        if column not in types:
            raise ConfigurationError(f"table {where!r} has no {role} {column!r}; columns: {sorted(types)}")
    json_column = metadata_json_column if metadata_json_column in types else None
    if metadata_columns is None:
        core = {id_column, content_column, embedding_column, json_column}
        extra = tuple(c for c, t in columns if c not in core and t != "tsvector")
    else:
        missing = [c for c in metadata_columns if c not in types]
        if missing:
            raise ConfigurationError(f"table {where!r} has no metadata column(s) {missing}")
        extra = tuple(metadata_columns)
    table = sql.Identifier(schema, table_name)
    ident = sql.Identifier(id_column)
    select = [
        ident,
        sql.Identifier(content_column),
        sql.Identifier(json_column) if json_column else sql.SQL("NULL"),
        sql.SQL("{}::real[]").format(sql.Identifier(embedding_column)) if reuse else sql.SQL("NULL::real[]"),
        *(sql.Identifier(c) for c in extra),
    ]
    # The keyset bound is passed back in the id column's own type (uuid by default).
    page = sql.SQL(
        "SELECT {select} FROM {table} WHERE (%(first)s OR {id} > %(after)s) ORDER BY {id} LIMIT %(limit)s"
    ).format(select=sql.SQL(", ").join(select), table=table, id=ident)
    count = sql.SQL("SELECT count(*) FROM {table}").format(table=table)
    return _Source(label=f"table {where!r}", count=count, page=page, params={}, extra_columns=extra)


def _page_params(source: _Source, after: Any, first: bool, limit: int) -> dict[str, Any]:
    params = dict(source.params)
    params.update({"after": after, "first": first, "limit": limit})
    return params


def _items(source: _Source, rows: Sequence[tuple[Any, ...]], options: _Options) -> list[MemoryItem]:
    items: list[MemoryItem] = []
    for row in rows:
        source_id, text, raw_meta, vector = row[:4]
        if not isinstance(text, str) or not text.strip():
            options.skipped_empty += 1
            continue
        meta: dict[str, Any] = dict(raw_meta) if isinstance(raw_meta, Mapping) else {}
        meta.update({c: _jsonable(v) for c, v in zip(source.extra_columns, row[4:], strict=True)})
        meta["source_id"] = str(source_id)
        item = document_to_item(Document(id=str(source_id), page_content=text, metadata=meta))
        if vector is not None:
            if len(vector) == options.dimension:
                item = dataclasses.replace(item, embedding=[float(x) for x in vector])
            else:
                options.mismatched += 1
        items.append(item)
    return items


def _prepare(
    engine: MemoryEngine,
    *,
    collection_name: str | None,
    table_name: str | None,
    bank: str,
    connection: str | None,
    embedding_model: Any,
    reuse_embeddings: bool | None,
    batch_size: int,
    progress: bool,
) -> tuple[str, _Options]:
    if (collection_name is None) == (table_name is None):
        raise ConfigurationError(
            "pass exactly one of collection_name= (PGVector) or table_name= (PGVectorStore)"
        )
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size < 1:
        raise ConfigurationError(f"batch_size must be a positive integer, got {batch_size!r}")
    check_bank(bank)
    model = _model_name(embedding_model)
    if reuse_embeddings is None:
        reuse = model is not None and _model_key(model) == _model_key(engine.embedder.model_name)
    else:
        reuse = bool(reuse_embeddings)
    dsn = normalise_dsn(connection) if connection is not None else engine.dsn
    options = _Options(
        bank=bank,
        reuse=reuse,
        dimension=engine.embedder.dimension,
        batch_size=batch_size,
        progress=progress,
        progress_threshold=engine.config.progress_threshold,
    )
    return dsn, options


def _collection_missing(schema: str, name: str, names: Sequence[str]) -> ConfigurationError:
    return ConfigurationError(
        f"no PGVector collection {name!r} in {schema}.{_COLLECTION_TABLE}; collections: {sorted(names)}"
    )


def _collection_query(schema: str) -> sql.Composed:
    return sql.SQL("SELECT name, uuid FROM {}").format(sql.Identifier(schema, _COLLECTION_TABLE))


def _relation(schema: str, table: str) -> str:
    return sql.Identifier(schema, table).as_string(None)


def _bar(total: int, options: _Options, label: str) -> Any:
    if not options.progress or total <= options.progress_threshold:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"importing {label}", unit="row")


def _finish(options: _Options, label: str) -> None:
    if options.skipped_empty:
        warnings.warn(
            f"{label}: skipped {options.skipped_empty} row(s) with empty text", RuntimeWarning, stacklevel=3
        )
    if options.mismatched:
        warnings.warn(
            f"{label}: {options.mismatched} stored vector(s) do not have the engine's "
            f"{options.dimension} dimensions; those rows were re-embedded",
            RuntimeWarning,
            stacklevel=3,
        )


def _source_from(
    collection_name: str | None,
    table_name: str | None,
    schema_name: str,
    reuse: bool,
    collections: Sequence[tuple[str, Any]] | None,
    columns: Sequence[tuple[str, str]] | None,
    new_kwargs: _NewKwargs,
) -> _Source:
    if collection_name is not None:
        by_name = dict(collections or ())
        if collection_name not in by_name:
            raise _collection_missing(schema_name, collection_name, list(by_name))
        return _old_source(schema_name, by_name[collection_name], collection_name, reuse)
    assert table_name is not None
    return _new_source(schema_name, table_name, columns or (), reuse=reuse, **new_kwargs)


@dataclass(frozen=True, slots=True)
class _Fetch:
    """Run one statement on the source connection; the plan receives all rows, as tuples (a
    page's columns depend on the source table, so they are read by position)."""

    statement: Statement
    params: Mapping[str, Any] | Sequence[Any] | None = None


@dataclass(frozen=True, slots=True)
class _Retain:
    """Retain one batch into the bank; the plan receives the new ids."""

    items: list[MemoryItem]


_ImportPlan = Generator["_Fetch | _Retain", Any, list[str]]


def _import_plan(
    collection_name: str | None,
    table_name: str | None,
    schema_name: str,
    options: _Options,
    new_kwargs: _NewKwargs,
) -> _ImportPlan:
    """The import as a sans-I/O plan: the source may be another database than the engine's,
    so it cannot be an engine plan; :func:`_run_sync` and :func:`_run_async` drive it."""
    collections = columns = None
    if collection_name is not None:
        found = yield _Fetch("SELECT to_regclass(%s)", (_relation(schema_name, _COLLECTION_TABLE),))
        if found == [(None,)]:
            raise _collection_missing(schema_name, collection_name, [])
        collections = yield _Fetch(_collection_query(schema_name))
    else:
        assert table_name is not None
        columns = yield _Fetch(_COLUMNS_QUERY, {"relation": _relation(schema_name, table_name)})
    source = _source_from(
        collection_name, table_name, schema_name, options.reuse, collections, columns, new_kwargs
    )
    total = yield _Fetch(source.count, source.params)
    bar = _bar(int(total[0][0]) if total else 0, options, source.label)
    ids: list[str] = []
    after: Any = None
    try:
        while True:
            rows = yield _Fetch(source.page, _page_params(source, after, after is None, options.batch_size))
            if not rows:
                break
            after = rows[-1][0]
            items = _items(source, rows, options)
            if items:
                ids.extend((yield _Retain(items)))
            if bar is not None:
                bar.update(len(rows))
            if len(rows) < options.batch_size:
                break
    finally:
        if bar is not None:
            bar.close()
    _finish(options, source.label)
    return ids


def _run_sync(dsn: str, engine: MemoryEngine, plan: _ImportPlan, bank: str) -> list[str]:
    with psycopg.connect(dsn, autocommit=True) as conn, contextlib.closing(plan):
        value: Any = None
        while True:
            try:
                op = plan.send(value)
            except StopIteration as stop:
                ids: list[str] = stop.value
                return ids
            if isinstance(op, _Fetch):
                value = conn.execute(op.statement, op.params).fetchall()
            else:
                value = engine.retain(op.items, bank=bank, progress=False)


async def _run_async(dsn: str, engine: MemoryEngine, plan: _ImportPlan, bank: str) -> list[str]:
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        with contextlib.closing(plan):
            value: Any = None
            while True:
                try:
                    op = plan.send(value)
                except StopIteration as stop:
                    ids: list[str] = stop.value
                    return ids
                if isinstance(op, _Fetch):
                    value = await (await conn.execute(op.statement, op.params)).fetchall()
                else:
                    value = await engine.aretain(op.items, bank=bank, progress=False)


def _start(
    engine: MemoryEngine | AsyncMemoryEngine,
    *,
    bank: str,
    collection_name: str | None,
    table_name: str | None,
    schema_name: str,
    connection: str | None,
    embedding_model: Any,
    reuse_embeddings: bool | None,
    batch_size: int,
    progress: bool,
    new_kwargs: _NewKwargs,
) -> tuple[MemoryEngine, str, _ImportPlan]:
    eng = resolve_engine(engine, None).engine
    dsn, options = _prepare(
        eng,
        collection_name=collection_name,
        table_name=table_name,
        bank=bank,
        connection=connection,
        embedding_model=embedding_model,
        reuse_embeddings=reuse_embeddings,
        batch_size=batch_size,
        progress=progress,
    )
    return eng, dsn, _import_plan(collection_name, table_name, schema_name, options, new_kwargs)


def import_pgvector_collection(
    engine: MemoryEngine | AsyncMemoryEngine,
    *,
    bank: str,
    collection_name: str | None = None,
    table_name: str | None = None,
    schema_name: str = "public",
    connection: str | None = None,
    embedding_model: Any = None,
    reuse_embeddings: bool | None = None,
    batch_size: int = 1000,
    progress: bool = True,
    content_column: str = "content",
    embedding_column: str = "embedding",
    id_column: str = "langchain_id",
    metadata_json_column: str | None = "langchain_metadata",
    metadata_columns: Sequence[str] | None = None,
) -> list[str]:
    """Copy a ``langchain-postgres`` collection into ``bank``; return the new memory ids.

    Pass ``collection_name=`` for a (deprecated) ``PGVector`` collection or ``table_name=`` for a
    ``PGVectorStore`` table (``schema_name`` qualifies either; the column names default to
    ``PGVectorStore``'s and can be overridden, and every other column except ``tsvector`` ones
    is read as metadata unless ``metadata_columns`` lists them). ``connection`` is the source's
    DSN (libpq or ``postgresql+psycopg://``); default: the engine's own database.

    Each row becomes a memory whose ``document_id`` and ``metadata["source_id"]`` are the row's
    id, so importing again replaces instead of duplicating. Metadata is kept; its timestamps
    (``occurred_at``, ``timestamp``, ``created_at``, ``date``) become the memory's date exactly
    as in :meth:`HindsightRetriever.add_documents`.

    Stored vectors are reused when ``embedding_model`` (the name, or the LangChain
    ``Embeddings`` object, that produced them) matches ``engine.embedder.model_name``, or when
    ``reuse_embeddings=True``; a vector is reused only if its dimension is the engine's (other
    rows are re-embedded, with a warning). ``reuse_embeddings=False`` always re-embeds.

    Rows are read in id order ``batch_size`` at a time and each batch is retained in its own
    transaction: after a failure, the batches already imported stay, and re-running the import
    completes it. Rows with empty text are skipped (with a warning).

    >>> ids = import_pgvector_collection(engine, collection_name="docs", bank="docs",  # doctest: +SKIP
    ...                                  embedding_model="all-MiniLM-L6-v2")
    """
    eng, dsn, plan = _start(
        engine,
        bank=bank,
        collection_name=collection_name,
        table_name=table_name,
        schema_name=schema_name,
        connection=connection,
        embedding_model=embedding_model,
        reuse_embeddings=reuse_embeddings,
        batch_size=batch_size,
        progress=progress,
        new_kwargs={
            "id_column": id_column,
            "content_column": content_column,
            "embedding_column": embedding_column,
            "metadata_json_column": metadata_json_column,
            "metadata_columns": metadata_columns,
        },
    )
    return _run_sync(dsn, eng, plan, bank)


async def aimport_pgvector_collection(
    engine: MemoryEngine | AsyncMemoryEngine,
    *,
    bank: str,
    collection_name: str | None = None,
    table_name: str | None = None,
    schema_name: str = "public",
    connection: str | None = None,
    embedding_model: Any = None,
    reuse_embeddings: bool | None = None,
    batch_size: int = 1000,
    progress: bool = True,
    content_column: str = "content",
    embedding_column: str = "embedding",
    id_column: str = "langchain_id",
    metadata_json_column: str | None = "langchain_metadata",
    metadata_columns: Sequence[str] | None = None,
) -> list[str]:
    """Async twin of :func:`import_pgvector_collection` (psycopg ``AsyncConnection`` for the
    source, ``engine.aretain`` for each batch)."""
    eng, dsn, plan = _start(
        engine,
        bank=bank,
        collection_name=collection_name,
        table_name=table_name,
        schema_name=schema_name,
        connection=connection,
        embedding_model=embedding_model,
        reuse_embeddings=reuse_embeddings,
        batch_size=batch_size,
        progress=progress,
        new_kwargs={
            "id_column": id_column,
            "content_column": content_column,
            "embedding_column": embedding_column,
            "metadata_json_column": metadata_json_column,
            "metadata_columns": metadata_columns,
        },
    )
    return await _run_async(dsn, eng, plan, bank)
