-- 0022: the keyword arm's postings: one row per (memory, lexeme of its search vector) holding
-- what Okapi BM25 reads of the memory, so ranking a query's matches reads these rows (an
-- index-only scan of the query's lexemes) instead of every matching memory's heap page and
-- search vector. Before, at 100k memories the keyword statement scored the ~2,250 memories one
-- bench query matches by reading each one's heap page (a bitmap scan of ~2,200 pages), copying
-- its search vector and cutting the query's lexemes out of it (two ts_delete): ~8 ms of server
-- CPU, a third of the recall's (docs/benchmarks/kw_postings.md).
--
-- dl is the memory's length(search_vector) (its distinct lexemes, BM25's document length);
-- n_plain the lexeme's positions outside the neighbour context (weight 'D'), 1 for a lexeme
-- stored without positions; n_ctx its positions in the neighbour context. The arm's tf is
-- n_plain, plus bm25_context_weight once per n_ctx position, added in that order: the order
-- the positions of the search vector are summed in, since retain concatenates the neighbour
-- context (the only 'D' part) last (retain/plan.py), so its positions follow every other.
--
-- Statement-level triggers keep the rows exact for every writer, as term_stats' do (0004):
-- retain, delete, document replacement, cascades; a user's own UPDATE of a search vector
-- rewrites that memory's rows. No foreign key: a per-row check would cost every retain one
-- lookup per lexeme, and the delete trigger removes a memory's rows with it.
CREATE TABLE memory_postings (
    bank_id text    NOT NULL,
    lexeme  text    NOT NULL,
    unit_id uuid    NOT NULL,
    dl      integer NOT NULL,
    n_plain integer NOT NULL,
    n_ctx   integer NOT NULL
);

-- A memory's postings, from its search vector (the triggers and the backfill below).
CREATE FUNCTION memory_postings_of(bank text, unit uuid, sv tsvector)
RETURNS TABLE (bank_id text, lexeme text, unit_id uuid, dl integer, n_plain integer, n_ctx integer)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT bank, v.lexeme, unit, length(sv),
           CASE WHEN coalesce(cardinality(v.weights), 0) = 0 THEN 1
                ELSE cardinality(array_remove(v.weights, 'D')) END,
           coalesce(cardinality(v.weights) - cardinality(array_remove(v.weights, 'D')), 0)
    FROM unnest(sv) v
$$;

-- Existing memories (the 100k bench bank: 1.7M postings, 150 MB + 140 MB of index; the whole
-- migration took 6.5 s at load 2.7, docs/benchmarks/kw_postings.md).
INSERT INTO memory_postings
SELECT p.* FROM memory_units u, memory_postings_of(u.bank_id, u.id, u.search_vector) p;

-- The arm reads (bank, lexeme) ranges; INCLUDE makes that an index-only scan.
ALTER TABLE memory_postings ADD PRIMARY KEY (bank_id, lexeme, unit_id) INCLUDE (dl, n_plain, n_ctx);
ANALYZE memory_postings;

CREATE FUNCTION memory_postings_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO memory_postings
    SELECT p.* FROM new_rows n, memory_postings_of(n.bank_id, n.id, n.search_vector) p;
    RETURN NULL;
END $$;

-- Each deleted memory's lexemes as one array probe of the primary key: joining its lexemes
-- unnested instead took 1.25 s for 2,000 memories at 100k (a hash join over the whole table)
-- against 0.30 s (0.2 ms for one memory either way).
CREATE FUNCTION memory_postings_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_postings p
    USING old_rows o
    WHERE p.bank_id = o.bank_id AND p.unit_id = o.id
      AND p.lexeme = ANY(tsvector_to_array(o.search_vector));
    RETURN NULL;
END $$;

-- Row-level, as 0004's statistics update: a transition-table trigger cannot name columns.
CREATE FUNCTION memory_postings_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_postings
    WHERE bank_id = OLD.bank_id AND unit_id = OLD.id
      AND lexeme = ANY(tsvector_to_array(OLD.search_vector));
    INSERT INTO memory_postings
    SELECT * FROM memory_postings_of(NEW.bank_id, NEW.id, NEW.search_vector);
    RETURN NULL;
END $$;

CREATE TRIGGER memory_postings_insert AFTER INSERT ON memory_units
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION memory_postings_insert();
CREATE TRIGGER memory_postings_delete AFTER DELETE ON memory_units
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION memory_postings_delete();
CREATE TRIGGER memory_postings_update AFTER UPDATE OF search_vector ON memory_units
    FOR EACH ROW WHEN (OLD.search_vector IS DISTINCT FROM NEW.search_vector)
    EXECUTE FUNCTION memory_postings_update();
