"""SQL of the four arms, hydration and chunks. Composed with ``psycopg.sql``; every value is a
named parameter. Every statement filters on ``bank_id``.

Parameters shared by the statements: ``bank``, ``qvec`` (the query vector), ``types`` (text[]),
``tags`` (text[]), ``n`` (the per-arm limit).
"""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from shared_core.recall.query import KeywordRanking, TagsMatch

__all__ = ["CHUNKS", "HYDRATE", "graph_statement", "keyword_statement", "semantic_statement",
           "tag_clause", "temporal_entry_statement", "temporal_hop_statement"]


def tag_clause(tags: Sequence[str] | None, mode: TagsMatch) -> sql.Composable:
    """The tag filter (semantics of the reference's tags_match), as SQL using ``%(tags)s``.

    ``any``/``all`` let untagged memories through; the ``_strict`` modes do not; ``exact``
    wants the same set, and with no tags means "untagged only".
    """
    col = sql.Identifier("u", "tags")  # every statement aliases memory_units as u
    if not tags:
        if mode == "exact":
            return sql.SQL("{} = '{{}}'").format(col)
        return sql.SQL("TRUE")
    templates = {
        "any": "({c} = '{{}}' OR {c} && %(tags)s::text[])",
        "all": "({c} = '{{}}' OR {c} @> %(tags)s::text[])",
        "any_strict": "{c} && %(tags)s::text[]",
        "all_strict": "{c} @> %(tags)s::text[]",
        "exact": "({c} @> %(tags)s::text[] AND {c} <@ %(tags)s::text[])",
    }
    return sql.SQL(templates[mode]).format(c=col)


# --- keyword -------------------------------------------------------------------------------------
# Term statistics come from term_stats / bank_stats (kept by triggers, migration 0004), so
# choosing terms costs index lookups, not counts. Terms found in more than
# %(bank_max_df)s of a bank (and in more than one memory) are dropped: they match
# much of the bank and carry almost no information (a chat
# speaker's name in half the turns would outweigh the rare word the question is about; the
# leading implementation spent seconds on such terms, #2528 / #3498). Of the rest, the
# %(max_terms)s rarest are OR-ed (natural questions are not AND queries); CJK bigrams take
# part like words. Terms are added rarest first while their postings (summed document
# frequencies) stay within %(max_postings)s: every matching row is read and ranked, and at
# 100k memories five mid-frequency names OR-ed matched 36,000 rows and took 230 ms (measured);
# the terms left out are the commonest, those that say least. kq is MATERIALIZED: Postgres
# would otherwise inline it and rebuild the tsquery for every candidate row (measured: 2.2 s
# instead of 3 ms).
_KEYWORD_QUERY = sql.SQL("""
kstats AS MATERIALIZED (
    SELECT coalesce(max(memories), 0)::float8 AS n, coalesce(max(lexemes), 0)::float8 AS lexemes
    FROM bank_stats WHERE bank_id = %(bank)s
),
kterms AS MATERIALIZED (
    SELECT t.term, t.q, t.lexemes,
           coalesce((SELECT max(ts.df) FROM term_stats ts
                     WHERE ts.bank_id = %(bank)s AND ts.lexeme = ANY(t.lexemes)), 0) AS df
    FROM (
        SELECT w AS term, plainto_tsquery(%(ts_config)s::regconfig, w) AS q,
               tsvector_to_array(to_tsvector(%(ts_config)s::regconfig, w)) AS lexemes
        FROM unnest(%(words)s::text[]) AS w
        UNION ALL
        SELECT g, plainto_tsquery('simple', g), tsvector_to_array(to_tsvector('simple', g))
        FROM unnest(%(bigrams)s::text[]) AS g
    ) t
    WHERE numnode(t.q) > 0
),
kept AS MATERIALIZED (
    SELECT term, q, lexemes FROM (
        SELECT k.term, k.q, k.lexemes,
               row_number() OVER w AS pos, sum(k.df) OVER w AS postings
        FROM kterms k, kstats s
        WHERE s.n < %(bank_min_rows)s OR k.df <= greatest(1, s.n * %(bank_max_df)s)
        WINDOW w AS (ORDER BY k.df, length(k.term) DESC, k.term ROWS UNBOUNDED PRECEDING)
    ) r
    WHERE pos <= %(max_terms)s AND (pos = 1 OR postings <= %(max_postings)s)
),
kq AS MATERIALIZED (
    SELECT coalesce(string_agg(q::text, ' | '), '')::tsquery AS q FROM kept
)""")

# Okapi BM25 idf per query lexeme, ln(1 + (N - df + 0.5) / (df + 0.5)), from the bank's stats,
# as two aligned arrays in one row with the bank's average length: scoring a candidate is then
# an array lookup per matching lexeme, not a join against a CTE.
_BM25_LEXEMES = sql.SQL(""",
klex AS MATERIALIZED (
    SELECT coalesce(array_agg(x.lexeme), '{}') AS lex,
           coalesce(array_agg(ln(1 + (s.n - coalesce(ts.df, 0) + 0.5)
                                 / (coalesce(ts.df, 0) + 0.5))), '{}') AS idf,
           greatest(s.lexemes / greatest(s.n, 1), 1) AS avgdl
    FROM (SELECT DISTINCT unnest(lexemes) AS lexeme FROM kept) x
    CROSS JOIN kstats s
    LEFT JOIN term_stats ts ON ts.bank_id = %(bank)s AND ts.lexeme = x.lexeme
    GROUP BY s.n, s.lexemes
)""")

_FULLTEXT_SCORE = sql.SQL("ts_rank_cd(u.search_vector, kq.q, 1)")
# BM25: Σ idf × tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)); tf = positions of the lexeme
# in the memory (text, context and entity/date signals alike), dl = distinct lexemes of the
# memory, avgdl its bank average (bank_stats).
_BM25_SCORE = sql.SQL("""(
        SELECT coalesce(sum(kl.idf[array_position(kl.lex, x.lexeme)] * x.tf * (%(bm25_k1)s + 1)
                            / (x.tf + %(bm25_k1)s * (1 - %(bm25_b)s + %(bm25_b)s
                                  * length(u.search_vector) / kl.avgdl))), 0)
        FROM (SELECT v.lexeme, coalesce(array_length(v.positions, 1), 1) AS tf
              FROM unnest(u.search_vector) v WHERE v.lexeme = ANY(kl.lex)) x)""")
_FULLTEXT_FROM = sql.SQL("")
_BM25_FROM = sql.SQL(", klex kl")

# One scan per fact type, the type inlined as a literal (a validated enum value) so the planner
# picks that type's partial HNSW index (migration 0003) instead of filtering a shared one.
# Rows below %(semantic_min)s cosine are dropped after each scan's LIMIT.
_SEMANTIC_SCAN = sql.SQL("""(
    SELECT u.id::text AS id, 1 - (u.embedding <=> %(qvec)s) AS score
    FROM memory_units u
    WHERE u.bank_id = %(bank)s AND u.fact_type = {ft} AND {tags}
    ORDER BY u.embedding <=> %(qvec)s
    LIMIT %(n)s)""")

# One keyword scan for all requested types: the rank runs once per matching row, not once per
# (row, fact type).
_KEYWORD_ARM = sql.SQL("""
SELECT u.id::text AS id, {score} AS score
FROM memory_units u, kq{more}
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {tags}
  AND u.search_vector @@ kq.q
ORDER BY score DESC, u.id DESC
LIMIT %(keyword_n)s""")


def semantic_statement(types: Sequence[str], tags: sql.Composable) -> sql.Composed:
    """The semantic arm: one HNSW scan per fact type, as one ``UNION ALL``."""
    scans = sql.SQL(" UNION ALL ").join(
        _SEMANTIC_SCAN.format(ft=sql.Literal(t), tags=tags) for t in types)
    return sql.SQL("SELECT id, score FROM ({scans}) s WHERE score >= %(semantic_min)s").format(
        scans=scans)


def keyword_statement(tags: sql.Composable, ranking: KeywordRanking) -> sql.Composed:
    """The keyword arm, ranked by BM25 or ``ts_rank_cd`` (``ranking``)."""
    bm25 = ranking == "bm25"
    return sql.Composed([
        sql.SQL("WITH "), _KEYWORD_QUERY, _BM25_LEXEMES if bm25 else sql.SQL(""),
        _KEYWORD_ARM.format(tags=tags, score=_BM25_SCORE if bm25 else _FULLTEXT_SCORE,
                            more=_BM25_FROM if bm25 else _FULLTEXT_FROM)])


# --- graph ------------------------------------------------------------------------------------
_GRAPH_SEEDS = sql.SQL("""
seeds AS MATERIALIZED (
    SELECT id FROM (
        SELECT u.id, u.embedding <=> %(qvec)s AS distance FROM memory_units u
        WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {tags}
        ORDER BY u.embedding <=> %(qvec)s
        LIMIT %(seed_limit)s) s
    WHERE 1 - distance >= %(seed_min)s
)""")

# Units sharing the seeds' entities, at most %(per_entity)s per entity (newest first: ids are
# time-ordered), each shared entity weighted by its IDF, ln(N / mentions) / ln(N), so a hub
# entity ("user", a chat speaker's own name, in half the bank) counts for almost nothing and a
# rare one for almost 1. Candidates scoring %(graph_min)s or less are noise, not evidence.
_GRAPH_ENTITY = sql.SQL("""
seed_entities AS (
    SELECT DISTINCT ue.entity_id FROM unit_entities ue JOIN seeds s ON ue.unit_id = s.id
    WHERE ue.bank_id = %(bank)s
),
bank_size AS (
    SELECT greatest(coalesce(max(memories), 0), 2)::float8 AS n
    FROM bank_stats WHERE bank_id = %(bank)s
),
entity_hits AS (
    SELECT t.unit_id, 0::float8 AS sw, 0::float8 AS cw,
           sum(greatest(ln(bs.n / greatest(e.mention_count, 1)), 0) / ln(bs.n)) AS ew
    FROM seed_entities se
    CROSS JOIN bank_size bs
    JOIN entities e ON e.bank_id = %(bank)s AND e.id = se.entity_id
    CROSS JOIN LATERAL (
        SELECT ue.unit_id FROM unit_entities ue
        WHERE ue.bank_id = %(bank)s AND ue.entity_id = se.entity_id
          AND ue.unit_id NOT IN (SELECT id FROM seeds)
        ORDER BY ue.unit_id DESC
        LIMIT %(per_entity)s) t
    GROUP BY t.unit_id
),""")

_GRAPH_LINKS = sql.SQL("""
link_hits AS (
    SELECT l.to_id AS unit_id, l.link_type, l.weight FROM memory_links l JOIN seeds s
      ON l.from_id = s.id
    WHERE l.bank_id = %(bank)s AND l.link_type <> 'temporal'
      AND l.to_id NOT IN (SELECT id FROM seeds)
    UNION ALL
    SELECT l.from_id, l.link_type, l.weight FROM memory_links l JOIN seeds s ON l.to_id = s.id
    WHERE l.bank_id = %(bank)s AND l.link_type <> 'temporal'
      AND l.from_id NOT IN (SELECT id FROM seeds)
),
link_scores AS (
    SELECT unit_id,
           coalesce(max(weight) FILTER (WHERE link_type = 'semantic'), 0) AS sw,
           coalesce(max(weight) FILTER (WHERE link_type <> 'semantic'), 0) AS cw,
           0::float8 AS ew
    FROM link_hits GROUP BY unit_id
),""")

_GRAPH_SELECT = sql.SQL("""
scored AS (
    SELECT unit_id, sum(ew) AS ew, sum(sw) AS sw, sum(cw) AS cw FROM (
        {sources}
    ) x GROUP BY unit_id
)
SELECT u.id::text AS id, tanh(0.5 * sc.ew) + %(graph_sw)s * sc.sw + sc.cw AS score,
       sc.ew AS entity_weight, sc.sw AS semantic_weight, sc.cw AS causal_weight
FROM scored sc JOIN memory_units u ON u.bank_id = %(bank)s AND u.id = sc.unit_id
WHERE u.fact_type = ANY(%(types)s::text[]) AND {tags}
  AND tanh(0.5 * sc.ew) + %(graph_sw)s * sc.sw + sc.cw > %(graph_min)s
ORDER BY score DESC, u.id DESC
LIMIT %(n)s""")


def graph_statement(tags: sql.Composable, *, with_entities: bool) -> sql.Composed:
    """Link expansion from the top semantic seeds: shared entities, semantic links (both
    directions) and causal links; ``tanh(0.5 x weighted shared entities) + %(graph_sw)s x
    semantic weight + causal weight``, kept above ``%(graph_min)s``. Tag filters apply inside
    the SQL, to seeds and results alike."""
    parts: list[sql.Composable] = [sql.SQL("WITH "), _GRAPH_SEEDS.format(tags=tags),
                                   sql.SQL(",")]
    if with_entities:
        parts.append(_GRAPH_ENTITY)
    parts.append(_GRAPH_LINKS)
    sources: sql.Composable = sql.SQL("SELECT unit_id, ew, sw, cw FROM link_scores")
    if with_entities:
        sources = sql.SQL("SELECT unit_id, ew, sw, cw FROM entity_hits UNION ALL ") + sources
    parts.append(_GRAPH_SELECT.format(sources=sources, tags=tags))
    return sql.Composed(parts)


# --- temporal ---------------------------------------------------------------------------------
_DATED_COLUMNS = sql.SQL("""u.occurred_start, u.occurred_end, u.mentioned_at, u.date_grain""")

_TEMPORAL_ENTRY = sql.SQL("""
SELECT u.id::text AS id, 1 - (u.embedding <=> %(qvec)s) AS similarity, {dated}
FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {tags}
  AND ((u.occurred_start IS NOT NULL AND u.occurred_start <= %(wend)s
        AND coalesce(u.occurred_end, u.occurred_start) >= %(wstart)s)
       OR u.mentioned_at BETWEEN %(wstart)s AND %(wend)s)
ORDER BY u.embedding <=> %(qvec)s
LIMIT %(pool)s""")


def temporal_entry_statement(tags: sql.Composable) -> sql.Composed:
    """The most similar memories dated inside the window (occurred or mentioned)."""
    return _TEMPORAL_ENTRY.format(dated=_DATED_COLUMNS, tags=tags)


# One hop of spreading along temporal and causal links: for each frontier memory, its
# %(fanout)s strongest out-links to memories at least %(temporal_min)s similar to the query
# (of the requested types and tags). The plan runs one hop per round trip and keeps the
# frontier de-duplicated and capped: a recursive CTE cannot de-duplicate across iterations,
# and on chat data (same-session temporal links of weight 1, in both directions) its paths
# multiplied to seconds per query (measured on LoCoMo).
_TEMPORAL_HOP = sql.SQL("""
SELECT f.id::text AS from_id, nxt.to_id::text AS id, nxt.link_type, nxt.weight, nxt.similarity,
       nxt.occurred_start, nxt.occurred_end, nxt.mentioned_at, nxt.date_grain
FROM unnest(%(frontier)s::uuid[]) AS f(id)
CROSS JOIN LATERAL (
    SELECT l.to_id, l.link_type, l.weight, 1 - (u.embedding <=> %(qvec)s) AS similarity,
           {dated}
    FROM memory_links l
    JOIN memory_units u ON u.bank_id = l.bank_id AND u.id = l.to_id
    WHERE l.bank_id = %(bank)s AND l.from_id = f.id AND l.weight >= 0.1
      AND l.link_type IN ('temporal', 'causes', 'caused_by', 'enables', 'prevents')
      AND u.fact_type = ANY(%(types)s::text[]) AND {tags}
      AND 1 - (u.embedding <=> %(qvec)s) >= %(temporal_min)s
    ORDER BY l.weight DESC
    LIMIT %(fanout)s) nxt""")


def temporal_hop_statement(tags: sql.Composable) -> sql.Composed:
    return _TEMPORAL_HOP.format(dated=_DATED_COLUMNS, tags=tags)


# --- hydration and chunks ---------------------------------------------------------------------
HYDRATE = """
SELECT u.id::text AS id, u.text, u.context, u.fact_type, u.occurred_start, u.occurred_end,
       u.mentioned_at, u.date_grain, u.tags, u.metadata, u.proof_count, u.document_id,
       u.chunk_id,
       coalesce((SELECT array_agg(e.canonical_name ORDER BY e.canonical_name)
                 FROM unit_entities ue JOIN entities e
                   ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
                 WHERE ue.bank_id = u.bank_id AND ue.unit_id = u.id), '{}') AS entities
FROM memory_units u
WHERE u.bank_id = %(bank)s AND u.id = ANY(%(ids)s::uuid[])"""

CHUNKS = """
SELECT chunk_id, text FROM chunks WHERE bank_id = %(bank)s AND chunk_id = ANY(%(ids)s::text[])"""
