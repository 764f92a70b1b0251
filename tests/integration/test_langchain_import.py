"""import_pgvector_collection: real langchain-postgres collections (old PGVector and new
PGVectorStore) written by langchain-postgres itself into the embedded server, then imported."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import psycopg
import pytest
import sqlalchemy
from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_postgres import Column, PGEngine, PGVector, PGVectorStore

from hindsight_langchain import HindsightRetriever, aimport_pgvector_collection, import_pgvector_collection
from shared_core import ConfigurationError, MemoryEngine

FAKE = DeterministicFakeEmbedding(size=384)

OLD_DOCS = [
    Document(
        id="a1",
        page_content="Alice joined Google in March 2021 as an engineer.",
        metadata={"occurred_at": "2021-03-01T00:00:00Z", "tags": ["alice", "work"], "source": "hr"},
    ),
    Document(
        id="a2",
        page_content="Bob moved to Paris in the summer of 2019.",
        metadata={
            "timestamp": datetime.datetime(2019, 7, 1, tzinfo=datetime.UTC).timestamp(),
            "tags": ["bob"],
        },
    ),
    Document(
        id="a3",
        page_content="The quarterly report lives in the shared drive.",
        metadata={"source": "calendar"},
    ),
]

NEW_IDS = [str(uuid.UUID(int=i + 1)) for i in range(3)]
NEW_DOCS = [
    Document(
        id=NEW_IDS[0],
        page_content="Carol plays the cello in a string quartet.",
        metadata={
            "topic": "music",
            "created_at": datetime.datetime(2023, 4, 5, 6, 7, tzinfo=datetime.UTC),
            "mood": "calm",
        },
    ),
    Document(
        id=NEW_IDS[1],
        page_content="Dave runs a marathon every autumn.",
        metadata={
            "topic": "sport",
            "created_at": datetime.datetime(2020, 10, 1, tzinfo=datetime.UTC),
            "tags": ["dave"],
        },
    ),
    Document(
        id=NEW_IDS[2],
        page_content="Erin keeps bees on her roof in Lyon.",
        metadata={"topic": "hobby", "created_at": None},
    ),
]


def _sa_url(engine: MemoryEngine) -> str:
    return "postgresql+psycopg://" + engine.dsn.split("://", 1)[1]


def _unit_vector(values: Any) -> np.ndarray[Any, np.dtype[np.float32]]:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def _stored_vector(engine: MemoryEngine, bank: str, memory_id: str) -> Any:
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute(
            "SELECT embedding::real[] FROM memory_units WHERE bank_id = %s AND id = %s", (bank, memory_id)
        ).fetchone()
    assert row is not None
    return np.asarray(row[0], dtype=np.float32)


def _by_source(engine: MemoryEngine, bank: str, ids: list[str]) -> dict[str, Any]:
    records = [engine.get(i, bank=bank) for i in ids]
    assert all(r is not None for r in records)
    return {r.metadata["source_id"]: r for r in records if r is not None}


@pytest.fixture
def old_collection(engine: MemoryEngine, bank: str) -> Iterator[str]:
    sa_engine = sqlalchemy.create_engine(_sa_url(engine))
    name = f"old-{bank}"
    store = PGVector(FAKE, connection=sa_engine, collection_name=name, use_jsonb=True)
    store.add_documents(OLD_DOCS, ids=[d.id for d in OLD_DOCS])
    yield name
    store.delete_collection()
    sa_engine.dispose()


@pytest.fixture
def new_table(engine: MemoryEngine, bank: str) -> Iterator[str]:
    pg = PGEngine.from_connection_string(_sa_url(engine))
    table = f"New-{bank}"  # mixed case and a hyphen: identifiers must be quoted
    pg.init_vectorstore_table(
        table, 384, metadata_columns=[Column("topic", "TEXT"), Column("created_at", "TIMESTAMPTZ")]
    )
    store = PGVectorStore.create_sync(pg, FAKE, table, metadata_columns=["topic", "created_at"])
    store.add_documents(NEW_DOCS, ids=NEW_IDS)
    yield table
    pg.drop_table(table)
    pg._run_as_sync(pg.close())


def test_old_pgvector_import_reuses_vectors(engine: MemoryEngine, bank: str, old_collection: str) -> None:
    ids = import_pgvector_collection(
        engine, collection_name=old_collection, bank=bank, reuse_embeddings=True, batch_size=2, progress=False
    )
    assert len(ids) == 3 and len(set(ids)) == 3
    by_source = _by_source(engine, bank, ids)
    assert set(by_source) == {"a1", "a2", "a3"}
    alice = by_source["a1"]
    assert alice.text == OLD_DOCS[0].page_content
    assert alice.document_id == "a1"
    assert alice.metadata["source"] == "hr"
    assert set(alice.tags) == {"alice", "work"}
    assert alice.occurred_start == datetime.datetime(2021, 3, 1, tzinfo=datetime.UTC)
    assert by_source["a2"].occurred_start == datetime.datetime(2019, 7, 1, tzinfo=datetime.UTC)
    assert by_source["a3"].occurred_start is None
    # The stored langchain vector was reused (normalised), not re-embedded.
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute(
            "SELECT e.embedding::real[] FROM langchain_pg_embedding e JOIN langchain_pg_collection"
            " c ON c.uuid = e.collection_id WHERE c.name = %s AND e.id = 'a1'",
            (old_collection,),
        ).fetchone()
    assert row is not None
    stored = _stored_vector(engine, bank, alice.id)
    np.testing.assert_allclose(stored, _unit_vector(row[0]), atol=1e-6)
    np.testing.assert_allclose(stored, _unit_vector(FAKE.embed_query(alice.text)), atol=1e-6)


def test_old_pgvector_reimport_replaces(engine: MemoryEngine, bank: str, old_collection: str) -> None:
    first = import_pgvector_collection(
        engine, collection_name=old_collection, bank=bank, reuse_embeddings=True, progress=False
    )
    second = import_pgvector_collection(
        engine, collection_name=old_collection, bank=bank, reuse_embeddings=True, progress=False
    )
    assert len(second) == 3 and not set(first) & set(second)
    assert engine.stats(bank).memories == 3
    assert engine.stats(bank).documents == 3
    assert all(engine.get(i, bank=bank) is None for i in first)


def test_model_mismatch_re_embeds_and_recall_finds_it(
    engine: MemoryEngine, bank: str, old_collection: str
) -> None:
    ids = import_pgvector_collection(
        engine, collection_name=old_collection, bank=bank, embedding_model="fake-384", progress=False
    )
    alice = _by_source(engine, bank, ids)["a1"]
    stored = _stored_vector(engine, bank, alice.id)
    expected = _unit_vector(engine.embedder.embed_documents([alice.text])[0])
    np.testing.assert_allclose(stored, expected, atol=1e-5)
    assert not np.allclose(stored, _unit_vector(FAKE.embed_query(alice.text)), atol=1e-3)
    docs = HindsightRetriever(engine=engine, bank=bank).invoke("Where does Alice work?")
    assert docs[0].page_content == alice.text
    assert docs[0].metadata["source_id"] == "a1"


def test_matching_model_name_reuses(engine: MemoryEngine, bank: str, old_collection: str) -> None:
    name = "sentence-transformers/" + engine.embedder.model_name.split("/")[-1]
    ids = import_pgvector_collection(
        engine, collection_name=old_collection, bank=bank, embedding_model=name, progress=False
    )
    record = _by_source(engine, bank, ids)["a3"]
    np.testing.assert_allclose(
        _stored_vector(engine, bank, record.id), _unit_vector(FAKE.embed_query(record.text)), atol=1e-6
    )


async def test_new_pgvectorstore_import_async(engine: MemoryEngine, bank: str, new_table: str) -> None:
    ids = await aimport_pgvector_collection(
        engine,
        table_name=new_table,
        bank=bank,
        connection=_sa_url(engine),
        reuse_embeddings=True,
        batch_size=2,
        progress=False,
    )
    assert len(ids) == 3
    by_source = _by_source(engine, bank, ids)
    assert set(by_source) == set(NEW_IDS)
    carol = by_source[NEW_IDS[0]]
    assert carol.text == NEW_DOCS[0].page_content and carol.document_id == NEW_IDS[0]
    assert carol.metadata["topic"] == "music" and carol.metadata["mood"] == "calm"
    assert carol.occurred_start == datetime.datetime(2023, 4, 5, 6, 7, tzinfo=datetime.UTC)
    assert by_source[NEW_IDS[1]].tags == ("dave",)
    assert by_source[NEW_IDS[2]].occurred_start is None
    np.testing.assert_allclose(
        _stored_vector(engine, bank, carol.id), _unit_vector(FAKE.embed_query(carol.text)), atol=1e-6
    )
    again = await aimport_pgvector_collection(
        engine, table_name=new_table, bank=bank, reuse_embeddings=True, progress=False
    )
    assert len(again) == 3 and engine.stats(bank).memories == 3


def test_new_pgvectorstore_import_sync_recall(engine: MemoryEngine, bank: str, new_table: str) -> None:
    ids = import_pgvector_collection(engine, table_name=new_table, bank=bank, progress=False)
    assert len(ids) == 3
    docs = HindsightRetriever(engine=engine, bank=bank).invoke("Who keeps bees?")
    assert docs[0].page_content == NEW_DOCS[2].page_content
    assert docs[0].metadata["topic"] == "hobby"


def test_bad_arguments(engine: MemoryEngine, bank: str, old_collection: str) -> None:
    with pytest.raises(ConfigurationError, match="exactly one"):
        import_pgvector_collection(engine, bank=bank)
    with pytest.raises(ConfigurationError, match="exactly one"):
        import_pgvector_collection(engine, bank=bank, collection_name="x", table_name="y")
    with pytest.raises(ConfigurationError, match="no PGVector collection 'missing'"):
        import_pgvector_collection(engine, bank=bank, collection_name="missing")
    with pytest.raises(ConfigurationError, match="no table"):
        import_pgvector_collection(engine, bank=bank, table_name="no_such_table")
    with pytest.raises(ConfigurationError, match="batch_size"):
        import_pgvector_collection(engine, bank=bank, collection_name=old_collection, batch_size=0)
    assert engine.stats(bank).memories == 0


def test_wrong_dimension_and_empty_rows_warn(engine: MemoryEngine, bank: str) -> None:
    sa_engine = sqlalchemy.create_engine(_sa_url(engine))
    name = f"small-{bank}"
    store = PGVector(
        DeterministicFakeEmbedding(size=8), connection=sa_engine, collection_name=name, use_jsonb=True
    )
    try:
        store.add_texts(["Frank repairs old bicycles.", ""], ids=["f1", "f2"])
        with pytest.warns(RuntimeWarning) as caught:
            ids = import_pgvector_collection(
                engine, collection_name=name, bank=bank, reuse_embeddings=True, progress=False
            )
        messages = " ".join(str(w.message) for w in caught)
        assert "skipped 1 row(s) with empty text" in messages
        assert "re-embedded" in messages
        assert len(ids) == 1
        record = engine.get(ids[0], bank=bank)
        assert record is not None and record.metadata == {"source_id": "f1"}
        np.testing.assert_allclose(
            _stored_vector(engine, bank, ids[0]),
            _unit_vector(engine.embedder.embed_documents([record.text])[0]),
            atol=1e-5,
        )
    finally:
        store.delete_collection()
        sa_engine.dispose()


async def test_sync_and_async_imports_are_twins(engine: MemoryEngine, bank: str, new_table: str) -> None:
    """One pager, two drivers: the same table gives the same memories either way."""
    twin = f"{bank}-async"
    sync_ids = import_pgvector_collection(
        engine, table_name=new_table, bank=bank, reuse_embeddings=True, batch_size=2, progress=False
    )
    async_ids = await aimport_pgvector_collection(
        engine, table_name=new_table, bank=twin, reuse_embeddings=True, batch_size=2, progress=False
    )

    def seen(memory_bank: str, ids: list[str]) -> dict[str, tuple[Any, ...]]:
        return {
            source: (r.text, dict(r.metadata), r.occurred_start, r.tags, r.document_id)
            for source, r in _by_source(engine, memory_bank, ids).items()
        }

    assert len(sync_ids) == len(async_ids) == 3
    assert seen(bank, sync_ids) == seen(twin, async_ids)
    for sync_id, async_id in zip(sync_ids, async_ids, strict=True):
        np.testing.assert_allclose(
            _stored_vector(engine, bank, sync_id), _stored_vector(engine, twin, async_id), atol=1e-6
        )
