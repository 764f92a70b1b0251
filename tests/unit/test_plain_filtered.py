"""The plain FILTERED baseline of the filtered-latency benchmark (``benchmarks/_plain.py``): its
predicates select exactly the memories the library's filters select, so the two are timed on
the same work; its filtered statement returns k matching rows; its exact statement (the
reference the iterative scan's overlap is measured against) returns the true top-k.

The session ``engine`` (real embedded Postgres) hosts the plain table; the corpus is the bench
corpus at 3,000 memories with a deterministic stand-in encoder (no model runs).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from tests.fakes import hashed_words

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _corpus as C  # noqa: E402
import _plain as P  # noqa: E402
import recall_latency as R  # noqa: E402


def _encoder(texts: list[str]) -> npt.NDArray[np.float32]:
    return hashed_words(texts, C.DIMENSION)


def test_plain_filters_select_what_the_library_filters_select(engine: object, bank: str) -> None:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql

    corpus = C.make_corpus(3000, encoder=_encoder, real_limit=3000, use_cache=False)
    dsn = engine.dsn  # type: ignore[attr-defined]
    engine.stats(bank)  # type: ignore[attr-defined]  # the schema (the vector type) is made on first use
    tags = [m.tags for m in corpus.memories]
    metadata = [m.metadata for m in corpus.memories]
    with P.plain_filtered_table(dsn, corpus.vectors, tags, metadata, name="plain_filtered_test") as plain:
        assert plain["rows"] == 3000 and plain["table"] == "plain_filtered_test"
        with psycopg.connect(dsn, autocommit=True) as conn:
            register_vector(conn)
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            for name, options, match in R.FILTER_CASES:
                where = P.plain_filter(options)
                ids = sql.SQL("SELECT id FROM {} WHERE {}").format(sql.Identifier(plain["table"]), where)
                want = {i for i, m in enumerate(corpus.memories) if match(m)}
                assert {r[0] for r in conn.execute(ids)} == want, name
                assert 10 <= len(want) < 3000, name
                q = corpus.vectors[7]
                top = [r[0] for r in conn.execute(P.plain_filtered_query(plain["table"], where), {"q": q})]
                assert len(top) == 10 and set(top) <= want, name
                with conn.transaction():
                    conn.execute("SET LOCAL enable_indexscan = off")
                    exact = [r[0] for r in conn.execute(P.plain_exact_query(plain["table"], where), {"q": q})]
                # The exact top 10: no matching row left out is nearer than the farthest kept
                # (pgvector sums in single precision: a tolerance for near ties).
                distance = 1.0 - corpus.vectors @ q
                assert len(exact) == 10 and set(exact) <= want, name
                assert max(distance[exact]) <= min(distance[sorted(want - set(exact))]) + 1e-5, name
        # kept and reused: the second context finds the table with the same rows
        with P.plain_filtered_table(
            dsn, corpus.vectors, tags, metadata, name="plain_filtered_test", keep=True
        ):
            pass
        with P.plain_filtered_table(
            dsn, corpus.vectors, tags, metadata, name="plain_filtered_test", keep=True
        ) as again:
            assert again["load_and_index_s"] == "reused"
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('plain_filtered_test')").fetchone() == (None,)


def test_plain_filter_refuses_what_it_cannot_write() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        P.plain_filter({"filter": {"year": {"$in": [2023]}}})
    with pytest.raises(ValueError, match="unsupported"):
        P.plain_filter({"tags": ["a"], "tags_match": "all"})
    assert P.plain_filter({}).as_string() == "true"
