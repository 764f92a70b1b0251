-- 0004: per-bank statistics that recall reads instead of counting at query time, and inline
-- embeddings.
--
-- bank_stats holds each bank's memory count and total search_vector length (distinct lexemes
-- per memory, summed); term_stats each lexeme's document frequency in the bank. The keyword
-- arm reads them for its IDF (BM25, and dropping terms in a large share of the bank), the
-- graph arm for its entity IDF. Counting at query time cost 16 ms per recall at 100k
-- memories (measured); a table-wide pg_stats estimate knows nothing about one bank.
--
-- Statement-level triggers with transition tables keep both exact for every writer (retain,
-- delete, document replacement, cascades), aggregated per statement rather than per row.
-- Deletes only UPDATE: when a whole bank is dropped, its stats rows may already be gone to
-- the same cascade, and an upsert would try to re-create them. A lexeme whose df falls to 0
-- keeps its row (it means "absent"; it is reused if the lexeme comes back).
-- Writers to one bank serialise on its bank_stats row; retain and delete take that lock
-- first, before any other row lock, so two writers cannot deadlock.

CREATE TABLE bank_stats (
    bank_id  text PRIMARY KEY REFERENCES banks (bank_id) ON DELETE CASCADE,
    memories bigint NOT NULL DEFAULT 0 CHECK (memories >= 0),
    lexemes  bigint NOT NULL DEFAULT 0 CHECK (lexemes >= 0)
);

CREATE TABLE term_stats (
    bank_id text NOT NULL REFERENCES banks (bank_id) ON DELETE CASCADE,
    lexeme  text NOT NULL,
    df      integer NOT NULL CHECK (df >= 0),
    PRIMARY KEY (bank_id, lexeme)
);

CREATE FUNCTION memory_units_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO bank_stats AS s (bank_id, memories, lexemes)
    SELECT bank_id, count(*), sum(length(search_vector)) FROM new_rows
    GROUP BY bank_id ORDER BY bank_id
    ON CONFLICT (bank_id) DO UPDATE
        SET memories = s.memories + excluded.memories, lexemes = s.lexemes + excluded.lexemes;
    INSERT INTO term_stats AS t (bank_id, lexeme, df)
    SELECT n.bank_id, x.lexeme, count(*)
    FROM new_rows n, unnest(tsvector_to_array(n.search_vector)) AS x(lexeme)
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (bank_id, lexeme) DO UPDATE SET df = t.df + excluded.df;
    RETURN NULL;
END $$;

CREATE FUNCTION memory_units_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bank_stats s
    SET memories = greatest(s.memories - d.n, 0), lexemes = greatest(s.lexemes - d.l, 0)
    FROM (SELECT bank_id, count(*) AS n, sum(length(search_vector)) AS l FROM old_rows
          GROUP BY bank_id) d
    WHERE s.bank_id = d.bank_id;
    UPDATE term_stats t SET df = greatest(t.df - d.n, 0)
    FROM (SELECT o.bank_id, x.lexeme, count(*) AS n
          FROM old_rows o, unnest(tsvector_to_array(o.search_vector)) AS x(lexeme)
          GROUP BY 1, 2) d
    WHERE t.bank_id = d.bank_id AND t.lexeme = d.lexeme;
    RETURN NULL;
END $$;

-- Nothing in the library rewrites a memory's text today; this keeps the statistics true if a
-- user's own UPDATE does. Row-level, because a transition-table trigger cannot name columns
-- and would fire for every last_accessed_at touch.
CREATE FUNCTION memory_units_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE bank_stats SET lexemes = greatest(lexemes - length(OLD.search_vector)
                                             + length(NEW.search_vector), 0)
    WHERE bank_id = NEW.bank_id;
    UPDATE term_stats SET df = greatest(df - 1, 0)
    WHERE bank_id = OLD.bank_id AND lexeme = ANY(tsvector_to_array(OLD.search_vector));
    INSERT INTO term_stats AS t (bank_id, lexeme, df)
    SELECT NEW.bank_id, x.lexeme, 1 FROM unnest(tsvector_to_array(NEW.search_vector)) AS x(lexeme)
    ORDER BY 2
    ON CONFLICT (bank_id, lexeme) DO UPDATE SET df = t.df + 1;
    RETURN NULL;
END $$;

CREATE TRIGGER memory_units_stats_insert AFTER INSERT ON memory_units
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION memory_units_stats_insert();
CREATE TRIGGER memory_units_stats_delete AFTER DELETE ON memory_units
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION memory_units_stats_delete();
CREATE TRIGGER memory_units_stats_update AFTER UPDATE OF search_vector ON memory_units
    FOR EACH ROW WHEN (OLD.search_vector IS DISTINCT FROM NEW.search_vector)
    EXECUTE FUNCTION memory_units_stats_update();

-- Existing memories.
INSERT INTO bank_stats (bank_id, memories, lexemes)
SELECT bank_id, count(*), sum(length(search_vector)) FROM memory_units GROUP BY bank_id;
INSERT INTO term_stats (bank_id, lexeme, df)
SELECT u.bank_id, x.lexeme, count(*)
FROM memory_units u, unnest(tsvector_to_array(u.search_vector)) AS x(lexeme)
GROUP BY 1, 2;

-- Keep embeddings in the row. pgvector's default (EXTERNAL) moves a 384-d vector (1.5 kB) out
-- to TOAST once the row passes ~2 kB, and every arm that computes a similarity then reads it
-- back through the TOAST index: 3 extra page reads per candidate (measured at 100k memories:
-- 130 MB of TOAST for 105 MB of table). MAIN still moves it out as a last resort, so large
-- dimensions keep working. Applies to rows written from now on.
ALTER TABLE memory_units ALTER COLUMN embedding SET STORAGE MAIN;
