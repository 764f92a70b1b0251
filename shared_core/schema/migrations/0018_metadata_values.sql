-- 0018: the values found under each top-level metadata key of a bank, so that a range filter
-- (`year` `$gte` 2024, `$lt`, `$between`, ...) can be served by the jsonb_path_ops GIN
-- index of 0008, which answers equality only.
--
-- A recall whose filter has a range on key k first reads, from this table, the values under k
-- that pass the range (a btree range scan over the typed columns, then the filter's own
-- jsonpath test on each value), and adds to the range the equivalent GIN-served test "equals
-- one of them" (shared_core/recall/filters.py, `range_values_plan`). Without it the range was a
-- recheck on every row the other conditions let through: at 100k memories, source = email and
-- year >= 2024 made the GIN index return 27,644 rows from 21,272 heap pages for 12,448
-- matches (EXPLAIN ANALYZE, BUFFERS, the bench bank).
--
-- Each row counts the memories holding `value` anywhere under `key` (the key's own value, an
-- array's elements, a nested object's leaves: every scalar a lax jsonpath test at or below the
-- key can reach), so the values of a range are a superset of what the filter's items can be.
-- Only numbers and strings are kept (a range never matches another type). A value whose JSON
-- text passes 258 bytes is counted under the marker object long: true instead, and keys
-- over 256 bytes are not kept (a btree entry has a size limit): ranges on such a key are left
-- as they were. As with term_stats
-- (0004), statement-level triggers with transition tables keep the counts exact for every
-- writer, a count that falls to 0 keeps its row, and a bank's rows go with the bank.

CREATE TABLE metadata_values (
    bank_id  text NOT NULL REFERENCES banks (bank_id) ON DELETE CASCADE,
    key      text NOT NULL,
    value    jsonb NOT NULL,
    memories integer NOT NULL CHECK (memories >= 0),
    num      numeric GENERATED ALWAYS AS (
                 CASE WHEN jsonb_typeof(value) = 'number' THEN value::numeric END) STORED,
    -- jsonpath orders strings by code point, which is byte order in UTF-8: collation "C".
    txt      text COLLATE "C" GENERATED ALWAYS AS (
                 CASE WHEN jsonb_typeof(value) = 'string' THEN value #>> '{{}}' END) STORED,
    PRIMARY KEY (bank_id, key, value)
);
CREATE INDEX metadata_values_num ON metadata_values (bank_id, key, num) WHERE num IS NOT NULL;
CREATE INDEX metadata_values_txt ON metadata_values (bank_id, key, txt) WHERE txt IS NOT NULL;

-- The (key, value) pairs of one memory's metadata, each once.
CREATE FUNCTION metadata_leaves(metadata jsonb) RETURNS TABLE (key text, value jsonb)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT DISTINCT e.key,
           CASE WHEN octet_length(l.value::text) > 258
                THEN '{{"long": true}}'::jsonb ELSE l.value END
    FROM jsonb_each(CASE WHEN jsonb_typeof(metadata) = 'object' THEN metadata
                         ELSE '{{}}'::jsonb END) AS e,
         jsonb_path_query(e.value, 'strict $.**') AS l(value)
    WHERE jsonb_typeof(l.value) IN ('number', 'string') AND octet_length(e.key) <= 256
$$;

CREATE FUNCTION metadata_values_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO metadata_values AS m (bank_id, key, value, memories)
    SELECT n.bank_id, l.key, l.value, count(*)
    FROM new_rows n, metadata_leaves(n.metadata) AS l
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (bank_id, key, value) DO UPDATE SET memories = m.memories + excluded.memories;
    RETURN NULL;
END $$;

CREATE FUNCTION metadata_values_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE metadata_values m SET memories = greatest(m.memories - d.n, 0)
    FROM (SELECT o.bank_id, l.key, l.value, count(*) AS n
          FROM old_rows o, metadata_leaves(o.metadata) AS l
          GROUP BY 1, 2, 3) d
    WHERE m.bank_id = d.bank_id AND m.key = d.key AND m.value = d.value;
    RETURN NULL;
END $$;

-- Row-level, as 0004's update trigger: a transition-table trigger cannot name its columns and
-- would run for every last_accessed_at touch; the memory stream's finalise rewrites metadata.
CREATE FUNCTION metadata_values_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE metadata_values m SET memories = greatest(m.memories - 1, 0)
    FROM metadata_leaves(OLD.metadata) AS l
    WHERE m.bank_id = OLD.bank_id AND m.key = l.key AND m.value = l.value;
    INSERT INTO metadata_values AS m (bank_id, key, value, memories)
    SELECT NEW.bank_id, l.key, l.value, 1 FROM metadata_leaves(NEW.metadata) AS l
    ORDER BY 2, 3
    ON CONFLICT (bank_id, key, value) DO UPDATE SET memories = m.memories + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER metadata_values_insert AFTER INSERT ON memory_units
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION metadata_values_insert();
CREATE TRIGGER metadata_values_delete AFTER DELETE ON memory_units
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION metadata_values_delete();
CREATE TRIGGER metadata_values_update AFTER UPDATE OF metadata ON memory_units
    FOR EACH ROW WHEN (OLD.metadata IS DISTINCT FROM NEW.metadata)
    EXECUTE FUNCTION metadata_values_update();

-- Existing memories.
INSERT INTO metadata_values (bank_id, key, value, memories)
SELECT u.bank_id, l.key, l.value, count(*)
FROM memory_units u, metadata_leaves(u.metadata) AS l
GROUP BY 1, 2, 3;
