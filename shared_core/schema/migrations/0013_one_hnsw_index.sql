-- 0013: one HNSW index per embedding dimension, over every fact type; the per-type partial
-- indexes of 0003/0006 are dropped. The semantic arm now runs one scan over the asked types
-- (shared_core/recall/arms/semantic.py) instead of one per type, and a subset of types is
-- ranked like any filter (exactly when few memories match, else by the shared index's
-- iterative scan), so nothing reads the per-type indexes; each memory written paid an HNSW
-- insert into its type's index besides the shared one.
-- Measured at 100k (bench bank, benchmarks/single_retain.py --index-costs, load ~15): one
-- unit INSERT 20.5 ms p50 with every index, 9.4 ms without the world partial index, 0.7 ms
-- without any HNSW index.
DO $$
DECLARE
    name text;
BEGIN
    FOR name IN
        SELECT indexname FROM pg_indexes
        WHERE schemaname = current_schema() AND tablename = 'memory_units'
          AND indexname ~ '^memory_units_embedding_d[0-9]+_(world|experience|observation)$'
    LOOP
        EXECUTE format('DROP INDEX %I', name);
    END LOOP;
END
$$;
