"""The timeline page: server-rendered HTML of what the ledger holds, refreshed live.

``timeline_routes`` gives the daemon its ``/`` page and ``/timeline/head`` (the ledger's
size, root and the size the last check covered, which the page's script polls to know when
to re-read itself). The ledger's full verification runs in the background (``LedgerCheck``).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse
from starlette.routing import Route

from assay.clock import SYSTEM_CLOCK, Clock
from assay.errors import AssayError
from assay.ledger.ledger import Ledger
from assay.redaction import Redaction
from assay.timeline.view import DEFAULT_WINDOW, build_timeline

_templates = Environment(
    loader=PackageLoader("assay.timeline", "templates"),
    autoescape=select_autoescape(["html"]),
)
# A value the page shows as it was recorded (a fire's arguments, a condition's threshold), as
# compact JSON cut to a summary's length: one fire with a 2 MB argument made a 2 MB page.
_templates.filters["summary"] = lambda value: Redaction.none().summarize((), value)


class LedgerCheck:
    """The ledger's full verification, for the page: run in a background thread, so that a
    page waits for it at most ``wait_s``, one at a time, and again only once the ledger has
    grown and the gap since the last one has passed (``MIN_GAP_S``, or four times as long as
    that one took). A full check reads every entry (seconds for a few hundred thousand), and a
    page on a busy daemon re-reads itself every time the ledger grows: checked on every read,
    it would take that long to load and keep a core busy for as long as someone watches.
    """

    MIN_GAP_S = 10.0

    def __init__(self, ledger: Ledger, *, clock: Clock = SYSTEM_CLOCK, wait_s: float = 0.5) -> None:
        self.ledger = ledger
        self._clock = clock
        self._wait_s = wait_s
        self._lock = threading.Lock()
        self._finished = threading.Condition(self._lock)
        self._running: int | None = None  # the size being checked
        # The last check that finished: (size checked, ok or None if it could not run, text).
        self._last: tuple[int, bool | None, str] | None = None
        self._next_start = float("-inf")

    def current(self, wait_s: float | None = None) -> tuple[bool | None, str, int | None]:
        """(ok, description, size checked) of the last check that finished, starting one if
        due and waiting up to ``wait_s`` (default: the one given) for one running; ``ok`` is
        ``None`` until a check has finished, or when it could not run."""
        size = self.ledger.tree_head().size  # other daemons' entries included
        wait = self._wait_s if wait_s is None else wait_s
        with self._lock:
            self._start_if_due(size)
            if self._running is not None:
                self._finished.wait_for(lambda: self._running is None, timeout=wait)
            if self._last is None:
                return None, f"checking the ledger's {size:,} entries…", None
            checked, ok, text = self._last
            if size > checked:
                text += f" · {size - checked:,} entries since, not yet checked"
            return ok, text, checked

    def poll(self, size: int) -> int | None:
        """Start a check if one is due for a ledger of ``size`` entries, without waiting for
        it; the size the last finished check covered (``None`` before one finished)."""
        with self._lock:
            self._start_if_due(size)
            return self._last[0] if self._last is not None else None

    def _start_if_due(self, size: int) -> None:
        """Start checking in the background if the ledger has grown since the last check
        and the gap after it has passed (lock held)."""
        checked = self._last[0] if self._last is not None else None
        due = self._clock.monotonic() >= self._next_start
        if self._running is None and checked != size and due:
            self._running = size
            thread = threading.Thread(target=self._check, name="assay ledger check")
            thread.daemon = True
            thread.start()

    def _check(self) -> None:
        started = self._clock.monotonic()
        ok: bool | None
        with self._lock:
            assert self._running is not None
            checked = self._running
        try:
            report = self.ledger.verify()
            ok, text = report.ok, report.describe()
            if report.ok:
                checked = report.size  # entries stored since it started included
        except AssayError as error:  # the ledger is closing, or cannot be read
            ok, text = None, f"the ledger could not be checked: {error}"
        took = self._clock.monotonic() - started
        with self._lock:
            self._last = (checked, ok, text)
            self._running = None
            self._next_start = self._clock.monotonic() + max(self.MIN_GAP_S, 4 * took)
            self._finished.notify_all()


def render_timeline(ledger: Ledger, *, app: str, check: LedgerCheck | None = None) -> str:
    """The page as HTML, built from the ledger's latest entries."""
    verification = None
    checked = None
    if check is not None:
        ok, text, checked = check.current()
        verification = (ok, text)
    timeline = build_timeline(ledger, window=DEFAULT_WINDOW, verification=verification)
    return _templates.get_template("timeline.html").render(t=timeline, app=app, checked=checked)


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
        checked = check.poll(tree.size)
        return JSONResponse({"size": tree.size, "root": tree.root, "checked": checked})

    return [
        Route("/", page, methods=["GET"], include_in_schema=False),
        Route("/timeline/head", head, methods=["GET"], include_in_schema=False),
    ]
