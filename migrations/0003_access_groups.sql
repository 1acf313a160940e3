-- Access groups (rag_rlm.access): a document's groups on its record, and on every chunk row so
-- that a search filters inside the vector scan. Collections created from now on get the column
-- and its index with their chunk table (PgVectorStore); this adds them to the existing ones.
-- ADD COLUMN with a constant default rewrites no rows.
ALTER TABLE rag_rlm_documents ADD COLUMN IF NOT EXISTS groups text[] NOT NULL DEFAULT '{}';

DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT id FROM rag_rlm_collections LOOP
        IF to_regclass(format('rag_rlm_chunks_%s', c.id)) IS NOT NULL THEN
            EXECUTE format('ALTER TABLE %I ADD COLUMN IF NOT EXISTS groups text[] NOT NULL DEFAULT ''{}''',
                           'rag_rlm_chunks_' || c.id);
            EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING gin (groups)',
                           'rag_rlm_chunks_' || c.id || '_groups', 'rag_rlm_chunks_' || c.id);
        END IF;
    END LOOP;
END
$$;
