-- 0008: an index for metadata filters. Filters (PGVector's dict syntax, LlamaIndex's
-- MetadataFilters) compile to jsonpath tests, `metadata @? '$."team" ? (@ == "er")'`
-- (shared_core/recall/filters.py), which a GIN index with jsonb_path_ops serves: a selective
-- filter on a large bank becomes a bitmap scan of the matching rows instead of a walk of the
-- HNSW graph that discards most of what it visits. jsonb_path_ops rather than jsonb_ops: it
-- indexes path+value hashes only (smaller, faster for equality); key-existence tests
-- ($exists) are rare and cheap enough as a filter over the bank's rows.
CREATE INDEX memory_units_metadata_gin ON memory_units USING gin (metadata jsonb_path_ops);
