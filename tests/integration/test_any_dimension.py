"""Any dimension in one database (migration 0006): banks of different embedding dimensions
side by side, each searched through its own HNSW index; similarity cuts that do not empty the
results of models they were not tuned for."""

from __future__ import annotations

import re
from collections.abc import Iterator

import psycopg
import pytest
from fake_embeddings import HashEmbeddings

from shared_core import MemoryEngine
from shared_core.recall.arms.semantic import semantic_statement
from shared_core.storage.dimensions import Dimension

TEXTS = [f"Memory number {i} about topic {i % 7}." for i in range(60)]


@pytest.fixture
def wide(engine: MemoryEngine) -> Iterator[MemoryEngine]:
    with engine.with_embedder(HashEmbeddings(1536)) as eng:
        yield eng


def _plan(engine: MemoryEngine, bank: str, dimension: int) -> str:
    statement = semantic_statement(psycopg.sql.SQL("TRUE"), Dimension(dimension))
    vector = [0.1] * dimension
    with psycopg.connect(engine.dsn) as conn:
        from pgvector.psycopg import register_vector

        register_vector(conn)
        conn.execute("SET enable_seqscan = off")
        # 60 rows: a btree scan and a sort is cheaper than any index order; what is tested is
        # that the statement names this dimension's HNSW index's expression and predicate.
        conn.execute("SET enable_sort = off")
        rows = conn.execute(
            psycopg.sql.SQL("EXPLAIN ") + statement,
            {"bank": bank, "qvec": vector, "n": 10, "semantic_min": -1.0, "tags": None, "types": ["world"]},
        ).fetchall()
    return "\n".join(r[0] for r in rows)


def test_banks_of_two_dimensions_side_by_side(engine: MemoryEngine, wide: MemoryEngine, bank: str) -> None:
    narrow_bank, wide_bank = bank + "-384", bank + "-1536"
    engine.retain(TEXTS, bank=narrow_bank, progress=False)
    wide.retain(TEXTS, bank=wide_bank, progress=False)
    dims = {b.bank: b.embedding_dimension for b in engine.banks()}
    assert dims[narrow_bank] == 384 and dims[wide_bank] == 1536
    assert wide.recall(TEXTS[5], bank=wide_bank, arms=["semantic"]).memories[0].text == TEXTS[5]
    assert engine.recall("topic 3", bank=narrow_bank).memories
    assert re.search(r"memory_units_embedding_d384\b", _plan(engine, narrow_bank, 384))
    assert re.search(r"memory_units_embedding_d1536\b", _plan(engine, wide_bank, 1536))


def test_low_cosine_model_still_returns_results(engine: MemoryEngine, bank: str) -> None:
    """HashEmbeddings are random directions: every cosine between different texts is near 0,
    below the 0.3 tuned for all-MiniLM-L6-v2. Results must still come back."""
    with engine.with_embedder(HashEmbeddings(384)) as low:
        low.retain(TEXTS[:20], bank=bank, progress=False)
        result = low.recall("an unrelated question", bank=bank, arms=["semantic"], trace=True)
        assert result.memories
        result = low.recall("an unrelated question", bank=bank)
        assert result.memories
