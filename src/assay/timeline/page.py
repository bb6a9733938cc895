"""The timeline page: server-rendered HTML of what the ledger holds, refreshed live.

``timeline_routes`` gives the daemon its ``/`` page and ``/timeline/head`` (the ledger's
size, root, and the size the last check covered and when it started, which the page's script
polls to know when to re-read itself). The ledger's full verification runs in the background
(``LedgerCheck``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from assay.errors import LedgerIntegrityError
from assay.ledger.ledger import Ledger
from assay.redaction import Redaction
from assay.timeline.check import LedgerCheck
from assay.timeline.view import DEFAULT_WINDOW, build_timeline

_templates = Environment(
    loader=PackageLoader("assay.timeline", "templates"),
    autoescape=select_autoescape(["html"]),
)
# A value the page shows as it was recorded (a fire's arguments, a condition's threshold), as
# compact JSON cut to a summary's length: one fire with a 2 MB argument made a 2 MB page.
_templates.filters["summary"] = lambda value: Redaction.none().summarize((), value)


def render_timeline(ledger: Ledger, *, app: str, check: LedgerCheck | None = None) -> str:
    """The page as HTML, built from the ledger's latest entries."""
    status = check.current() if check is not None else None
    timeline = build_timeline(ledger, window=DEFAULT_WINDOW, check=status)
    return _templates.get_template("timeline.html").render(t=timeline, app=app)


def timeline_routes(
    ledger: Ledger,
    *,
    app: str,
    guard: Callable[[Request], object] | None = None,
    check: LedgerCheck | None = None,
) -> list[Route]:
    """``GET /`` (the page) and ``GET /timeline/head`` (size and root, for live updates);
    ``guard`` is called first with each request and may raise to refuse it (a 401 or 403
    ``HTTPException`` is answered to a browser as a page saying how to send a token); ``check``
    runs the ledger's full verification (one on the system clock by default)."""
    check = check or LedgerCheck(ledger)

    async def page(request: Request) -> HTMLResponse:
        if guard is not None:
            try:
                guard(request)
            except HTTPException as refusal:
                if refusal.status_code not in (401, 403) or not _wants_html(request):
                    raise
                return _refused(request, refusal)
        html = await asyncio.to_thread(render_timeline, ledger, app=app, check=check)
        return HTMLResponse(html)

    async def head(request: Request) -> JSONResponse:
        if guard is not None:
            guard(request)
        size, root = await asyncio.to_thread(_head, ledger)
        status = check.poll(size)
        return JSONResponse(
            {"size": size, "root": root, "checked": status.size, "checked_at": status.started}
        )

    return [
        Route("/", page, methods=["GET"], include_in_schema=False),
        Route("/timeline/head", head, methods=["GET"], include_in_schema=False),
    ]


def _head(ledger: Ledger) -> tuple[int, str | None]:
    """The ledger's size and root; no root when a stored entry is missing (the page, which
    reads the entries, names it)."""
    try:
        tree = ledger.tree_head()
    except LedgerIntegrityError:
        return ledger.backend.size(), None
    return tree.size, tree.root


_TITLES: Final = {401: "A token is needed", 403: "The token lacks the read scope"}


def _refused(request: Request, refusal: HTTPException) -> HTMLResponse:
    """The page a browser is refused with: what was wrong, and how to send a token."""
    html = _templates.get_template("refused.html").render(
        status=refusal.status_code,
        title=_TITLES[refusal.status_code],
        detail=refusal.detail,
        origin=str(request.base_url).rstrip("/"),
        url=str(request.url.replace(query="")),
    )
    return HTMLResponse(html, status_code=refusal.status_code, headers=refusal.headers)


def _wants_html(request: Request) -> bool:
    """The request accepts HTML by name, as a browser opening a page does (not only by
    ``*/*``, as curl and the page's own script do)."""
    for media_range in request.headers.get("accept", "").split(","):
        media, _, parameters = media_range.partition(";")
        if media.strip().lower() in ("text/html", "application/xhtml+xml"):
            weights = [p.strip() for p in parameters.split(";") if p.strip().startswith("q=")]
            if not weights or _weight(weights[0][2:]) > 0:
                return True
    return False


def _weight(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 1.0
