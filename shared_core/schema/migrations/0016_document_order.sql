-- 0016: a memory's neighbours in its document, in retain order, are one short index range
-- (bank_id, document_id, id). The graph's second round (recall/arms/graph.py NEIGHBOURS) reads
-- the memories just before and after each seed in its document; with (bank_id, document_id)
-- alone the planner walked the primary key (bank_id, id) from the seed and filtered on the
-- document, which for a seed at either end of its document reads the rest of the bank
-- (measured: 1,150 rows removed by the filter for one seed in a 1,200-memory bank; a 100k
-- bank would read up to 100k). The new index serves every query the old one did (its leading
-- columns), so the old one goes: retain keeps one index to maintain, not two.
CREATE INDEX memory_units_bank_document_order ON memory_units (bank_id, document_id, id);
DROP INDEX memory_units_bank_document;
