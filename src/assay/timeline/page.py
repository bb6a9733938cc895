"""The timeline page: server-rendered HTML of what the ledger holds, refreshed live.

``timeline_routes`` gives the daemon its ``/`` page and ``/timeline/head`` (the ledger's
size and root, which the page's script polls to know when to re-read itself). The ledger's
full verification runs in a worker thread, at most once per ledger size.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from assay.ledger.ledger import Ledger
from assay.timeline.view import DEFAULT_WINDOW, build_timeline

_templates = Environment(
    loader=PackageLoader("assay.timeline", "templates"),
    autoescape=select_autoescape(["html"]),
)


class LedgerCheck:
    """The last verification of the ledger, redone only when the ledger has grown."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._lock = threading.Lock()
        self._result: tuple[int, bool, str] | None = None

    def current(self) -> tuple[bool, str]:
        """(ok, description) for the ledger as it is now."""
        size = self.ledger.size
        with self._lock:
            if self._result is None or self._result[0] != size:
                report = self.ledger.verify()
                self._result = (size, report.ok, report.describe())
            return self._result[1], self._result[2]


def render_timeline(ledger: Ledger, *, app: str, check: LedgerCheck | None = None) -> str:
    """The page as HTML, built from the ledger's latest entries."""
    verification = check.current() if check is not None else None
    timeline = build_timeline(ledger, window=DEFAULT_WINDOW, verification=verification)
    return _templates.get_template("timeline.html").render(t=timeline, app=app)


def timeline_routes(
    ledger: Ledger, *, app: str, guard: Callable[[Request], object] | None = None
) -> list[Route]:
    """``GET /`` (the page) and ``GET /timeline/head`` (size and root, for live updates);
    ``guard`` is called first with each request and may raise to refuse it."""
    check = LedgerCheck(ledger)

    async def page(request: Request) -> HTMLResponse:
        if guard is not None:
            guard(request)
        html = await asyncio.to_thread(render_timeline, ledger, app=app, check=check)
        return HTMLResponse(html)

    async def head(request: Request) -> JSONResponse:
        if guard is not None:
            guard(request)
        tree = await asyncio.to_thread(ledger.tree_head)
        return JSONResponse({"size": tree.size, "root": tree.root})

    return [
        Route("/", page, methods=["GET"], include_in_schema=False),
        Route("/timeline/head", head, methods=["GET"], include_in_schema=False),
    ]
