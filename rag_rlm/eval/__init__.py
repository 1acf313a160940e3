"""`rag-rlm eval`: measure flat retrieval against the recursive controller on a question set
with gold answers and gold supporting documents."""
