-- 0006: banks of any embedding dimension side by side in one database.
--
-- The embedding column loses its fixed dimension (a typmod-free ``vector``); each bank keeps
-- its model and dimension in ``banks``. HNSW needs a fixed dimension, so the vector indexes
-- become partial expression indexes per dimension, on ``(embedding::vector(d))`` where
-- ``vector_dims(embedding) = d``: one per fact type (the semantic arm scans each type, as
-- 0003) and one for all types (graph seeds, temporal entry points, retain's links). The
-- engine creates a dimension's indexes when it first starts with an embedder of that
-- dimension (shared_core.storage.dimensions; their names say the dimension).
-- Queries name the same expression and predicate (with the dimension inlined), so the
-- planner picks that dimension's index; rows of other dimensions are never compared.
DROP INDEX IF EXISTS memory_units_embedding_hnsw;
DROP INDEX IF EXISTS memory_units_embedding_world;
DROP INDEX IF EXISTS memory_units_embedding_experience;
DROP INDEX IF EXISTS memory_units_embedding_observation;
ALTER TABLE memory_units ALTER COLUMN embedding TYPE vector;
ALTER TABLE memory_units ALTER COLUMN embedding SET STORAGE MAIN;
