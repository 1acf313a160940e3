"""The HTTP server: a Litestar app over the Assistant, and `serve` to run it with uvicorn.

    POST   /v1/ask                                  cited answer (JSON, or SSE when streaming)
    POST   /v1/chat/completions                     OpenAI-compatible chat (stream or not)
    GET    /v1/models                               collections as models
    GET    /v1/collections                          the caller's collections
    POST   /v1/collections/{name}/documents         multipart upload (large: 202 + job)
    GET    /v1/collections/{name}/documents         documents of a collection
    GET    /v1/collections/{name}/documents/{id}    a document's text (citation offsets index into it)
    DELETE /v1/collections/{name}/documents/{id}    delete a document (id may contain '/')
    PATCH  /v1/collections/{name}/documents/{id}    change its access groups ({"groups": [...]})
    GET    /v1/collections/{name}/sources           its folders, Git repositories, web sites (sources.py)
    POST   /v1/collections/{name}/sources           add one (201, a first sync queued)
    GET    /v1/collections/{name}/sources/{source}  one, with its last sync; DELETE removes it
    POST   /v1/collections/{name}/sources/{source}/sync   queue a sync (202 + job)
    GET    /v1/jobs                                 the caller's upload and sync jobs, newest first (?limit=, <= 200)
    GET    /v1/jobs/{id}                            a job's state and progress
    DELETE /v1/jobs/{id}                            cancel a job (queued: at once; running: after
                                                    the document being written, which stays whole)
    GET    /v1/traces/{id}                          call tree of an answer (only to a key covering its access)
    POST   /v1/answers/{trace_id}/feedback          rate an answer up or down, with a comment
    GET    /v1/insights                             what the collection is missing (?collection=&since=)
    GET    /health, /metrics, /schema               health, Prometheus metrics, OpenAPI + docs
"""

from .app import app_from_env, create_app, serve

__all__ = ["app_from_env", "create_app", "serve"]
