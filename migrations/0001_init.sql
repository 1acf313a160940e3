-- rag-rlm schema: collections and document records. Chunk tables are per collection
-- (rag_rlm_chunks_<collection id>), created by PgVectorStore on a collection's first write,
-- because an HNSW index needs a fixed vector dimension and each collection may use its own
-- embedder.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE IF NOT EXISTS rag_rlm_collections (
    id          serial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    dimension   integer NOT NULL CHECK (dimension > 0),
    version     bigint NOT NULL DEFAULT 0,   -- bumped in the same transaction as every change
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS rag_rlm_documents (
    collection_id  integer NOT NULL REFERENCES rag_rlm_collections (id) ON DELETE CASCADE,
    document_id    text NOT NULL,
    title          text NOT NULL DEFAULT '',
    source         text NOT NULL DEFAULT '',
    content_hash   text NOT NULL,
    chunk_count    integer NOT NULL,
    metadata       jsonb NOT NULL DEFAULT '{}'::jsonb,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (collection_id, document_id)
);
