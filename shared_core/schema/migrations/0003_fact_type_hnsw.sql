-- 0003: one partial HNSW index per fact type. The semantic arm runs one ordered scan per fact
-- type; on a shared index a rare type (few observations among 100k facts) made pgvector's
-- iterative scan walk thousands of tuples to find none. Partial indexes per type, not per
-- bank, keep planning cheap at thousands of banks.
CREATE INDEX memory_units_embedding_world ON memory_units
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
    WHERE fact_type = 'world';
CREATE INDEX memory_units_embedding_experience ON memory_units
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
    WHERE fact_type = 'experience';
CREATE INDEX memory_units_embedding_observation ON memory_units
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
    WHERE fact_type = 'observation';
