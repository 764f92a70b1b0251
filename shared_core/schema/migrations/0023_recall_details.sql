-- 0023: what a returned memory shows besides its ranking fields (tags, metadata, its place in
-- its document, entity names), as a function recall calls (shared_core/recall/hydrate.py,
-- DETAILS) with the bank and the ids of the memories it returns.
--
-- Why a function: the engine's sessions plan every statement for its parameters
-- (plan_cache_mode force_custom_plan, storage/pools.py: the keyword statement's generic plan
-- is much worse), so this read was planned anew at every recall, for an id list of ~160
-- constants; its plan never depends on them (the primary key for the ids, one lookup per row
-- for the rest). PL/pgSQL keeps a statement's plan for the session, and the SET clause below
-- makes that the generic plan, planned once per connection, for this function only; a
-- setting per statement needs a transaction of its own (BEGIN, set_config, COMMIT: measured
-- +4.7 ms paired at 100k, docs/benchmarks/latency.md). Measured at 100k (the kept memories of
-- 50 bench queries, 2026-12-02, docs/benchmarks/pipe_details.md): server CPU -13% against the
-- statement it replaces, the same rows.
--
-- A document's memories in creation order (UUIDv7 ids): a re-add recreates them in the same
-- order, so (piece, pieces) and the id an adapter derives from them are stable. Entity names
-- by an ARRAY sublink, not coalesce(array_agg(... ORDER BY ...)): the same names in the same
-- order (an empty array for none) without an aggregate per row.
--
-- Sharded by bank_id (docs/scaling.md), it would be distributed on p_bank, colocated with
-- memory_units, so that each call runs on the bank's shard.
CREATE FUNCTION recall_details(p_bank text, p_ids uuid[])
RETURNS TABLE (id text, tags text[], metadata jsonb, piece integer, pieces integer,
               entities text[])
LANGUAGE plpgsql STABLE
SET plan_cache_mode = force_generic_plan
AS $$
BEGIN
    RETURN QUERY
    SELECT u.id::text, u.tags, u.metadata,
           CASE WHEN u.document_id IS NULL THEN 0 ELSE
             (SELECT count(*) FROM memory_units p
              WHERE p.bank_id = u.bank_id AND p.document_id = u.document_id AND p.id < u.id)
           END::int,
           CASE WHEN u.document_id IS NULL THEN 1 ELSE
             (SELECT count(*) FROM memory_units p
              WHERE p.bank_id = u.bank_id AND p.document_id = u.document_id) END::int,
           ARRAY(SELECT e.canonical_name
                 FROM unit_entities ue JOIN entities e
                   ON e.bank_id = ue.bank_id AND e.id = ue.entity_id
                 WHERE ue.bank_id = u.bank_id AND ue.unit_id = u.id
                 ORDER BY e.canonical_name)
    FROM memory_units u
    WHERE u.bank_id = p_bank AND u.id = ANY(p_ids);
END
$$;
