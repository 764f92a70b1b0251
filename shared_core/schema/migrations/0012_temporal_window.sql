-- 0012: the temporal arm ranks a window holding few memories exactly (shared_core/recall/arms/
-- temporal.py): it finds the window's rows with btrees, not by walking the HNSW graph past the
-- memories outside the window. Memories that began in the window are found through
-- memory_units_bank_type_occurred, memories said in it through memory_units_bank_mentioned;
-- this index finds the rest, the memories that began before the window and span into it. Only
-- memories with a real span (an end after their start) are in it, so it stays small: most
-- memories have one date. occurred_start is included so that the statement's bound on the
-- window's size is an index-only count.
CREATE INDEX IF NOT EXISTS memory_units_bank_spanning ON memory_units (bank_id, occurred_end)
    INCLUDE (occurred_start) WHERE occurred_end > occurred_start;
