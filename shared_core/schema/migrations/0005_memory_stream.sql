-- 0005: the memory stream, a core feature (used by the time-weighted retriever).
--
-- A bank's stream is its memories in the order they were added, numbered 0, 1, 2, ...
-- (LangChain's ``buffer_idx``); a memory split into several units at retain gives them one
-- position. Time-weighted scoring reads the last positions and ``last_accessed_at``, which
-- recall refreshes. The position is a column (not metadata), so the last k entries are one
-- backward index scan and touching entries by position is an index lookup.
ALTER TABLE memory_units ADD COLUMN stream_idx bigint CHECK (stream_idx >= 0);
CREATE INDEX memory_units_bank_stream ON memory_units (bank_id, stream_idx)
    WHERE stream_idx IS NOT NULL;

-- Streams written before 0005 kept the position in metadata ("buffer_idx", beside the
-- time-weighted retriever's "__tw" record).
UPDATE memory_units
SET stream_idx = (metadata->>'buffer_idx')::bigint, metadata = metadata - 'buffer_idx'
WHERE metadata ? '__tw' AND jsonb_typeof(metadata->'buffer_idx') = 'number';
