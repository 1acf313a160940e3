"""The `ingest` CLI: discover -> parse -> chunk -> hash -> embed in batches -> upsert."""
