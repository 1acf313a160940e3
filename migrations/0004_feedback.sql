-- The question log and the answer ratings (issue 18): what insights report on. A question is
-- kept only while the store_questions setting allows it; both are purged by age
-- (rag-rlm insights purge --older-than 90d).
CREATE TABLE IF NOT EXISTS rag_rlm_questions (
    id          bigserial PRIMARY KEY,
    trace_id    text NOT NULL,
    tenant      text NOT NULL,
    collection  text NOT NULL,          -- the stored (tenant-prefixed) name
    question    text NOT NULL,
    groups      text[] NOT NULL,        -- the asker's access groups
    found       boolean NOT NULL,
    cited       text[] NOT NULL,        -- the cited documents' ids
    embedding   bytea,                  -- float32, the embedder's dimension
    asked_at    timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS rag_rlm_questions_window ON rag_rlm_questions (collection, asked_at);
CREATE INDEX IF NOT EXISTS rag_rlm_questions_age ON rag_rlm_questions (asked_at);

-- One rating per answer per key: the last one counts. `rater` is a hash of the key, never the key.
CREATE TABLE IF NOT EXISTS rag_rlm_feedback (
    trace_id    text NOT NULL,
    rater       text NOT NULL,
    tenant      text NOT NULL,
    collection  text NOT NULL,
    rating      text NOT NULL CHECK (rating IN ('up', 'down')),
    comment     text NOT NULL,
    question    text NOT NULL,
    answer      text NOT NULL,
    citations   jsonb NOT NULL,
    rated_at    timestamptz NOT NULL,
    PRIMARY KEY (trace_id, rater)
);
CREATE INDEX IF NOT EXISTS rag_rlm_feedback_window ON rag_rlm_feedback (collection, rated_at);
