-- 0010: conversation context at retain (issue 11.4). A memory of a document is indexed with a
-- bounded snippet of the memory before it in that document (shared_core/retain/neighbours.py):
-- the snippet is kept here, next to the text recall returns, and enters search_vector at weight
-- 'D'. The bank_stats / term_stats triggers of 0004 read search_vector, so the statistics stay
-- exact with no change here. NULL: no context (no document, first of its document, or
-- EngineConfig(retain_context="none")); rows written before this migration keep NULL.
ALTER TABLE memory_units ADD COLUMN IF NOT EXISTS index_context text;
