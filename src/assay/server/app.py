"""``create_app``: the daemon's FastAPI application over a started ``Host``.

The app is thin: routes parse a wire type, call the host and render its answer; errors are
problem+json (``problems``); bearer tokens and scopes are checked per route (``auth``). The
host's lifecycle belongs to whoever made it (``daemon.run``, or a test), so the app can be
served by any ASGI server, with lifespan off.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel

from assay import __version__
from assay.host import Host
from assay.server import actions, ledger, problems, sessions, state
from assay.server.auth import Authenticator, Token
from assay.server.declared import shape_openapi

DESCRIPTION = """Fire actions, observe the application's real state, answer with evidence.

Errors are RFC 9457 `application/problem+json`. 422 means a verification failed (the action
may still have run: see `executed`); 409 a refusal (low confidence, single flight, not
available here), with its figures; 400 bad input. With tokens configured, send
`Authorization: Bearer <secret>`; scopes are read, act, report and admin.
"""


class Health(BaseModel):
    """``GET /healthz``: the daemon is up and which application it hosts."""

    status: str
    app: str
    version: str


def create_app(host: Host, *, tokens: Iterable[Token] = ()) -> FastAPI:
    """The HTTP API of SPEC §9 over ``host`` (already started), guarded by ``tokens``."""
    authenticator = Authenticator(tokens)
    app = FastAPI(
        title="assay",
        version=__version__,
        description=DESCRIPTION,
        docs_url=None,
        redoc_url=None,
    )
    app.state.host = host
    app.state.authenticator = authenticator
    problems.install(app)
    for module in (actions, sessions, state, ledger):
        app.include_router(module.router)

    @app.get("/healthz", response_model=Health, tags=["daemon"], summary="Liveness, no auth")
    async def healthz() -> Health:
        return Health(status="ok", app=host.graph.app, version=__version__)

    shaped: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not shaped:
            document = FastAPI.openapi(app)
            shaped.update(shape_openapi(document, auth=authenticator.enabled))
        return shaped

    app.openapi = openapi  # type: ignore[method-assign]
    return app
