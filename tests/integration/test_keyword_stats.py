"""Bank and term statistics (migration 0004), the BM25 keyword ranking and the postings budget,
on the real server."""

from __future__ import annotations

import dataclasses
import math
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from shared_core import EngineConfig, MemoryEngine, MemoryItem
from shared_core.errors import ConfigurationError
from shared_core.recall.pipeline import RecallSettings
from shared_core.server import embedded_settings
from tests.fakes import FixedQueryEmbedder
from tests.fakes import unit_vector as vec


def _bank(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def plain(engine: MemoryEngine) -> Iterator[MemoryEngine]:
    """Fixed query vector (e0), no retain-time extraction: search vectors hold the text only."""
    engine.stats("warm-up")
    eng = MemoryEngine(
        engine.dsn,
        embedder=FixedQueryEmbedder(),
        config=EngineConfig(extract_entities=False, extract_dates=False),
    )
    yield eng
    eng.close()


def _with(eng: MemoryEngine, **settings: object) -> MemoryEngine:
    eng.recall_settings = dataclasses.replace(RecallSettings(), **settings)  # type: ignore[arg-type]
    return eng


def _stats(dsn: str, bank: str) -> tuple[tuple[int, int], dict[str, int]]:
    """(memories, lexemes) and {lexeme: df} as kept by the triggers, zero rows left out."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT memories, lexemes FROM bank_stats WHERE bank_id = %s", (bank,)).fetchone()
        terms = conn.execute(
            "SELECT lexeme, df FROM term_stats WHERE bank_id = %s AND df > 0", (bank,)
        ).fetchall()
    return (tuple(row) if row else (0, 0)), dict(terms)  # type: ignore[return-value]


def _counted(dsn: str, bank: str) -> tuple[tuple[int, int], dict[str, int]]:
    """The same numbers counted from memory_units directly."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT count(*), coalesce(sum(length(search_vector)), 0) FROM memory_units WHERE bank_id = %s",
            (bank,),
        ).fetchone()
        terms = conn.execute(
            "SELECT x, count(*) FROM memory_units u, unnest(tsvector_to_array(u.search_vector)) x "
            "WHERE u.bank_id = %s GROUP BY x",
            (bank,),
        ).fetchall()
    assert row is not None
    return (int(row[0]), int(row[1])), dict(terms)


def _postings(dsn: str, bank: str) -> list[tuple[str, str, int, int, int]]:
    """The bank's postings (migration 0022) as kept by the triggers."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT lexeme, unit_id::text, dl, n_plain, n_ctx FROM memory_postings WHERE bank_id = %s",
            (bank,),
        ).fetchall()
    return sorted(rows)


def _postings_counted(dsn: str, bank: str) -> list[tuple[str, str, int, int, int]]:
    """The same postings counted here from each memory's search vector: positions outside the
    neighbour context (weight 'D') and in it; a lexeme stored without positions counts 1."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT v.lexeme, u.id::text, length(u.search_vector), v.weights "
            "FROM memory_units u, unnest(u.search_vector) v WHERE u.bank_id = %s",
            (bank,),
        ).fetchall()
    counted = []
    for lexeme, unit, dl, weights in rows:
        ctx = list(weights or []).count("D")
        counted.append((lexeme, unit, dl, (len(weights or []) - ctx) if weights else 1, ctx))
    return sorted(counted)


# --- statistics ----------------------------------------------------------------------------------


def test_statistics_follow_retain_delete_and_document_replacement(plain: MemoryEngine) -> None:
    bank = _bank("stats")
    dsn = plain.dsn
    ids = plain.retain(
        [
            MemoryItem(text=t, embedding=vec(0.5, axis=i + 1))
            for i, t in enumerate(["Herons fish in the pond.", "A heron and a frog.", "Frogs sing at night."])
        ],
        bank=bank,
    )
    plain.retain(
        ["The pond froze in winter.", "Herons left the frozen pond."], bank=bank, document_id="diary"
    )
    stats, terms = _stats(dsn, bank)
    assert stats[0] == 5
    assert (stats, terms) == _counted(dsn, bank)
    assert _postings(dsn, bank) == _postings_counted(dsn, bank)
    assert len(_postings(dsn, bank)) == sum(terms.values())
    assert terms["heron"] == 3 and terms["pond"] == 3

    plain.delete([ids[0]], bank=bank)
    assert _stats(dsn, bank) == _counted(dsn, bank)
    assert _postings(dsn, bank) == _postings_counted(dsn, bank)
    assert _stats(dsn, bank)[1]["heron"] == 2

    plain.retain(["Spring came; the pond thawed."], bank=bank, document_id="diary")  # replaces
    stats, terms = _stats(dsn, bank)
    assert stats[0] == 3
    assert (stats, terms) == _counted(dsn, bank)
    assert terms["heron"] == 1 and "frozen" not in terms

    assert _postings(dsn, bank) == _postings_counted(dsn, bank)

    plain.delete(document_id="diary", bank=bank)
    assert _stats(dsn, bank) == _counted(dsn, bank)
    assert _postings(dsn, bank) == _postings_counted(dsn, bank)
    lexemes = {lexeme for lexeme, *_ in _postings(dsn, bank)}
    assert {"heron", "frog", "sing", "night"} <= lexemes and "pond" not in lexemes


def test_statistics_follow_a_users_own_text_update(plain: MemoryEngine) -> None:
    bank = _bank("stats-upd")
    (uid,) = plain.retain(["A kingfisher dived."], bank=bank)
    with psycopg.connect(plain.dsn) as conn:
        conn.execute(
            "UPDATE memory_units SET search_vector = to_tsvector('english', "
            "'an otter swam and swam') WHERE bank_id = %s AND id = %s",
            (bank, uid),
        )
    stats, terms = _stats(plain.dsn, bank)
    assert (stats, terms) == _counted(plain.dsn, bank)
    assert "kingfish" not in terms and terms["otter"] == 1
    # the update's vector has default weights ('D'): every position counts as context
    assert _postings(plain.dsn, bank) == _postings_counted(plain.dsn, bank)
    assert [(lexeme, n_plain, n_ctx) for lexeme, _, _, n_plain, n_ctx in _postings(plain.dsn, bank)] == [
        ("otter", 0, 1),
        ("swam", 0, 2),
    ]


def test_a_failed_retain_leaves_the_statistics_alone(plain: MemoryEngine) -> None:
    bank = _bank("stats-fail")
    plain.retain(["Wrens nest in hedges."], bank=bank)
    before = _stats(plain.dsn, bank)
    with pytest.raises(Exception):  # noqa: B017  (the item's own error is tested elsewhere)
        plain.retain(["Wrens sing.", {"text": ""}], bank=bank)
    assert _stats(plain.dsn, bank) == before


def test_banks_do_not_share_statistics(plain: MemoryEngine) -> None:
    a, b = _bank("stats-a"), _bank("stats-b")
    plain.retain(["Puffins nest on cliffs."], bank=a)
    plain.retain(["Puffins and puffins.", "Gannets dive."], bank=b)
    assert _stats(plain.dsn, a)[1]["puffin"] == 1
    assert _stats(plain.dsn, b)[1]["puffin"] == 1
    assert _stats(plain.dsn, b)[0][0] == 2


def test_embeddings_are_stored_in_the_row(plain: MemoryEngine) -> None:
    with psycopg.connect(plain.dsn) as conn:
        row = conn.execute(
            "SELECT attstorage FROM pg_attribute WHERE attrelid = "
            "'memory_units'::regclass AND attname = 'embedding'"
        ).fetchone()
    assert row == ("m",)  # MAIN: inline unless nothing else makes the row fit


def test_a_memory_row_of_a_few_kilobytes_is_stored_whole(engine: MemoryEngine) -> None:
    """Migration 0015: the keyword arm reads the search vector of every row its terms match, so
    a row over the default TOAST threshold (2 kB; the 384-d embedding alone is 1.5 kB) keeps it
    in the heap instead of moving it to the TOAST table."""
    bank = _bank("inline")
    words = " ".join(f"heron{i} marsh{i} reed{i}" for i in range(25))
    [memory_id] = engine.retain(
        [MemoryItem(text=f"The herons nested here. {words}")], bank=bank, progress=False
    )
    with psycopg.connect(engine.dsn) as conn:
        row = conn.execute(
            "SELECT pg_column_size(u.*), pg_column_toast_chunk_id(u.search_vector), "
            "pg_column_toast_chunk_id(u.text) FROM memory_units u WHERE u.bank_id = %s AND u.id = %s",
            (bank, memory_id),
        ).fetchone()
    assert row is not None
    size, search_vector_chunk, text_chunk = row
    assert 2032 < size < 4080  # over the default threshold: this row would have been toasted
    assert (search_vector_chunk, text_chunk) == (None, None)


def test_new_embedded_server_is_tuned() -> None:
    import shutil
    import tempfile
    from pathlib import Path

    from shared_core.server import acquire_embedded, release_embedded

    # A data directory of its own (0700 mkdtemp: see conftest), created by this call.
    root = Path(tempfile.mkdtemp(prefix="hindsight-tuned-"))
    root.chmod(0o711)
    path, dsn = acquire_embedded(root / "pgdata")
    try:
        with psycopg.connect(dsn) as conn:
            for name, value in embedded_settings().items():
                shown = conn.execute(
                    "SELECT setting, unit FROM pg_settings WHERE name = %s", (name,)
                ).fetchone()
                assert shown is not None
                setting, unit = shown
                if unit == "8kB":
                    assert int(setting) * 8 // 1024 == int(value.removesuffix("MB"))
                else:
                    assert setting == value
    finally:
        release_embedded(path)
        shutil.rmtree(root, ignore_errors=True)


# --- BM25 --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def heron_bank(plain: MemoryEngine) -> tuple[str, dict[str, str]]:
    bank = _bank("bm25")
    texts = {
        "m1": "heron heron heron",
        "m2": "heron pond",
        "m3": "pond frog",
        "m4": "frog lily",
        "m5": "lily pad",
        "m6": "pad thai",
        "m7": "thai basil",
        "m8": "basil leaf",
    }
    # cosine 0 to the query: only the keyword arm finds them
    ids = plain.retain(
        [MemoryItem(text=t, embedding=vec(0.0, axis=30 + i)) for i, t in enumerate(texts.values())], bank=bank
    )
    return bank, dict(zip(texts, ids, strict=True))


def test_bm25_scores_are_okapi_bm25(plain: MemoryEngine, heron_bank: tuple[str, dict[str, str]]) -> None:
    bank, ids = heron_bank
    with psycopg.connect(plain.dsn) as conn:
        dl = dict(
            conn.execute(
                "SELECT id::text, length(search_vector) FROM memory_units WHERE bank_id = %s", (bank,)
            ).fetchall()
        )
    # dl counts distinct lexemes, the text's and the signals' (the date a memory was said)
    assert dl[ids["m2"]] == dl[ids["m1"]] + 1  # m2 adds "pond"
    k1, b = 1.2, 0.75
    n, df = 8, 2  # heron is in 25% of the bank: common terms (above 25%) would be dropped
    avgdl = sum(dl.values()) / n
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25(tf: int, length: int) -> float:
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))

    result = _with(plain, keyword="bm25", bm25_k1=k1, bm25_b=b).recall("heron", bank=bank, trace=True)
    assert result.trace is not None
    keyword = dict(result.trace.arms["keyword"])
    assert list(keyword) == [ids["m1"], ids["m2"]]
    assert math.isclose(keyword[ids["m1"]], bm25(3, dl[ids["m1"]]), rel_tol=1e-9)
    assert math.isclose(keyword[ids["m2"]], bm25(1, dl[ids["m2"]]), rel_tol=1e-9)


def test_bm25_prefers_the_rarer_term(plain: MemoryEngine) -> None:
    bank = _bank("bm25-idf")
    texts = [f"river stone {i}" for i in range(6)] + ["river otter"]
    ids = plain.retain(
        [MemoryItem(text=t, embedding=vec(0.0, axis=40 + i)) for i, t in enumerate(texts)], bank=bank
    )
    # "stone" is in six memories, "otter" in one: the otter memory matches one rare term, each
    # stone memory one common term.
    result = _with(plain, keyword="bm25", keyword_bank_max_df=1.0).recall(
        "stone otter", bank=bank, trace=True
    )
    assert result.trace is not None
    assert result.trace.arms["keyword"][0][0] == ids[-1]


@pytest.mark.parametrize("query", ["北京烤鸭", "quokka & tea | !x:*", "'; DROP TABLE banks; --"])
def test_bm25_handles_cjk_and_metacharacters(plain: MemoryEngine, query: str) -> None:
    bank = _bank("bm25-cjk")
    ids = plain.retain(
        [
            MemoryItem(text=t, embedding=vec(0.0, axis=50 + i))
            for i, t in enumerate(["我喜欢吃北京烤鸭。", "A quokka drank tea."])
        ],
        bank=bank,
    )
    # two memories: a term in one of them is never "common" (found in more than one memory)
    result = _with(plain, keyword="bm25").recall(query, bank=bank, trace=True)
    assert result.trace is not None
    found = [i for i, _ in result.trace.arms["keyword"]]
    if "北京" in query:
        assert found == [ids[0]]
    if "quokka" in query:
        assert found == [ids[1]]


@pytest.mark.parametrize("settings", [{"keyword": "okapi"}, {"bm25_b": 1.5}, {"bm25_k1": -1.0}])
def test_bad_keyword_settings_are_named(settings: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError, match=r"keyword|BM25"):
        RecallSettings(**settings)  # type: ignore[arg-type]


# --- term selection --------------------------------------------------------------------------------


@pytest.mark.parametrize("ranking", ["fulltext", "bm25"])
def test_postings_budget_keeps_the_rarest_terms(plain: MemoryEngine, ranking: str) -> None:
    bank = _bank("postings")
    texts = [f"meadow note {i}" for i in range(8)] + ["meadow lark", "a lark alone"]
    ids = plain.retain(
        [MemoryItem(text=t, embedding=vec(0.0, axis=60 + i)) for i, t in enumerate(texts)], bank=bank
    )
    # df: lark 2, meadow 9. A budget of 5 postings keeps "lark" and leaves "meadow" out.
    tight = _with(plain, keyword=ranking, keyword_max_postings=5, keyword_bank_max_df=1.0).recall(
        "meadow lark", bank=bank, trace=True
    )
    assert tight.trace is not None
    assert {i for i, _ in tight.trace.arms["keyword"]} == {ids[-2], ids[-1]}
    roomy = _with(plain, keyword=ranking, keyword_max_postings=100, keyword_bank_max_df=1.0).recall(
        "meadow lark", bank=bank, trace=True
    )
    assert roomy.trace is not None
    assert {i for i, _ in roomy.trace.arms["keyword"]} == set(ids)


def test_postings_budget_always_keeps_one_term(plain: MemoryEngine) -> None:
    bank = _bank("postings-one")
    ids = plain.retain(
        [MemoryItem(text=f"willow {i}", embedding=vec(0.0, axis=80 + i)) for i in range(4)], bank=bank
    )
    result = _with(plain, keyword_max_postings=1, keyword_bank_max_df=1.0).recall(
        "willow", bank=bank, trace=True
    )
    assert result.trace is not None
    assert {i for i, _ in result.trace.arms["keyword"]} == set(ids)


def test_upgrading_a_database_with_memories_backfills_the_statistics(
    plain: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from psycopg import sql

    from shared_core import schema

    name = f"upgrade_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(plain.dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    dsn = psycopg.conninfo.make_conninfo(plain.dsn, dbname=name)
    try:
        every = schema.load_migrations()
        with psycopg.connect(dsn, autocommit=True) as conn:
            schema.ensure_extensions(conn)
            conn.autocommit = False
            monkeypatch.setattr(schema, "load_migrations", lambda: [m for m in every if m.version < 4])
            schema.apply_migrations(conn, dimension=384)
            # memories written before 0004, as that version's retain wrote them
            conn.execute(
                "INSERT INTO banks (bank_id, embedding_model, embedding_dimension) "
                "VALUES ('old', 'fixed', 384)"
            )
            for i, text in enumerate(["Owls hunt at dusk.", "Owls and owls.", "Bats too."]):
                conn.execute(
                    "INSERT INTO memory_units (bank_id, id, text, embedding, fact_type, "
                    "search_vector) VALUES ('old', %s, %s, %s::vector, 'world', "
                    "to_tsvector('english', %s))",
                    (uuid.uuid4(), text, str(vec(0.5, axis=i + 1)), text),
                )
            conn.commit()
        monkeypatch.setattr(schema, "load_migrations", lambda: every)
        with psycopg.connect(dsn) as conn:
            assert schema.apply_migrations(conn, dimension=384) == [
                m.version for m in every if m.version >= 4
            ]
        stats, terms = _stats(dsn, "old")
        assert stats[0] == 3 and terms["owl"] == 2
        assert (stats, terms) == _counted(dsn, "old")
        assert len(_postings(dsn, "old")) == 5  # owl hunt dusk, owl, bat
        assert _postings(dsn, "old") == _postings_counted(dsn, "old")  # 0022's backfill
    finally:
        with psycopg.connect(plain.dsn, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def test_a_term_in_most_of_a_small_bank_is_dropped(plain: MemoryEngine) -> None:
    bank = _bank("small-common")
    ids = plain.retain(
        [
            MemoryItem(text=t, embedding=vec(0.0, axis=90 + i))
            for i, t in enumerate(
                [
                    "Alice joined Google as an engineer.",
                    "Alice adopted a cat named Miso.",
                    "Bob moved to Paris.",
                ]
            )
        ],
        bank=bank,
    )
    result = _with(plain).recall("Where does Alice work?", bank=bank, trace=True)
    assert result.trace is not None
    assert result.trace.arms["keyword"] == []  # "alice": 2 of 3 memories; "work": none
    paris = _with(plain).recall("Paris", bank=bank, trace=True)
    assert paris.trace is not None
    assert [i for i, _ in paris.trace.arms["keyword"]] == [ids[2]]  # in one memory: kept


# The BM25 score as first written: every lexeme of the memory unnested and filtered, the stored
# search vector read at each use. The arm's statement computes it more cheaply; the two must
# agree to the last bit (same terms, summed in the same order).
_PLAIN_BM25 = """
SELECT u.id::text AS id, (
        SELECT coalesce(sum(kl.idf[array_position(kl.lex, x.lexeme)] * x.tf * (%(bm25_k1)s + 1)
                            / (x.tf + %(bm25_k1)s * (1 - %(bm25_b)s + %(bm25_b)s
                                  * length(u.search_vector) / kl.avgdl))), 0)
        FROM (SELECT v.lexeme,
                     coalesce((SELECT sum(CASE WHEN w = 'D' THEN %(bm25_context_weight)s ELSE 1 END)
                               FROM unnest(v.weights) w), 1) AS tf
              FROM unnest(u.search_vector) v WHERE v.lexeme = ANY(kl.lex)) x
        WHERE x.tf > 0) AS score
FROM memory_units u, kq, klex kl
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND u.search_vector @@ kq.q
ORDER BY score DESC, u.id DESC
LIMIT %(keyword_n)s"""


def _two_conversations(words: list[str], *, context: str, every: int, longest: int) -> list[MemoryItem]:
    """Two conversations (documents) of 30 turns drawn from ``words``: each turn gets its
    predecessor as index context (weight 'D'), so context-weighted term frequencies are
    compared too; every ``every``-th turn has ``context`` (weight 'B')."""
    return [
        MemoryItem(
            text=" ".join(words[(i * j + k) % len(words)] for k in range(1 + i % longest)) + f" turn {i}.",
            context=context if i % every == 0 else None,
            document_id=f"conversation-{j}",
            embedding=vec(0.0, axis=40 + (i % 20)),
        )
        for j in (1, 3)
        for i in range(30)
    ]


def _bm25_params(bank: str, *, bank_max_df: float) -> dict[str, Any]:
    """The keyword statement's parameters with the default settings, but ``bank_max_df``."""
    s = RecallSettings()
    return {
        "bank": bank,
        "types": ["world", "experience", "observation"],
        "ts_config": s.ts_config,
        "bigrams": [],
        "keyword_n": 100,
        "max_terms": s.keyword_max_terms,
        "max_postings": s.keyword_max_postings,
        "bank_max_df": bank_max_df,
        "bank_min_rows": s.keyword_bank_min_rows,
        "bm25_k1": s.bm25_k1,
        "bm25_b": s.bm25_b,
        "bm25_context_weight": s.bm25_context_weight,
    }


def test_bm25_statement_matches_the_plain_formulation(plain: MemoryEngine) -> None:
    from psycopg import sql

    from shared_core.recall.arms import keyword

    bank = _bank("bm25-same")
    words = ["heron", "pond", "frog", "lily", "otter", "river", "stone", "basil"]
    plain.retain(_two_conversations(words, context="by the pond", every=3, longest=5), bank=bank)
    params = _bm25_params(bank, bank_max_df=1.0)  # keep every term: the point is the score
    reference = sql.Composed(
        [sql.SQL("WITH "), keyword._KEYWORD_QUERY, keyword._BM25_LEXEMES, sql.SQL(_PLAIN_BM25)]
    )
    statements = [keyword.keyword_statement(sql.SQL("TRUE"), "bm25", postings=p) for p in (False, True)]
    with psycopg.connect(plain.dsn) as conn:
        weights = conn.execute(
            "SELECT array_agg(DISTINCT w) FROM memory_units u, unnest(u.search_vector) v, unnest(v.weights) w"
            " WHERE u.bank_id = %s",
            (bank,),
        ).fetchone()
        assert weights is not None and {"A", "B", "D"} <= set(weights[0])
        for query in (["heron"], ["pond", "frog"], ["otter", "river", "stone", "basil", "lily"], ["turn"]):
            p = {**params, "words": query, "word_groups": list(range(1, len(query) + 1))}
            plain_rows = conn.execute(reference, p).fetchall()
            assert len(plain_rows) > 1
            for statement in statements:  # the search vectors' scan and the postings
                assert conn.execute(statement, p).fetchall() == plain_rows  # same ids, order, bits


# --- inflection groups -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def went_bank(plain: MemoryEngine) -> tuple[str, dict[str, str]]:
    bank = _bank("inflections")
    texts = {
        "went": "Mara went to the pottery workshop.",
        "both": "We went, and we will go again.",
        "gone": "The kiln has gone cold.",
        "other": "A quiet pond at dusk.",
        "lark": "A lark sang at dawn.",
    }
    ids = plain.retain(
        [MemoryItem(text=t, embedding=vec(0.0, axis=100 + i)) for i, t in enumerate(texts.values())],
        bank=bank,
    )
    return bank, dict(zip(texts, ids, strict=True))


@pytest.mark.parametrize("ranking", ["bm25", "fulltext"])
def test_a_question_in_the_present_finds_the_memory_in_the_past(
    plain: MemoryEngine, went_bank: tuple[str, dict[str, str]], ranking: str
) -> None:
    bank, ids = went_bank
    on = _with(plain, keyword=ranking, keyword_bank_max_df=1.0).recall(
        "When did Mara go to the workshop?", bank=bank, trace=True
    )
    assert on.trace is not None
    found = [i for i, _ in on.trace.arms["keyword"]]
    assert found[0] == ids["went"]  # "go" (as "went"), "mara" and "workshop"
    assert set(found) == {ids["went"], ids["both"], ids["gone"]}
    off = _with(plain, keyword=ranking, keyword_bank_max_df=1.0, keyword_inflections=False).recall(
        "When did Mara go?", bank=bank, trace=True
    )
    assert off.trace is not None
    assert {i for i, _ in off.trace.arms["keyword"]} == {ids["went"], ids["both"]}  # "mara"; "go"


def test_an_inflection_group_is_one_bm25_term(
    plain: MemoryEngine, went_bank: tuple[str, dict[str, str]]
) -> None:
    bank, ids = went_bank
    with psycopg.connect(plain.dsn) as conn:
        dl = dict(
            conn.execute(
                "SELECT id::text, length(search_vector) FROM memory_units WHERE bank_id = %s", (bank,)
            ).fetchall()
        )
    k1, b = 1.2, 0.75
    n = 5
    # the group's df sums its forms' (went 2, go 1, gone 1): the memories it matches, counted
    # once each unless two forms share one ("both" has two)
    df = 2 + 1 + 1
    avgdl = sum(dl.values()) / n
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25(tf: int, length: int) -> float:
        return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))

    result = _with(plain, keyword="bm25", bm25_k1=k1, bm25_b=b, keyword_bank_max_df=1.0).recall(
        "go", bank=bank, trace=True
    )
    assert result.trace is not None
    keyword = dict(result.trace.arms["keyword"])
    assert set(keyword) == {ids["went"], ids["both"], ids["gone"]}
    # "went" and "go" in one memory: tf 2 of one term, not two terms of tf 1
    assert math.isclose(keyword[ids["both"]], bm25(2, dl[ids["both"]]), rel_tol=1e-9)
    assert math.isclose(keyword[ids["went"]], bm25(1, dl[ids["went"]]), rel_tol=1e-9)
    assert math.isclose(keyword[ids["gone"]], bm25(1, dl[ids["gone"]]), rel_tol=1e-9)


def test_an_inflection_group_is_one_term_of_the_budget(
    plain: MemoryEngine, went_bank: tuple[str, dict[str, str]]
) -> None:
    bank, ids = went_bank
    # one term kept: the group (df 4) is rarer than nothing else asked, so all its forms search
    result = _with(plain, keyword_max_terms=1, keyword_bank_max_df=1.0).recall("went", bank=bank, trace=True)
    assert result.trace is not None
    assert {i for i, _ in result.trace.arms["keyword"]} == {ids["went"], ids["both"], ids["gone"]}
    assert not any("cut" in note for note in result.trace.notes)


def test_words_of_one_inflection_group_count_once_against_the_term_limit(
    plain: MemoryEngine, went_bank: tuple[str, dict[str, str]]
) -> None:
    bank, _ = went_bank
    # 17 words, "saw" and "seen" in one group: 16 terms, none cut
    query = "saw seen " + " ".join(f"w{i}x" for i in range(15))
    grouped = _with(plain, keyword_max_terms=16).recall(query, bank=bank, trace=True)
    assert grouped.trace is not None
    assert not any("cut" in note for note in grouped.trace.notes)
    plain_words = _with(plain, keyword_max_terms=16, keyword_inflections=False).recall(
        query, bank=bank, trace=True
    )
    assert plain_words.trace is not None
    assert any("keyword terms cut to the 16 rarest" in note for note in plain_words.trace.notes)


def test_the_postings_rank_as_the_search_vectors_do(plain: MemoryEngine) -> None:
    """The postings statement (unfiltered recalls) against the search vectors' scan, to the bit:
    inflection groups, context weights ('D'), and a form of two lexemes ("heron_pond", an AND
    of both, which only the search vectors can test: that query runs the scan branch)."""
    from psycopg import sql

    from shared_core.recall.arms import keyword

    bank = _bank("postings-same")
    words = ["heron", "went", "go", "pond", "gone", "frog", "goes", "swam", "swim", "lily"]
    items = _two_conversations(words, context="the heron went by the pond", every=4, longest=6)
    plain.retain(items, bank=bank)
    # keep every term, even a group whose forms' dfs sum past the bank's size (go / went /
    # gone / goes): the point is the score, not the term choice
    params = _bm25_params(bank, bank_max_df=10.0)
    queries = [
        ["go", "heron"],
        ["swim", "pond", "went"],
        ["went"],
        ["swims", "lily"],
        ["heron_pond", "lily"],
        ["frog"],
    ]
    with psycopg.connect(plain.dsn) as conn:
        for query in queries:
            forms, groups = keyword.word_forms(query, inflections=True)
            grouped = any(len(keyword.inflection_group(w)) > 1 for w in query)
            p = {**params, "words": forms, "word_groups": groups}
            scan, postings = (
                conn.execute(
                    keyword.keyword_statement(sql.SQL("TRUE"), "bm25", grouped=grouped, postings=on), p
                ).fetchall()
                for on in (False, True)
            )
            assert len(scan) > 1, query
            assert postings == scan, query  # same ids, same order, bit-identical scores
