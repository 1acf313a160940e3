"""The ingest flow as a library: discover -> parse -> chunk -> split sentences -> embed -> write.

The `ingest` command (the top-level `ingest` package) and the HTTP upload endpoint both run it.
"""
