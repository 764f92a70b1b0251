"""The keyword arm: full text over ``search_vector``, ranked by Okapi BM25 (from the bank's
term statistics) or ``ts_rank_cd``; the query's words are chosen rarest first."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from shared_core.recall.arms import Arm, ArmQuery, ArmResult, ScoredRow, ranked, rows_or_raise
from shared_core.recall.query import KeywordRanking
from shared_core.recall.timing import Stopwatch
from shared_core.storage.plan import Plan, Query
from shared_core.text import cjk_bigrams

__all__ = ["KEYWORD", "KeywordTerms", "keyword_params", "keyword_statement", "keyword_terms"]

_WORD = re.compile(r"\w+", re.UNICODE)
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
# Postgres rejects tsquery lexemes longer than this; such "words" are never useful terms.
_MAX_TERM_CHARS = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class KeywordTerms:
    """The keyword arm's input: distinct word terms (query order) and CJK bigrams."""

    words: tuple[str, ...]
    bigrams: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.words or self.bigrams)


def keyword_terms(text: str) -> KeywordTerms:
    """Word terms for the OR-ed full-text query, plus CJK character bigrams.

    Terms come out of a word regex, so no user text is ever parsed as tsquery syntax
    (``&``, ``|``, ``!``, ``:*`` are not words).

    >>> keyword_terms("Alice & Bob's 'job'?").words
    ('alice', 'bob', 's', 'job')
    """
    words: dict[str, None] = {}
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        if _CJK_CHAR.search(word):
            # CJK runs are handled as bigrams; keep any latin part of a mixed token.
            word = _CJK_CHAR.sub(" ", word).strip()
            for part in word.split():
                if len(part) <= _MAX_TERM_CHARS:
                    words.setdefault(part)
            continue
        if len(word) <= _MAX_TERM_CHARS and word.replace("_", ""):
            words.setdefault(word)
    return KeywordTerms(words=tuple(words), bigrams=tuple(dict.fromkeys(cjk_bigrams(text))))


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
# in the memory (text, context and entity/date signals alike; a position in the neighbour
# context, weight 'D', counts bm25_context_weight), dl = distinct lexemes of the memory, avgdl
# its bank average (bank_stats).
# This runs once per matching row (8,800 rows for a common name at 100k), so its per-row cost
# is the statement's cost; three things keep it down without changing a score (same terms,
# summed in the same order; tests/integration/test_keyword_stats.py compares it with the plain
# formulation):
# - the memory's search vector is detoasted once (``sv``, a copy made in a LATERAL that is not
#   flattened) instead of once per use: most search vectors of rows written before migration
#   0015 are stored out of line (since 0015 a row stays whole up to 4 kB);
# - the query's lexemes are cut out of it with two ``ts_delete`` calls (delete the query's
#   lexemes, then delete every lexeme left) instead of unnesting every lexeme of the memory
#   into a function scan and filtering;
# - ``OFFSET 0`` keeps ``x`` a subquery, so ``tf`` is computed once per lexeme, not once per use.
# Measured at 100k (bench bank, the 15 statements of six heavy queries, load ~7): p50 100 -> 69 ms.
_BM25_SCORE = sql.SQL("""(
        SELECT coalesce(sum(kl.idf[array_position(kl.lex, x.lexeme)] * x.tf * (%(bm25_k1)s + 1)
                            / (x.tf + %(bm25_k1)s * (1 - %(bm25_b)s + %(bm25_b)s
                                  * length(d.sv) / kl.avgdl))), 0)
        FROM (SELECT v.lexeme,
                     coalesce((SELECT sum(CASE WHEN w = 'D' THEN %(bm25_context_weight)s ELSE 1 END)
                               FROM unnest(v.weights) w), 1) AS tf
              FROM unnest(ts_delete(d.sv, tsvector_to_array(ts_delete(d.sv, kl.lex)))) v
              OFFSET 0) x
        WHERE x.tf > 0)""")
_FULLTEXT_FROM = sql.SQL("")
# ``|| ''::tsvector`` builds an in-memory copy: the scoring subquery then reads that, not the
# stored (toasted) value.
_BM25_DETOASTED = sql.SQL(" CROSS JOIN LATERAL (SELECT u.search_vector || ''::tsvector AS sv OFFSET 0) d")
_BM25_FROM = sql.SQL(", klex kl")

# One keyword scan for all requested types: the rank runs once per matching row, not once per
# (row, fact type).
_KEYWORD_ARM = sql.SQL("""
SELECT u.id::text AS id, {score} AS score
FROM memory_units u{lateral}, kq{more}
WHERE u.bank_id = %(bank)s AND u.fact_type = ANY(%(types)s::text[]) AND {tags}
  AND u.search_vector @@ kq.q
ORDER BY score DESC, u.id DESC
LIMIT %(keyword_n)s""")


def keyword_statement(tags: sql.Composable, ranking: KeywordRanking) -> sql.Composed:
    """The keyword arm, ranked by BM25 or ``ts_rank_cd`` (``ranking``)."""
    bm25 = ranking == "bm25"
    return sql.Composed(
        [
            sql.SQL("WITH "),
            _KEYWORD_QUERY,
            _BM25_LEXEMES if bm25 else sql.SQL(""),
            _KEYWORD_ARM.format(
                tags=tags,
                score=_BM25_SCORE if bm25 else _FULLTEXT_SCORE,
                lateral=_BM25_DETOASTED if bm25 else _FULLTEXT_FROM,
                more=_BM25_FROM if bm25 else _FULLTEXT_FROM,
            ),
        ]
    )


def keyword_params(q: ArmQuery, n: int) -> dict[str, Any]:
    """The parameters of :func:`keyword_statement` for ``q``, keeping the best ``n`` rows
    (the graph arm reuses the statement for its keyword seeds)."""
    s = q.settings
    return q.params(
        ts_config=s.ts_config,
        words=list(q.words),
        bigrams=list(q.bigrams),
        keyword_n=n,
        max_terms=s.keyword_max_terms,
        max_postings=s.keyword_max_postings,
        bank_max_df=s.keyword_bank_max_df,
        bank_min_rows=s.keyword_bank_min_rows,
        bm25_k1=s.bm25_k1,
        bm25_b=s.bm25_b,
        bm25_context_weight=s.bm25_context_weight,
    )


def _start(q: ArmQuery) -> Query | None:
    if not (q.words or q.bigrams):
        return None
    return Query(
        keyword_statement(q.where_sql, q.settings.keyword),
        keyword_params(q, q.n * len(q.types)),
        row_type=ScoredRow,
    )


def _finish(q: ArmQuery, rows: Sequence[ScoredRow] | BaseException, watch: Stopwatch) -> Plan[ArmResult]:
    max_terms = q.settings.keyword_max_terms
    cut = len(q.words) + len(q.bigrams) > max_terms
    return ArmResult(
        hits=ranked(rows_or_raise(rows)),
        notes=(f"keyword terms cut to the {max_terms} rarest",) if cut else (),
    )
    yield  # a plan with no further I/O


# Vector-free: the statement goes out before the query is embedded. On 2 cores, the embedding
# (one torch thread) and the keyword statement (one backend) each hold a core, and the arms
# round then waits for the semantic statement alone.
KEYWORD = Arm(start=_start, finish=_finish, vector_free=True)
