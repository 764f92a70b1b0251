-- 0025: recall_details (migration 0023) reads the kept memories' entity names in one grouped
-- read instead of an ARRAY sublink per memory. The same rows: the same names in the same order
-- (array_agg ... ORDER BY canonical_name, as the sublink's ORDER BY), an empty array for a
-- memory without any; tags, metadata and a document's pieces as before.
--
-- Why: the sublink ran once per kept memory (~160 at 100k): a probe of unit_entities, then one
-- entities lookup per mention (194 for 157 memories), although a recall's memories mention few
-- distinct entities (30 of those 194). Here the mentions are read once (`ue`), each distinct
-- entity is looked up once (`e.id = ANY(ARRAY(SELECT DISTINCT ...))`), and the names are joined
-- back and grouped by memory. Measured on the 100k bench bank (kept ids of 10 bench queries,
-- EXPLAIN ANALYZE of the body with a generic plan as the function runs it, load ~3.5,
-- docs/benchmarks/crit20_recall.md): 3,078 -> 1,721 buffers p50, 2.7 -> 2.0 ms for 157 ids.
--
-- (The doubled braces: migrations are psycopg.sql templates, the dimension substituted.)
-- A plain replacement of the function (same signature, same result type, same SET clause):
-- existing banks need nothing else; a connection's kept plan is replanned on first call.
CREATE OR REPLACE FUNCTION recall_details(p_bank text, p_ids uuid[])
RETURNS TABLE (id text, tags text[], metadata jsonb, piece integer, pieces integer,
               entities text[])
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    WITH ue AS MATERIALIZED (
        SELECT m.unit_id, m.entity_id FROM unit_entities m
        WHERE m.bank_id = p_bank AND m.unit_id = ANY(p_ids)
    ),
    names AS (
        SELECT ue.unit_id, array_agg(e.canonical_name ORDER BY e.canonical_name) AS names
        FROM ue JOIN entities e ON e.id = ue.entity_id
        WHERE e.bank_id = p_bank AND e.id = ANY(ARRAY(SELECT DISTINCT d.entity_id FROM ue d))
        GROUP BY ue.unit_id
    )
    SELECT u.id::text, u.tags, u.metadata,
           CASE WHEN u.document_id IS NULL THEN 0 ELSE
             (SELECT count(*) FROM memory_units p
              WHERE p.bank_id = u.bank_id AND p.document_id = u.document_id AND p.id < u.id)
           END::int,
           CASE WHEN u.document_id IS NULL THEN 1 ELSE
             (SELECT count(*) FROM memory_units p
              WHERE p.bank_id = u.bank_id AND p.document_id = u.document_id) END::int,
           coalesce(n.names, '{{}}')
    FROM memory_units u LEFT JOIN names n ON n.unit_id = u.id
    WHERE u.bank_id = p_bank AND u.id = ANY(p_ids);
END
$$;
