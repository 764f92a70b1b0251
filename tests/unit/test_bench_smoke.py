"""Smoke test of the latency/retain benchmark harness on a tiny corpus (fast: no model runs
for the corpus, no LoCoMo file needed).

A deterministic stand-in encoder gives the corpus and the queries their vectors; the session
``engine`` (real embedded Postgres) holds a fresh bank.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psycopg
import pytest
from psycopg import sql as psql

from tests.fakes import hashed_words

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _clients as CL  # noqa: E402
import _corpus as C  # noqa: E402
import _plain as P  # noqa: E402
import recall_latency as R  # noqa: E402
import retain as RT  # noqa: E402
import run_all as RA  # noqa: E402
import server_settings as SS  # noqa: E402


def _encoder(texts: list[str]) -> npt.NDArray[np.float32]:
    return hashed_words(texts, C.DIMENSION)


def test_quantiles_interpolate_like_numpy() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert R.quantile(values, 50) == pytest.approx(2.5)
    assert R.quantile(values, 95) == pytest.approx(1 + 0.95 * 3)  # 3.85
    assert R.quantile([7.0], 99) == 7.0
    rng = np.random.default_rng(0).random(101).tolist()
    for q in (50, 95, 99):
        assert R.quantile(rng, q) == pytest.approx(float(np.percentile(rng, q)))


def test_summarise_headline_excludes_embedding_and_rerank() -> None:
    rows = [
        {"query_embedding": 10.0, "arms": 5.0, "rerank": 2.0, "total": 20.0},
        {"query_embedding": 12.0, "arms": 7.0, "rerank": 1.0, "total": 30.0},
    ]
    summary = R.summarise(rows)
    assert summary[R.HEADLINE]["p50"] == pytest.approx((8.0 + 17.0) / 2)
    assert summary["arms"]["n"] == 2
    assert next(iter(summary)) == "query_embedding"  # pipeline order


def test_corpus_is_prefix_stable_and_zipf() -> None:
    small, big = C.generate_memories(30), C.generate_memories(300)
    assert small == big[:30]
    counts: dict[str, int] = {}
    for m in big:
        assert m.entities and all(e in m.text for e in m.entities)
        assert C.START <= m.occurred_start <= m.mentioned_at
        for e in m.entities:
            counts[e] = counts.get(e, 0) + 1
    top = sorted(counts.values(), reverse=True)
    assert top[0] >= 5 * top[len(top) // 2]  # a hub, and a long tail


def test_corpus_metadata_is_deterministic_and_spread() -> None:
    memories = C.generate_memories(2000)
    assert [m.metadata for m in memories[:50]] == [m.metadata for m in C.generate_memories(50)]
    assert {tuple(sorted(m.metadata)) for m in memories} == {("priority", "source", "team", "user", "year")}
    assert all(m.metadata["year"] == m.occurred_start.year for m in memories)
    er = sum(m.metadata["team"] == "er" for m in memories) / len(memories)
    assert 0.09 < er < 0.16  # one team of eight
    matches = R.filter_matches(C.Corpus(memories=memories, vectors=np.zeros((0, 1), np.float32), real=0))
    assert matches["filter={'user': 'user-017'}"] < matches["filter={'team': 'er'}"] < len(memories)


def test_run_clients_numbers_calls_across_threads_and_raises_the_first_error() -> None:
    rows, wall = CL.run_clients(lambda c, i: (c, i), 3, 2)
    assert rows == [(0, 0), (0, 1), (0, 2), (1, 3), (1, 4), (1, 5)] and wall >= 0

    def fail(c: int, i: int) -> int:
        if i == 4:
            raise ValueError("call 4")
        return i

    with pytest.raises(ValueError, match="call 4"):
        CL.run_clients(fail, 3, 2)


def test_server_settings_cases_run_with_their_session_setting(engine: object) -> None:
    dsn = SS.with_options(engine.dsn, {"work_mem": "17MB", "jit": "on"})  # type: ignore[attr-defined]
    assert SS.show(dsn)["work_mem"] == "17MB" and SS.show(dsn)["jit"] == "on"
    assert SS.with_options("host=x", {}) == "host=x"
    cases = SS.with_ratios(
        {
            "defaults": {"latency_ms": {"p50": 10.0, "p95": 20.0}, "qps_8": 4.0},
            "x": {"latency_ms": {"p50": 5.0, "p95": 30.0}, "qps_8": 6.0},
        }
    )
    assert (cases["x"]["p50_ratio"], cases["x"]["p95_ratio"], cases["x"]["qps_8_ratio"]) == (0.5, 1.5, 1.5)
    assert cases["defaults"]["p50_ratio"] == 1.0


def test_synthetic_vectors_cluster_around_centres() -> None:
    centres = _encoder([f"text number {i}" for i in range(20)])
    vectors = C.synthetic_vectors(centres, 200, cosine=0.8)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    best = (vectors @ centres.T).max(axis=1)
    assert 0.7 < float(np.median(best)) < 0.9


def test_harness_on_tiny_corpus(engine: object, bank: str) -> None:
    corpus = C.make_corpus(50, encoder=_encoder, real_limit=30, use_cache=False)
    assert corpus.vectors.shape == (50, C.DIMENSION) and corpus.real == 30
    queries = C.make_queries(6, encoder=_encoder, use_cache=False)
    load = R.ensure_bank(engine, corpus, bank, batch=20, log=lambda _: None)
    assert load == {
        "reused": False,
        "seconds": load["seconds"],
        "memories": 50,
        "per_second": load["per_second"],
    }
    assert R.ensure_bank(engine, corpus, bank)["reused"] is True

    ours = R.measure_ours(engine, bank, queries, calls=2, clients=2, warmup=0)
    assert ours["calls"] == 2 and ours["qps"] > 0
    assert {"total", "arms", R.HEADLINE, R.EXCL_EMBEDDING} <= set(ours["stages"])
    filtered = R.measure_filtered(engine, bank, queries, R.filter_matches(corpus), calls=1)
    assert list(filtered) == [name for name, _, _ in R.FILTER_CASES]
    assert all(row["calls"] == 1 and 0 <= row["matching"] <= 50 for row in filtered.values())
    learned = R.measure_ours(engine, bank, queries, calls=1, clients=1, options={"reranker": "learned"})
    with P.plain_table(engine.dsn, C.DIMENSION, name="plain_smoke") as table:  # type: ignore[attr-defined]
        load = P.plain_load(engine.dsn, table, corpus.vectors, index_first=True, batch=20)  # type: ignore[attr-defined]
        assert load["rows"] == 50 and load["per_second"] > 0
        plain = P.plain_topk(
            engine.dsn,  # type: ignore[attr-defined]
            table,
            queries.texts,
            lambda t: _encoder([t])[0],
            calls=4,
            clients=2,
            warmup=0,
        )
        paired = R.measure_paired(engine, bank, queries, table, lambda t: _encoder([t])[0], calls=3, warmup=0)
        paired_k10 = R.measure_paired(
            engine, bank, queries, table, lambda t: _encoder([t])[0], calls=2, warmup=0, options={"k": 2}
        )
        inserts = P.plain_insert_one(engine.dsn, table, corpus.vectors[:3], start_id=50)  # type: ignore[attr-defined]
        assert len(inserts) == 3
        before = R.bank_count(engine, bank)
        single = R.measure_single_retain(engine.dsn, bank, table, corpus.vectors[:3], start_id=100, seed=1)  # type: ignore[attr-defined]
        assert single["ours"]["n"] == single["plain"]["n"] == 3  # the warm-up steps are not timed
        assert single["checkpoint_first"] is True  # the embedded server's superuser may
        assert R.bank_count(engine, bank) == before  # our memories are deleted again
        with psycopg.connect(engine.dsn) as conn:  # type: ignore[attr-defined]
            stored = conn.execute(
                psql.SQL("SELECT count(*) FROM {}").format(psql.Identifier(table))
            ).fetchone()
        assert stored == (50 + 3 + 3 + R.SINGLE_WARMUP,)  # loaded, plain_insert_one, and one per step
    assert paired["ours_total_minus_rerank"]["n"] == paired["plain_sql_plus_embedding"]["n"] == 3
    assert paired["ratio_of_p50"] == pytest.approx(
        paired["ours_total_minus_rerank"]["p50"] / paired["plain_sql_plus_embedding"]["p50"], rel=0.05
    )
    assert paired_k10["ours_total_minus_rerank"]["n"] == 2 and paired_k10["options"] == {"k": 2}
    # the options reach the recalls: k=2 returns two memories, the default budget more
    assert paired_k10["memories_returned_mean"] == 2 < paired["memories_returned_mean"]
    assert plain["rows_mean"] == 10
    size = {
        "ours_1": ours,
        "ours_8": ours,
        "plain_1": plain,
        "plain_8": plain,
        "ours_learned_1": learned,
        "filtered": filtered,
        "paired_1": paired,
        "paired_k10_1": paired_k10,
    }
    size["ratios"] = R.ratios(size)
    assert "ours_learned_total_p50 / plain_sql_plus_embedding_p50" in size["ratios"]
    assert size["ratios"]["paired, calls interleaved: median of per-pair ratios"] > 0
    assert size["ratios"]["paired, calls interleaved, k=10: median of per-pair ratios"] > 0
    k10_ratio = "paired, calls interleaved, k=10: ours_total_minus_rerank_p50 / plain_sql_plus_embedding_p50"
    assert size["ratios"][k10_ratio] == paired_k10["ratio_of_p50"]
    text = R.markdown({"sizes": {"50": size}})
    assert "| **" + R.HEADLINE in text and "`filter={'team': 'er'}`" in text
    assert RT.db_size(engine.dsn) > 0  # type: ignore[attr-defined]


def test_load_stops_at_a_deadline_and_resumes_where_it_stopped(engine: object, bank: str) -> None:
    corpus = C.make_corpus(50, encoder=_encoder, real_limit=30, use_cache=False)
    lines: list[str] = []
    # A deadline already past: no chunk starts, the bank stays empty.
    stopped = R.ensure_bank(engine, corpus, bank, batch=10, chunk=20, deadline=0.0, log=lines.append)
    assert stopped["memories"] == 0 and R.bank_count(engine, bank) == 0
    # The first 20 (one chunk), then the whole corpus: the load appends the other 30.
    assert (
        R.ensure_bank(engine, C.make_corpus(20, encoder=_encoder, real_limit=30, use_cache=False), bank)[
            "memories"
        ]
        == 20
    )
    resumed = R.ensure_bank(engine, corpus, bank, batch=10, chunk=20, stages=True, log=lines.append)
    assert (resumed["resumed_at"], resumed["memories"]) == (20, 50)
    assert any("resuming" in line for line in lines) and any(
        "SQL INSERT INTO memory_units" in line for line in lines
    )
    import psycopg

    with psycopg.connect(engine.dsn) as conn:  # type: ignore[attr-defined]
        texts = [
            r[0]
            for r in conn.execute("SELECT text FROM memory_units WHERE bank_id = %s ORDER BY id", (bank,))
        ]
        # every memory's temporal links were written (20 per memory, as one load writes them)
        temporal = conn.execute(
            "SELECT count(*) FROM memory_links WHERE bank_id = %s AND link_type = 'temporal'", (bank,)
        ).fetchone()
    assert texts == [m.text for m in corpus.memories]
    assert temporal is not None and temporal[0] > 0
    head = R.corpus_head(corpus, 20)
    assert len(head) == 20 and head.memories == corpus.memories[:20] and head.real == 20
    assert np.array_equal(head.vectors, corpus.vectors[:20])


def test_load_reloads_a_bank_that_is_not_a_prefix(engine: object, bank: str) -> None:
    corpus = C.make_corpus(30, encoder=_encoder, real_limit=30, use_cache=False)
    other = C.Corpus(memories=corpus.memories[10:20], vectors=corpus.vectors[10:20], real=10)
    R.ensure_bank(engine, other, bank, log=lambda _: None)
    load = R.ensure_bank(engine, corpus, bank, log=lambda _: None)
    assert "resumed_at" not in load and R.bank_count(engine, bank) == 30


def test_summary_table_puts_ours_beside_the_baseline(tmp_path: Path) -> None:
    import json

    stats = {"p50": 40.0, "p95": 50.0, "p99": 60.0, "n": 3}
    retain = {
        "runs": [{"mode": "b-precomputed", "memories": 1000, "per_second": 100.0, "single_retain_ms": stats}],
        "plain": {
            "1000": {
                "index_first": {"per_second": 300.0},
                "index_after": {"per_second": 1000.0},
                "single_insert_ms": {**stats, "p50": 10.0},
            }
        },
    }
    (tmp_path / "retain.json").write_text(json.dumps(retain))
    table = RA.summary_table(tmp_path)
    assert "| bulk retain, 1,000 (extraction on, vectors given), memories/s | 100 |" in table
    assert "3.0x / 10.0x slower" in table
    assert "| 40.0 | 10.0 (one-row INSERT) | 4.0x | <= 20 ms |" in table
