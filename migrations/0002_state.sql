-- Small shared state of the app (memo cache entries, answer traces, background jobs),
-- so that several app processes behind a load balancer see the same values.
CREATE TABLE IF NOT EXISTS rag_rlm_state (
    kind        text NOT NULL,
    key         text NOT NULL,
    value       jsonb NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, key)
);
