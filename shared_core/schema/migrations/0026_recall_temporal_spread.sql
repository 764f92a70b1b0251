-- 0026: the temporal arm's spread (shared_core/recall/arms/temporal.py, _spread) in one call:
-- breadth-first from the entry points along temporal and causal links, up to p_depth hops, in
-- a loop on the server instead of one statement per hop from the client. A dated question ran
-- its hops one after another on its critical path (three in 11 of 12 dated bench questions),
-- each a round trip with its own scheduling wait on a loaded host and ~1 ms of the client's
-- CPU (docs/benchmarks/crit19_recall.md); one call now, its rows the memories reached.
--
-- The same arithmetic, in the same order, as the loop it replaces (which filtered recalls
-- still run), so the same memories with the same scores:
-- * a hop reads, for each frontier memory in frontier order, its p_fanout strongest out-links
--   (weight >= 0.1, temporal or causal) to memories of the asked types, of the query's
--   dimension, at least p_temporal_min similar to the query: the client's hop statement
--   (unfiltered), rows in the same order (ties in weight come out as the plan reads them);
-- * a link's score is best(from) x weight x (1 or p_causal_boost) x p_decay, in that order, in
--   float8, with the weight read as the client read it: the real's text form (0.9644676), not
--   its exact float (0.9644675850868225); best(from) is the best score so far, updated as
--   the hop's rows are read (a frontier memory reached again in the same hop carries its new
--   score on);
-- * a score at most p_min_score, or at most the memory's best so far, is dropped; otherwise it
--   becomes the memory's best and its reached score;
-- * the next frontier is the p_frontier_max best memories that grew in this hop, ties in the
--   order they first grew (Python's stable sort).
-- The scores live in arrays (array_position: a spread reaches a few hundred memories).
-- Returned: every memory reached (entry points included when a link raised their score: the
-- client drops them), its best score, its similarity and dates, in no particular order.
--
-- Planned for its values (SET below) whatever the session's plan_cache_mode: the hop planned
-- generically (a session forcing generic plans) ran for minutes on the 100k bench bank
-- (2026-12-03, not analysed further); the engine's sessions force custom plans anyway
-- (storage/pools.py), as the client's hop statement was planned.
--
-- A new function: existing banks need nothing else.
CREATE FUNCTION recall_temporal_spread(
    p_bank text, p_qvec vector, p_dims integer, p_types text[],
    p_entries uuid[], p_scores float8[],
    p_depth integer, p_fanout integer, p_frontier_max integer,
    p_temporal_min float8, p_decay float8, p_causal_boost float8, p_min_score float8)
RETURNS TABLE (id text, propagated float8, similarity float8, occurred_start timestamptz,
               occurred_end timestamptz, mentioned_at timestamptz, date_grain text)
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
    best_ids uuid[] := p_entries;
    best_scores float8[] := p_scores;
    reached_ids uuid[] := '{{}}';
    reached_scores float8[] := '{{}}';
    grown_ids uuid[];
    grown_scores float8[];
    frontier uuid[] := p_entries;
    hop record;
    score float8;
    pos integer;
BEGIN
    FOR depth IN 1..p_depth LOOP
        EXIT WHEN cardinality(frontier) = 0;
        grown_ids := '{{}}';
        grown_scores := '{{}}';
        FOR hop IN
            SELECT f.id AS from_id, nxt.to_id, nxt.link_type, nxt.weight
            FROM unnest(frontier) AS f(id)
            CROSS JOIN LATERAL (
                SELECT l.to_id, l.link_type, l.weight
                FROM memory_links l
                JOIN memory_units u ON u.bank_id = l.bank_id AND u.id = l.to_id
                WHERE l.bank_id = p_bank AND l.from_id = f.id AND l.weight >= 0.1
                  AND l.link_type IN ('temporal', 'causes', 'caused_by', 'enables', 'prevents')
                  AND u.fact_type = ANY(p_types)
                  AND vector_dims(u.embedding) = p_dims
                  AND 1 - (u.embedding <=> p_qvec) >= p_temporal_min
                ORDER BY l.weight DESC
                LIMIT p_fanout) nxt
        LOOP
            score := ((best_scores[array_position(best_ids, hop.from_id)]
                       * hop.weight::text::float8)
                      * CASE WHEN hop.link_type = 'temporal' THEN 1.0::float8 ELSE p_causal_boost END)
                     * p_decay;
            CONTINUE WHEN score <= p_min_score;
            pos := array_position(best_ids, hop.to_id);
            IF pos IS NULL THEN
                best_ids := best_ids || hop.to_id;
                best_scores := best_scores || score;
            ELSIF score <= best_scores[pos] THEN
                CONTINUE;
            ELSE
                best_scores[pos] := score;
            END IF;
            pos := array_position(grown_ids, hop.to_id);
            IF pos IS NULL THEN
                grown_ids := grown_ids || hop.to_id;
                grown_scores := grown_scores || score;
            ELSE
                grown_scores[pos] := score;
            END IF;
            pos := array_position(reached_ids, hop.to_id);
            IF pos IS NULL THEN
                reached_ids := reached_ids || hop.to_id;
                reached_scores := reached_scores || score;
            ELSE
                reached_scores[pos] := score;
            END IF;
        END LOOP;
        frontier := ARRAY(SELECT g.id FROM unnest(grown_ids, grown_scores) WITH ORDINALITY g(id, s, o)
                          ORDER BY g.s DESC, g.o LIMIT p_frontier_max);
    END LOOP;
    RETURN QUERY
    SELECT u.id::text, r.s, 1 - (u.embedding <=> p_qvec), u.occurred_start, u.occurred_end,
           u.mentioned_at, u.date_grain
    FROM unnest(reached_ids, reached_scores) AS r(id, s)
    JOIN memory_units u ON u.bank_id = p_bank AND u.id = r.id;
END
$$;
