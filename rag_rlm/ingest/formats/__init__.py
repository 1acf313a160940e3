"""The parsers of the formats beyond text, HTML, PDF, DOCX and JSONL, one module per family
(sheets, slides, mail, books, office documents, reStructuredText). `rag_rlm.ingest.parsers`
registers them in `PARSERS` and stays the one entry point (`parse_file`); `base` holds what every
parser shares, so that a format module never imports `parsers` at load time."""
