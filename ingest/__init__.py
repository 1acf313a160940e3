"""The `ingest` CLI; the flow itself lives in `rag_rlm.ingest`."""
