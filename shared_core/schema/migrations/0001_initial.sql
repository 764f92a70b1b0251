-- 0001: the whole memory schema. Every table carries bank_id first in its key: it is the tenant
-- and the distribution key if the database is later sharded (Citus).
-- {dimension} is the embedding dimension this database was initialised with (one per schema).

CREATE TABLE banks (
    bank_id             text PRIMARY KEY,
    embedding_model     text NOT NULL,
    embedding_dimension integer NOT NULL CHECK (embedding_dimension > 0),
    config              jsonb NOT NULL DEFAULT '{{}}',
    created_at          timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE documents (
    bank_id      text NOT NULL REFERENCES banks (bank_id) ON DELETE CASCADE,
    document_id  text NOT NULL,
    content_hash text,
    metadata     jsonb NOT NULL DEFAULT '{{}}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, document_id)
);

CREATE TABLE chunks (
    bank_id     text NOT NULL REFERENCES banks (bank_id) ON DELETE CASCADE,
    chunk_id    text NOT NULL,
    document_id text,
    chunk_index integer NOT NULL DEFAULT 0,
    text        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, chunk_id),
    FOREIGN KEY (bank_id, document_id) REFERENCES documents (bank_id, document_id) ON DELETE CASCADE
);

CREATE TABLE memory_units (
    bank_id          text NOT NULL REFERENCES banks (bank_id) ON DELETE CASCADE,
    id               uuid NOT NULL,
    text             text NOT NULL,
    context          text,
    embedding        vector({dimension}) NOT NULL,
    fact_type        text NOT NULL CHECK (fact_type IN ('world', 'experience', 'observation')),
    occurred_start   timestamptz,
    occurred_end     timestamptz,
    mentioned_at     timestamptz,
    date_grain       text CHECK (date_grain IN ('second', 'minute', 'hour', 'day', 'week', 'month',
                                                'season', 'quarter', 'year', 'decade')),
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    last_accessed_at timestamptz,
    tags             text[] NOT NULL DEFAULT '{{}}',
    metadata         jsonb NOT NULL DEFAULT '{{}}',
    proof_count      integer NOT NULL DEFAULT 1 CHECK (proof_count >= 1),
    document_id      text,
    chunk_id         text,
    search_vector    tsvector NOT NULL,
    PRIMARY KEY (bank_id, id),
    CHECK (occurred_end IS NULL OR occurred_start IS NULL OR occurred_end >= occurred_start),
    FOREIGN KEY (bank_id, document_id) REFERENCES documents (bank_id, document_id) ON DELETE CASCADE
);

-- One HNSW index for all banks: per-bank partial indexes cost planning time at thousands of
-- banks (the leading implementation's #3485/#4615). Iterative scans keep the bank filter exact.
CREATE INDEX memory_units_embedding_hnsw ON memory_units
    USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64);
CREATE INDEX memory_units_search_vector_gin ON memory_units USING gin (search_vector);
CREATE INDEX memory_units_tags_gin ON memory_units USING gin (tags);
CREATE INDEX memory_units_bank_type_occurred ON memory_units (bank_id, fact_type, occurred_start);
CREATE INDEX memory_units_bank_mentioned ON memory_units (bank_id, mentioned_at);
CREATE INDEX memory_units_bank_document ON memory_units (bank_id, document_id);

CREATE TABLE entities (
    bank_id        text NOT NULL REFERENCES banks (bank_id) ON DELETE CASCADE,
    id             uuid NOT NULL,
    canonical_name text NOT NULL,
    match_key      text NOT NULL,
    label          text,
    mention_count  integer NOT NULL DEFAULT 0,
    first_seen     timestamptz,
    last_seen      timestamptz,
    metadata       jsonb NOT NULL DEFAULT '{{}}',
    PRIMARY KEY (bank_id, id),
    UNIQUE (bank_id, match_key)
);
CREATE INDEX entities_match_key_trgm ON entities USING gin (match_key gin_trgm_ops);

CREATE TABLE unit_entities (
    bank_id   text NOT NULL,
    unit_id   uuid NOT NULL,
    entity_id uuid NOT NULL,
    PRIMARY KEY (bank_id, unit_id, entity_id),
    FOREIGN KEY (bank_id, unit_id) REFERENCES memory_units (bank_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bank_id, entity_id) REFERENCES entities (bank_id, id) ON DELETE CASCADE
);
-- Entity fan-out (entity -> units) as an index-only scan.
CREATE INDEX unit_entities_entity_unit ON unit_entities (bank_id, entity_id, unit_id);

CREATE TABLE memory_links (
    bank_id    text NOT NULL,
    from_id    uuid NOT NULL,
    to_id      uuid NOT NULL,
    link_type  text NOT NULL CHECK (link_type IN ('semantic', 'temporal', 'causes', 'caused_by',
                                                  'enables', 'prevents')),
    weight     real NOT NULL DEFAULT 1.0 CHECK (weight >= 0 AND weight <= 1),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (bank_id, from_id, to_id, link_type),
    CHECK (from_id <> to_id),
    FOREIGN KEY (bank_id, from_id) REFERENCES memory_units (bank_id, id) ON DELETE CASCADE,
    FOREIGN KEY (bank_id, to_id) REFERENCES memory_units (bank_id, id) ON DELETE CASCADE
);
CREATE INDEX memory_links_from ON memory_links (bank_id, from_id, link_type, weight DESC);
CREATE INDEX memory_links_to ON memory_links (bank_id, to_id, link_type, weight DESC);
