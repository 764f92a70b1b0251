-- 0002: the effective date of a memory (when it happened, else when it was said), stored and
-- indexed so temporal links and the temporal arm can walk the timeline with an index.
ALTER TABLE memory_units
    ADD COLUMN event_date timestamptz GENERATED ALWAYS AS (coalesce(occurred_start, mentioned_at)) STORED;
CREATE INDEX memory_units_bank_event_date ON memory_units (bank_id, event_date);
