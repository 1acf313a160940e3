"""The Litestar app: `create_app(settings)`, `app_from_env()` for uvicorn workers, and `serve`."""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import os
import sys
from collections.abc import Callable
from typing import Any

import uvicorn
from litestar import Litestar, Router
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import ScalarRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from uvicorn.main import STARTUP_FAILURE

from .. import __version__
from ..config import ENV_PREFIX, Settings
from . import ask, chat, documents, insights, ops, sources, web
from .context import ServerContext, provide_caller, provide_context
from .errors import EXCEPTION_HANDLERS
from .observe import before_send, configure_logging, timing_middleware
from .proxies import ForwardedFor, trusted_networks

log = logging.getLogger("rag_rlm.server")
# uvicorn trusts X-Forwarded-For from 127.0.0.1 by default: off, so `trusted_proxies` alone decides
UVICORN_OPTIONS: dict[str, Any] = {"proxy_headers": False}


def _openapi() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="rag-rlm", version=__version__,
        description="Cited answers over your documents, an OpenAI-compatible chat endpoint, and document management.",
        path="/schema", render_plugins=[ScalarRenderPlugin(), SwaggerRenderPlugin()],
        components=Components(security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}),
        security=[{"bearer": []}],
    )


def create_app(settings: Settings, assistant: Any = None) -> Litestar:
    """The app over `assistant` (built from `settings` when not given; then the app closes it)."""
    owns = assistant is None
    if assistant is None:
        from ..assistant import Assistant

        assistant = Assistant(settings)
    ctx = ServerContext(settings=settings, assistant=assistant, owns_assistant=owns)
    _warn_if_open(settings)
    api = Router("/v1", dependencies={"caller": Provide(provide_caller, sync_to_thread=False)},
                 request_max_body_size=settings.max_body_bytes,
                 route_handlers=[ask.ask, chat.chat_completions, chat.models, documents.list_collections,
                                 documents.get_document, documents.delete_document, documents.update_document,
                                 documents.list_jobs,
                                 documents.get_job, documents.cancel_job, ops.get_trace, sources.list_sources,
                                 sources.add_source, sources.get_source, sources.remove_source,
                                 sources.sync_source, insights.give_feedback, insights.insights])
    # same path as the listing (one route: one OPTIONS handler), with the upload cap
    uploads = Router("/v1", dependencies={"caller": Provide(provide_caller, sync_to_thread=False)},
                     request_max_body_size=settings.max_upload_bytes,
                     route_handlers=[documents.upload_documents, documents.list_documents])
    return Litestar(
        route_handlers=[api, uploads, ops.health, ops.metrics, *web.routes()],
        dependencies={"ctx": Provide(provide_context, sync_to_thread=False)},
        exception_handlers=EXCEPTION_HANDLERS,
        middleware=[DefineMiddleware(ForwardedFor, trusted=trusted_networks(settings.trusted_proxies)),
                    timing_middleware],
        before_send=[before_send],
        state=_state(ctx),
        on_startup=[lambda: ctx.start()],  # jobs left by a stopped server, the source scheduler, pruning
        on_shutdown=[lambda: ctx.close()],
        openapi_config=_openapi(),
        request_max_body_size=settings.max_body_bytes,
        logging_config=None,  # logging is configured by serve(); the library must not hijack it
        debug=False,
    )


def _state(ctx: ServerContext) -> Any:
    from litestar.datastructures import State

    return State({"server": ctx})


def _warn_if_open(settings: Settings) -> None:
    try:
        loopback = ipaddress.ip_address(settings.host).is_loopback
    except ValueError:
        loopback = settings.host == "localhost"
    if not settings.api_keys and not loopback:
        log.warning("no API keys configured and listening beyond loopback: anyone who can reach "
                    "%s:%s can read and change every collection", settings.host, settings.port)


def app_from_env() -> Litestar:
    """Factory for `uvicorn --factory` (several workers each build their own app)."""
    settings = Settings.from_env()
    configure_logging(settings.log_level)
    return create_app(settings)


def settings_to_env(settings: Settings) -> dict[str, str]:
    """The settings as RAG_RLM_* variables, so worker processes rebuild exactly these settings."""
    env = {}
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        if isinstance(value, dict):
            text = ",".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, list):
            text = ",".join(value)
        elif isinstance(value, bool):
            text = "true" if value else "false"
        else:
            text = str(value)
        env[ENV_PREFIX + f.name.upper()] = text
    return env


def serve(settings: Settings, host: str | None = None, port: int | None = None, workers: int = 1,
          ready: Callable[[], None] | None = None) -> None:
    """Serve until stopped. `ready` is called once the socket accepts connections: after the
    models and the store are loaded (one worker), or once the supervisor has bound it (workers,
    which queue connections until one of them takes them)."""
    settings = settings.replace(host=host or settings.host, port=port or settings.port)
    configure_logging(settings.log_level)
    settings = _share_cores(settings, workers)
    common: dict[str, Any] = {"host": settings.host, "port": settings.port, "log_config": None,
                              "log_level": settings.log_level, "timeout_graceful_shutdown": 10, **UVICORN_OPTIONS}
    if workers <= 1:
        server = _Announcing(uvicorn.Config(create_app(settings), **common), ready)
        server.run()
        if not server.started:
            sys.exit(STARTUP_FAILURE)  # as uvicorn.run says it: the port taken, or a failed startup
        return
    os.environ.update(settings_to_env(settings))
    os.environ.pop(ENV_PREFIX + "CONFIG", None)  # already folded into the variables above
    if ready:
        ready()
    uvicorn.run("rag_rlm.server.app:app_from_env", factory=True, workers=workers, **common)


def _share_cores(settings: Settings, workers: int) -> Settings:
    """Many small model passes side by side: `model_lanes` passes of each model in each worker,
    each on its share of the cores (`coalesce.serving_parallelism`)."""
    from ..coalesce import serving_parallelism, use_threads

    lanes, threads = serving_parallelism(settings.model_lanes, workers, settings.max_concurrent_answers)
    pinned = use_threads(threads)
    log.info("models: %d pass(es) of each at once per worker, %s", lanes,
             f"{threads} torch thread(s) each" if pinned else f"torch threads from OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}")
    return settings.replace(model_lanes=lanes)


class _Announcing(uvicorn.Server):
    """A uvicorn server that says when it listens (uvicorn.run has no hook for it)."""

    def __init__(self, config: uvicorn.Config, ready: Callable[[], None] | None):
        super().__init__(config)
        self.ready = ready

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started and self.ready:
            self.ready()
