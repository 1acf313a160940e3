"""The web page: `/` serves index.html, `/static/*` its scripts and styles (files inside the
package, nothing to build). The page loads without an API key; it calls the /v1 API itself,
with the key the user typed (kept in the browser's storage)."""

from __future__ import annotations

from pathlib import Path

from litestar import Router, get
from litestar.datastructures import CacheControlHeader
from litestar.response import File
from litestar.static_files import create_static_files_router

STATIC = Path(__file__).resolve().parent / "static"

# Everything the page needs comes from this origin: no inline script, no CDN.
_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


@get("/", include_in_schema=False, sync_to_thread=False)
def index() -> File:
    return File(STATIC / "index.html", content_disposition_type="inline", media_type="text/html; charset=utf-8",
                headers={"Content-Security-Policy": _CSP, "Cache-Control": "no-cache"})


def routes() -> list[Router | object]:
    """The route handlers to register on the app (no auth dependency: the page is public)."""
    static = create_static_files_router(path="/static", directories=[STATIC], name="web_static",
                                        cache_control=CacheControlHeader(no_cache=True))
    return [index, static]
