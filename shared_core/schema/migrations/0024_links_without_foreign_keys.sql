-- 0024: a memory's links and mentions go with it by a statement-level trigger, not by foreign
-- keys. The four foreign keys of memory_links (from, to) and unit_entities (unit, entity) had
-- one job, ON DELETE CASCADE; every row a retain wrote was checked by them, one lookup per key,
-- each locking the referenced row FOR KEY SHARE. For memory_links that row is an old memory (a
-- retain's ~34 links point to old ones): the lock changes the old memory's heap page, and
-- after a checkpoint that page is logged whole. Measured on the 100k bench bank
-- (docs/benchmarks/fk19_links.md): the links' WAL after a checkpoint, server CPU of the checks.
--
-- What the keys guaranteed, and what does now:
-- * A memory deleted takes its links (either end) and its mentions: memory_units_links_delete
--   below, in the deleting statement, for every writer (delete by id, by document, a stream's
--   delete, a document replaced, a bank dropped: the banks cascade deletes the memories, whose
--   statement fires this trigger), as 0004's and 0022's delete triggers do for their rows.
-- * An entity is only ever deleted with its bank; its mentions go with the bank's memories.
-- * A link or mention names a memory of the retain's own transaction (from, unit) or one it
--   read (to: a neighbour; a causal reference is checked by retain/links.py CHECK_REFERENCED).
--   The race a key closed: a memory deleted between a retain's neighbour search and its commit.
--   With the key the retain failed (a foreign-key violation); now its link to that memory
--   stays, pointing nowhere. Harmless: every reader joins memory_units (the graph arm's final
--   select, the temporal hop before its LIMIT, recall_details), ids are UUIDv7 never reused,
--   and the link goes when the retain's own memory is deleted. Mentions cannot dangle so: their
--   unit is the retain's own new memory, their entity goes only with the bank, and a bank
--   delete waits for (or fails) a retain through memory_units' own key to banks, kept.
-- Existing rows are consistent (the keys held until now): nothing to back-fill.
ALTER TABLE memory_links
    DROP CONSTRAINT memory_links_bank_id_from_id_fkey,
    DROP CONSTRAINT memory_links_bank_id_to_id_fkey;
ALTER TABLE unit_entities
    DROP CONSTRAINT unit_entities_bank_id_unit_id_fkey,
    DROP CONSTRAINT unit_entities_bank_id_entity_id_fkey;

-- Each end by its own index (memory_links_from / _to, unit_entities' primary key); the planner
-- knows the transition table's row count: index probes for a few memories, a hash join for a
-- bank.
CREATE FUNCTION memory_units_links_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_links l USING old_rows o WHERE l.bank_id = o.bank_id AND l.from_id = o.id;
    DELETE FROM memory_links l USING old_rows o WHERE l.bank_id = o.bank_id AND l.to_id = o.id;
    DELETE FROM unit_entities ue USING old_rows o WHERE ue.bank_id = o.bank_id AND ue.unit_id = o.id;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_units_links_delete AFTER DELETE ON memory_units
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION memory_units_links_delete();
