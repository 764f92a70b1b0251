"""The keyword arm: full text over ``search_vector``, ranked by Okapi BM25 (from the bank's
term statistics) or ``ts_rank_cd``; the query's words, each with its irregular forms as one
term (:mod:`shared_core.recall.inflections`), are chosen rarest first."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from psycopg import sql

from shared_core.recall.arms import (
    TYPES_TEST,
    Arm,
    ArmQuery,
    ArmResult,
    ScoredRow,
    ranked,
    rows_or_raise,
    type_clause,
)
from shared_core.recall.inflections import inflection_group, inflection_groups
from shared_core.recall.query import KeywordRanking
from shared_core.recall.timing import Stopwatch
from shared_core.storage.plan import Plan, Query
from shared_core.storage.statements import flat
from shared_core.text import cjk_bigrams
from shared_core.types import FACT_TYPES

__all__ = ["KEYWORD", "KeywordTerms", "keyword_params", "keyword_statement", "keyword_terms", "word_forms"]

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
# the terms left out are the commonest, those that say least.
# A term is a group of forms (``word_groups`` numbers them; CJK bigrams are groups of one): a
# plain word alone, or a word with its irregular forms ("go", "went", "gone"), OR-ed. A group
# is one term, so it is chosen, budgeted and (BM25) scored once. Its df is the SUM of its
# distinct lexemes' dfs: the memories any form matches, exact when the forms do not share a
# memory and an upper bound when they do (term_stats has no joint counts). An upper bound is
# the safe side for the postings budget (the arm reads every matching row) and keeps idf from
# crediting a group with its rarest form's rarity (the max would: "gone" rare, "go" common).
# A plain word keeps the max over its lexemes (several only for tokens like "bob_smith",
# whose tsquery ANDs them). kq is MATERIALIZED: Postgres
# would otherwise inline it and rebuild the tsquery for every candidate row (measured: 2.2 s
# instead of 3 ms).
_KEYWORD_QUERY = sql.SQL("""
kstats AS MATERIALIZED (
    SELECT coalesce(max(memories), 0)::float8 AS n, coalesce(max(lexemes), 0)::float8 AS lexemes
    FROM bank_stats WHERE bank_id = %(bank)s
),
kforms AS MATERIALIZED (
    SELECT f.g, f.o, f.w, f.q, f.lexemes FROM (
        SELECT t.g, t.o, t.w, plainto_tsquery(%(ts_config)s::regconfig, t.w) AS q,
               tsvector_to_array(to_tsvector(%(ts_config)s::regconfig, t.w)) AS lexemes
        FROM unnest(%(words)s::text[], %(word_groups)s::int[]) WITH ORDINALITY AS t(w, g, o)
        UNION ALL
        SELECT -b.o, b.o, b.g, plainto_tsquery('simple', b.g), tsvector_to_array(to_tsvector('simple', b.g))
        FROM unnest(%(bigrams)s::text[]) WITH ORDINALITY AS b(g, o)
    ) f
    WHERE numnode(f.q) > 0
),
kterms AS MATERIALIZED (
    SELECT f.term, f.q, f.forms, l.lexemes, l.df
    FROM (SELECT g, (array_agg(w ORDER BY o))[1] AS term, count(*) AS forms,
                 string_agg(q::text, ' | ' ORDER BY o)::tsquery AS q
          FROM kforms GROUP BY g) f
    CROSS JOIN LATERAL (
        SELECT array_agg(x.lexeme ORDER BY x.lexeme) AS lexemes,
               coalesce(CASE WHEN f.forms > 1 THEN sum(ts.df) ELSE max(ts.df) END, 0) AS df
        FROM (SELECT DISTINCT unnest(k.lexemes) AS lexeme FROM kforms k WHERE k.g = f.g) x
        LEFT JOIN term_stats ts ON ts.bank_id = %(bank)s AND ts.lexeme = x.lexeme
    ) l
),
kept AS MATERIALIZED (
    SELECT term, q, lexemes, forms, df, pos FROM (
        SELECT k.term, k.q, k.lexemes, k.forms, k.df,
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
# as aligned arrays in one row with the bank's average length: scoring a candidate is then
# an array lookup per matching lexeme, not a join against a CTE. ``unit`` says which lexemes
# score together as one query term: each lexeme of a plain word alone (as before inflection
# groups), all lexemes of an inflection group together (the grouped score below), with the
# group's df. A lexeme two terms share belongs to the rarer.
_BM25_LEXEMES = sql.SQL(""",
klex AS MATERIALIZED (
    SELECT coalesce(array_agg(x.lexeme), '{}') AS lex,
           coalesce(array_agg(x.unit), '{}') AS unit,
           coalesce(array_agg(ln(1 + (s.n - x.df + 0.5) / (x.df + 0.5))), '{}') AS idf,
           greatest(s.lexemes / greatest(s.n, 1), 1) AS avgdl
    FROM (
        SELECT DISTINCT ON (l.lexeme) l.lexeme,
               k.pos * 1000 + CASE WHEN k.forms > 1 THEN 0 ELSE l.i END AS unit,
               CASE WHEN k.forms > 1 THEN k.df ELSE coalesce(ts.df, 0) END AS df
        FROM kept k CROSS JOIN LATERAL unnest(k.lexemes) WITH ORDINALITY AS l(lexeme, i)
        LEFT JOIN term_stats ts ON ts.bank_id = %(bank)s AND ts.lexeme = l.lexeme
        ORDER BY l.lexeme, k.pos
    ) x
    CROSS JOIN kstats s
    GROUP BY s.n, s.lexemes
)""")


def _bm25_term(idf: str, tf: str, dl: str) -> sql.Composed:
    """One query term's Okapi BM25 addend, idf × tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)),
    over the SQL expressions ``idf``, ``tf`` and ``dl``. Every BM25 statement writes it through
    here: the postings and the search vectors give the same scores to the bit only while the
    expression is the same."""
    return sql.SQL(
        "{idf} * {tf} * (%(bm25_k1)s + 1)"
        " / ({tf} + %(bm25_k1)s * (1 - %(bm25_b)s + %(bm25_b)s * {dl} / kl.avgdl))"
    ).format(idf=sql.SQL(idf), tf=sql.SQL(tf), dl=sql.SQL(dl))


def _group_sum(rows: sql.Composable, dl: str) -> sql.Composed:
    """A memory's BM25 over inflection groups, from ``rows`` of (p, tf): its lexemes' positions
    in ``kl.lex`` and their tf; each group (``kl.unit``) is one term, its tf summed over its
    lexemes, its idf the group's. ``OFFSET 0`` keeps ``rows`` a subquery, run once."""
    return sql.SQL("""
        SELECT coalesce(sum({term}), 0)
        FROM (SELECT min(y.p) AS p, sum(y.tf) AS tf
              FROM ({rows} OFFSET 0) y
              GROUP BY kl.unit[y.p]) x
        WHERE x.tf > 0""").format(term=_bm25_term("kl.idf[x.p]", "x.tf", dl), rows=rows)


_FULLTEXT_SCORE = sql.SQL("ts_rank_cd(u.search_vector, kq.q, 1)")
# A query lexeme's tf in a memory: its positions, those in the neighbour context (weight 'D')
# counting bm25_context_weight. Summed position by position (a float sum of 1s and the weight,
# in position order), but only for a lexeme that has a 'D' position: without one the sum is
# the count of its positions, exactly (a sum of 1.0s), read without running a subquery. A
# lexeme stored without positions counts 1. The subquery per (memory, query lexeme) was a
# seventh of the statement's CPU: the scoring of the 2,256 memories matching one bench query
# at 100k, 15.4 -> 13.4 ms of server CPU (p50 of 20, same rows and scores to the bit;
# docs/benchmarks/lat_recall.md for the whole recall).
_TF = sql.SQL("""CASE WHEN 'D' = ANY(v.weights)
                          THEN (SELECT sum(CASE WHEN w = 'D' THEN %(bm25_context_weight)s ELSE 1 END)
                                FROM unnest(v.weights) w)
                          ELSE coalesce(nullif(cardinality(v.weights), 0), 1) END""")
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
# A query with no inflection group (every unit one lexeme) is scored by this statement.
_BM25_SCORE = sql.SQL("""(
        SELECT coalesce(sum({term}), 0)
        FROM (SELECT v.lexeme,
                     {tf} AS tf
              FROM unnest(ts_delete(d.sv, tsvector_to_array(ts_delete(d.sv, kl.lex)))) v
              OFFSET 0) x
        WHERE x.tf > 0)""").format(
    term=_bm25_term("kl.idf[array_position(kl.lex, x.lexeme)]", "x.tf", "length(d.sv)"), tf=_TF
)
# BM25 when the query has an inflection group: a group is ONE query term, so a memory saying
# "went" and "go" has tf 2 for it, and is not scored as matching two terms (a word with five
# forms would otherwise count up to five times, and a memory repeating a verb in two tenses
# would outrank one naming two of the question's things). tf sums over the unit's lexemes,
# idf is the unit's (every lexeme of a unit carries it). The per-lexeme tf is the statement
# above's; its rows are then summed per unit.
_BM25_GROUPED_SCORE = sql.SQL("({sum})").format(
    sum=_group_sum(
        sql.SQL("""SELECT array_position(kl.lex, v.lexeme) AS p,
                           {tf} AS tf
                    FROM unnest(ts_delete(d.sv, tsvector_to_array(ts_delete(d.sv, kl.lex)))) v""").format(
            tf=_TF
        ),
        "length(d.sv)",
    )
)
_FULLTEXT_FROM = sql.SQL("")
# ``|| ''::tsvector`` builds an in-memory copy: the scoring subquery then reads that, not the
# stored (toasted) value.
_BM25_DETOASTED = sql.SQL(" CROSS JOIN LATERAL (SELECT u.search_vector || ''::tsvector AS sv OFFSET 0) d")
_BM25_FROM = sql.SQL(", klex kl")

# BM25 from the postings (migration 0022: per memory and lexeme its dl and position counts),
# for an unfiltered recall of every fact type: the query's lexemes are read by an index-only
# scan, so no memory's heap page or search vector is read at all. The same scores to the bit
# as the statement below (tests/integration/test_keyword_stats.py compares both with the plain
# formulation): each memory's lexemes are summed in the search vector's order (bytewise,
# COLLATE "C": a tsvector sorts its lexemes by memcmp), tf is n_plain then the context weight
# added n_ctx times (the order the search vector's positions give, 0022), and a group's score is
# the statement below's subquery over the same (lexeme, tf) rows, whose hash aggregate sums the
# units in its own order; a memory matching one unit only (most) is scored inline: one addend,
# so no order, and no subquery run (grouped statements 8.80 -> 6.02 ms p50 of server CPU, 22
# bench queries x 2, same rows). Every ORDER BY of an aggregate is the one sort below it
# (presorted; a FILTER clause on the sum made Postgres sort each memory's rows apart: flat
# statements 1.93 -> 1.71 ms p50, 28 queries x 2). The postings say which
# memories match only when every form is one lexeme (a word like "bob_smith" is an AND of two:
# ``kflat``); otherwise the statement below runs, each branch gated by a one-time filter.
# Measured at 100k (bench bank, benchmarks/statement_cpu_ab.py, the 50 bench queries x 2 rounds
# interleaved, load 4.1; docs/benchmarks/kw_postings.md): server CPU 12.67 -> 6.82 ms per recall,
# identical results 50 of 50.
_POSTINGS_FLAT = sql.SQL(""",
kflat AS MATERIALIZED (
    SELECT NOT EXISTS (SELECT 1 FROM kforms WHERE numnode(q) > 1) AS yes
)""")
# A posting's tf (see above); generate_series only for a lexeme with context positions.
_POSTING_TF = sql.SQL("""CROSS JOIN LATERAL (
        SELECT CASE WHEN p.n_ctx = 0 THEN p.n_plain::float8
                    ELSE (SELECT sum(c.x) FROM (SELECT p.n_plain::float8 AS x
                                                UNION ALL
                                                SELECT %(bm25_context_weight)s::float8
                                                FROM generate_series(1, p.n_ctx)) c) END AS tf) t""")
_POSTINGS_SCORED = sql.SQL("""
    SELECT p.unit_id::text AS id,
           coalesce(sum(CASE WHEN t.tf > 0
                             THEN {term}
                             END
                        ORDER BY p.lexeme COLLATE "C"), 0) AS score
    FROM klex kl, memory_postings p {tf}
    WHERE (SELECT yes FROM kflat) AND p.bank_id = %(bank)s AND p.lexeme = ANY(kl.lex)
    GROUP BY p.unit_id
    ORDER BY score DESC, p.unit_id DESC
    LIMIT %(keyword_n)s""").format(
    term=_bm25_term("kl.idf[array_position(kl.lex, p.lexeme)]", "t.tf", "p.dl"), tf=_POSTING_TF
)
_POSTINGS_GROUPED_SCORED = sql.SQL("""
    SELECT g.unit_id::text AS id, CASE WHEN g.umin = g.umax
        THEN CASE WHEN g.tf > 0 THEN {term} ELSE 0 END
        ELSE ({group_sum}) END AS score
    FROM (SELECT p.unit_id, min(p.dl) AS dl,
                 min(kl.unit[array_position(kl.lex, p.lexeme)]) AS umin,
                 max(kl.unit[array_position(kl.lex, p.lexeme)]) AS umax,
                 min(array_position(kl.lex, p.lexeme)) AS p,
                 sum(t.tf ORDER BY p.lexeme COLLATE "C") AS tf,
                 array_agg(array_position(kl.lex, p.lexeme) ORDER BY p.lexeme COLLATE "C") AS ps,
                 array_agg(t.tf ORDER BY p.lexeme COLLATE "C") AS tfs
          FROM klex kl, memory_postings p {tf}
          WHERE (SELECT yes FROM kflat) AND p.bank_id = %(bank)s AND p.lexeme = ANY(kl.lex)
          GROUP BY p.unit_id) g, klex kl
    ORDER BY score DESC, g.unit_id DESC
    LIMIT %(keyword_n)s""").format(
    term=_bm25_term("kl.idf[g.p]", "g.tf", "g.dl"),
    group_sum=_group_sum(sql.SQL("SELECT * FROM unnest(g.ps, g.tfs) AS y(p, tf)"), "g.dl"),
    tf=_POSTING_TF,
)
_POSTINGS_ARM = sql.SQL("""
SELECT * FROM (({postings})
  UNION ALL
  (SELECT * FROM ({scan}) s WHERE NOT (SELECT yes FROM kflat))) k""")

# One keyword scan for all requested types: the rank runs once per matching row, not once per
# (row, fact type). ``{types}`` is the arm's type_clause: TRUE under a filter asking every fact
# type, where the test is vacuous and its estimate (below 1) can only mislead the planner. At
# 100k this statement's plan did not change without it (the text's and the filter's bitmaps
# drive it: same buffers, time within noise, 50 bench queries under four filters;
# docs/benchmarks/filt3_statements.md).
_KEYWORD_ARM = sql.SQL("""
SELECT u.id::text AS id, {score} AS score
FROM memory_units u{lateral}, kq{more}
WHERE u.bank_id = %(bank)s AND {types} AND {tags}
  AND u.search_vector @@ kq.q
ORDER BY score DESC, u.id DESC
LIMIT %(keyword_n)s""")


def keyword_statement(
    tags: sql.Composable,
    ranking: KeywordRanking,
    *,
    grouped: bool = False,
    postings: bool = False,
    types: sql.Composable = TYPES_TEST,
) -> sql.Composed:
    """The keyword arm, ranked by BM25 or ``ts_rank_cd`` (``ranking``); ``grouped``: the words
    hold an inflection group of more than one form (BM25 then sums tf per group);
    ``postings``: BM25 from the postings (an unfiltered recall of every fact type: ``tags``
    must then be ``TRUE``), the search vectors read only for a form of several lexemes;
    ``types``: the scan's fact-type test (:func:`~shared_core.recall.arms.type_clause`)."""
    bm25 = ranking == "bm25"
    bm25_score = _BM25_GROUPED_SCORE if grouped else _BM25_SCORE
    scan = _KEYWORD_ARM.format(
        types=types,
        tags=tags,
        score=bm25_score if bm25 else _FULLTEXT_SCORE,
        lateral=_BM25_DETOASTED if bm25 else _FULLTEXT_FROM,
        more=_BM25_FROM if bm25 else _FULLTEXT_FROM,
    )
    if not (bm25 and postings):
        return sql.Composed([sql.SQL("WITH "), _KEYWORD_QUERY, _BM25_LEXEMES if bm25 else sql.SQL(""), scan])
    scored = _POSTINGS_GROUPED_SCORED if grouped else _POSTINGS_SCORED
    return sql.Composed(
        [
            sql.SQL("WITH "),
            _KEYWORD_QUERY,
            _BM25_LEXEMES,
            _POSTINGS_FLAT,
            _POSTINGS_ARM.format(postings=scored, scan=scan),
        ]
    )


def keyword_params(q: ArmQuery, n: int) -> dict[str, Any]:
    """The parameters of :func:`keyword_statement` for ``q``, keeping the best ``n`` rows."""
    s = q.settings
    words, groups = word_forms(q.words, inflections=s.keyword_inflections)
    return q.params(
        ts_config=s.ts_config,
        words=words,
        word_groups=groups,
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


def word_forms(words: Sequence[str], *, inflections: bool) -> tuple[list[str], list[int]]:
    """The forms the keyword arm searches for ``words`` and the group (1-based) of each: with
    ``inflections``, a word's irregular forms join it as one group ("go": go, went, gone),
    else every word is its own group.

    >>> word_forms(["when", "go", "went", "pottery"], inflections=True)
    (['when', 'go', 'goes', 'going', 'went', 'gone', 'pottery'], [1, 2, 2, 2, 2, 2, 3])
    """
    groups = inflection_groups(words) if inflections else [(w,) for w in words]
    forms = [form for group in groups for form in group]
    ids = [i for i, group in enumerate(groups, start=1) for _ in group]
    return forms, ids


def _grouped(q: ArmQuery) -> bool:
    return q.settings.keyword_inflections and any(len(inflection_group(w)) > 1 for w in q.words)


def _unfiltered(q: ArmQuery) -> bool:
    """Whether every memory of the bank is searched (no tag or metadata filter, every fact
    type): the postings hold no filter column."""
    return not q.filtered and set(q.types) >= set(FACT_TYPES)


def _start(q: ArmQuery) -> Query | None:
    if not (q.words or q.bigrams):
        return None
    statement: sql.SQL | sql.Composed = (
        _unfiltered_statement(q.settings.keyword, _grouped(q), _unfiltered(q))
        if not q.filtered
        else keyword_statement(
            q.where_sql,
            q.settings.keyword,
            grouped=_grouped(q),
            postings=_unfiltered(q),
            types=type_clause(q),
        )
    )
    # Rows in the binary format (plain types, ~900 of them: faster to decode, the same values).
    return Query(statement, keyword_params(q, q.n * len(q.types)), row_type=ScoredRow, binary=True)


@functools.cache
def _unfiltered_statement(ranking: KeywordRanking, grouped: bool, postings: bool) -> sql.SQL:
    """:func:`keyword_statement` without a tag or metadata filter (``where_sql`` then always
    ``(TRUE AND TRUE)``, the type test :data:`TYPES_TEST`), composed once
    (shared_core.storage.statements)."""
    return flat(
        keyword_statement(
            ArmQuery.unfiltered_where(), ranking, grouped=grouped, postings=postings, types=TYPES_TEST
        )
    )


def _finish(q: ArmQuery, rows: Sequence[ScoredRow] | BaseException, watch: Stopwatch) -> Plan[ArmResult]:
    max_terms = q.settings.keyword_max_terms
    # one term per group: "see" and "saw" in one question are one term
    _, groups = word_forms(q.words, inflections=q.settings.keyword_inflections)
    cut = len(set(groups)) + len(q.bigrams) > max_terms
    return ArmResult(
        hits=ranked(rows_or_raise(rows)),
        notes=(f"keyword terms cut to the {max_terms} rarest",) if cut else (),
    )
    yield  # a plan with no further I/O


# Vector-free: the statement goes out before the query is embedded. On 2 cores, the embedding
# (one torch thread) and the keyword statement (one backend) each hold a core, and the arms
# round then waits for the semantic statement alone.
KEYWORD = Arm(start=_start, finish=_finish, vector_free=True)
