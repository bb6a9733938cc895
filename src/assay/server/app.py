"""``create_app``: the daemon's FastAPI application over a started ``Host``.

The app is thin: routes parse a wire type, call the host and render its answer; errors are
problem+json (``problems``); bearer tokens and scopes are checked per route (``auth``). The
host's lifecycle belongs to whoever made it (``daemon.run``, or a test), so the app can be
served by any ASGI server, with lifespan off.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any, Final

from fastapi import FastAPI, Request
from pydantic import BaseModel, Field
from starlette import types as asgi
from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, Response

from assay import __version__
from assay.host import Host
from assay.host.wire import VerifyRequest
from assay.server import actions, ledger, problems, sessions, state
from assay.server import workflows as workflow_routes
from assay.server.auth import Authenticator, authorize
from assay.server.config import DEFAULT_MAX_BODY_BYTES
from assay.server.declared import declare_application, shape_openapi
from assay.server.hot import FIRE_PATH, PATH, serve_fire, serve_verify
from assay.server.query import reject_query
from assay.server.tokens import Scope, Token
from assay.timeline import timeline_routes
from assay.workflow.service import Workflows

DESCRIPTION = """Fire actions, observe the application's real state, answer with evidence.

Errors are RFC 9457 `application/problem+json`. 422 means a verification failed (the action
may still have run: see `executed`); 409 a refusal (low confidence, single flight, not
available here), with its figures; 400 bad input. With tokens configured, send
`Authorization: Bearer <secret>`; scopes are read, act, report and admin.
"""


class Health(BaseModel):
    """``GET /healthz``: the daemon is up and which application it hosts; ``status`` is
    ``ok``, or ``evidence-stopped`` (503) once its ledger failed and it refuses to act."""

    status: str
    app: str
    version: str
    error: str | None = Field(
        default=None, description="evidence-stopped: the failure, and that a restart is needed"
    )


class Daemon(FastAPI):
    """The daemon's FastAPI app; ``POST /v1/verify`` and ``POST /v1/actions``, its hottest
    routes, are answered ahead of FastAPI's middleware and router (``hot``), with the
    same answers. A request body over ``state.max_body_bytes`` is refused with a 413
    problem; a request the daemon is stopped in the middle of (its task cancelled) is
    answered 503, not the server's 500."""

    async def __call__(self, scope: asgi.Scope, receive: asgi.Receive, send: asgi.Send) -> None:
        if scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        receive = _limited(receive, self.state.max_body_bytes)
        started = False

        async def sending(message: asgi.Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            if scope["method"] == "POST" and scope["path"] in _HOT:
                scope["app"] = self
                await _HOT[scope["path"]](scope, receive, sending)
            else:
                await super().__call__(scope, receive, sending)
        except asyncio.CancelledError:
            if started:
                raise  # half answered: the server closes the connection
            # Answered, the request ends here: the server neither logs a traceback for it
            # nor answers 500 in its place.
            with contextlib.suppress(Exception):  # the client may be gone already
                await _STOPPED(scope, receive, send)


_STOPPED: Final = problems.problem_response(
    None,
    503,
    "daemon-stopped",
    "Daemon stopped",
    "the daemon stopped before this request was answered; what it did until then is in the "
    "ledger: ask GET /v1/transitions/{id} or the run once the daemon is back",
    headers={"Retry-After": "1"},
)


_HOT: Final = {PATH: serve_verify, FIRE_PATH: serve_fire}


def _limited(receive: asgi.Receive, limit: int) -> asgi.Receive:
    """``receive`` raising ``HTTPException(413)`` once the body passes ``limit`` bytes; the
    route reading it answers with that problem (``problems``) and records nothing."""
    size = 0

    async def limited() -> asgi.Message:
        nonlocal size
        message = await receive()
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > limit:
                raise HTTPException(413, "Content Too Large")
        return message

    return limited


def _timeline_guard(request: Request) -> None:
    """The timeline's routes need the read scope and take no query parameters."""
    authorize(request, Scope.READ)
    if request.scope.get("query_string"):
        reject_query(request, frozenset())


def create_app(
    host: Host,
    *,
    tokens: Iterable[Token] = (),
    workflows: Workflows | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """The HTTP API of SPEC §9 over ``host`` (already started), guarded by ``tokens``, with
    the timeline page at ``/``, ``workflows`` runnable by name, and request bodies over
    ``max_body_bytes`` refused with 413."""
    authenticator = Authenticator(tokens)
    app = Daemon(
        title="assay",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
        redirect_slashes=False,  # /v1/verify/ is an unknown path (404), not a redirect
    )
    app.state.host = host
    app.state.authenticator = authenticator
    app.state.workflows = workflows
    app.state.max_body_bytes = max_body_bytes
    problems.install(app)
    app.include_router(actions.lean)
    for module in (actions, sessions, state, ledger, workflow_routes):
        app.include_router(module.router)
    app.router.routes.extend(
        timeline_routes(host.ledger, app=host.graph.app, guard=_timeline_guard)
    )

    @app.get(
        "/healthz",
        response_model=Health,
        responses={503: {"model": Health, "description": "Evidence stopped: restart it"}},
        tags=["daemon"],
        summary="Liveness, no auth",
    )
    async def healthz() -> Response:
        failure = host.evidence.failure
        if failure is None:
            health = Health(status="ok", app=host.graph.app, version=__version__)
            return JSONResponse(health.model_dump())
        # It refuses every action and verify until restarted: not a daemon to route to.
        stopped = Health(
            status="evidence-stopped", app=host.graph.app, version=__version__, error=str(failure)
        )
        return JSONResponse(stopped.model_dump(), status_code=503)

    shaped: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not shaped:
            document = FastAPI.openapi(app)
            # POST /v1/verify reads its body itself; its schema is declared here.
            schemas = document.setdefault("components", {}).setdefault("schemas", {})
            schemas["VerifyRequest"] = VerifyRequest.model_json_schema(
                ref_template="#/components/schemas/{model}"
            )
            shape_openapi(document, auth=authenticator.enabled)
            shaped.update(declare_application(document, pages=list(host.graph.pages)))
        return shaped

    app.openapi = openapi  # type: ignore[method-assign]
    return app
