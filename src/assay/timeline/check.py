"""The ledger's full verification, for the timeline page: run in the background, again when
the ledger grows and at a bounded interval when it does not, and shown with when it ran.

A full check reads and hashes every entry: about 30 µs of CPU per entry (3 s for 100,000
entries on the development machine), so it cannot run on every read of a page that re-reads
itself whenever the ledger grows. But a stored entry can be changed without the ledger
growing (an UPDATE in SQLite or PostgreSQL, by someone with access to the database), and the
ledger offers no signal that it was: so a check stands only for the moment it ran, the page
says which moment that was, and a check is run again after ``RECHECK_S`` or ``RECHECK_FACTOR``
times as long as the last one took, whichever is longer, while someone watches.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

from assay.clock import SYSTEM_CLOCK, Clock
from assay.errors import AssayError
from assay.ledger.ledger import Ledger


@dataclass(frozen=True, slots=True)
class CheckStatus:
    """The last full check as of ``now``: ``ok`` (``None`` before one finished, or when it
    could not run), ``text`` (the report's line, or why it could not run), the ``size`` it
    covered, the time it started (``at``, UTC) and how many checks have finished
    (``number``); ``size`` and ``at`` are ``None`` before the first one finished."""

    ok: bool | None
    text: str
    size: int | None
    at: datetime | None
    number: int
    now: datetime

    @property
    def started(self) -> str | None:
        """When the check started, as RFC 3339 UTC (``None`` before one finished)."""
        return None if self.at is None else self.at.isoformat().replace("+00:00", "Z")

    @property
    def when(self) -> str:
        """When the check ran, for a person: ``at 10:41:03 UTC``, with the date unless it
        ran today (UTC); empty before one finished."""
        if self.at is None:
            return ""
        shown = "%H:%M:%S" if self.at.date() == self.now.date() else "%Y-%m-%d %H:%M:%S"
        return f"at {self.at.strftime(shown)} UTC"

    @property
    def verdict(self) -> str:
        """``verified``, ``does not verify`` or ``unchecked``."""
        if self.ok is None or self.size is None:
            return "unchecked"
        return "verified" if self.ok else "does not verify"

    @property
    def covered(self) -> str:
        """What the verdict covers: ``at 10:41:03 UTC, 17 entries`` for a check that passed,
        ``(checked at 10:41:03 UTC)`` for one that failed, empty when unchecked."""
        if self.ok is None or self.size is None:
            return ""
        if not self.ok:
            return f"(checked {self.when})"
        return f"{self.when}, {self.size:,} entr{'y' if self.size == 1 else 'ies'}"

    @property
    def headline(self) -> str:
        """The verdict and what it covers: ``verified at 10:41:03 UTC, 17 entries``."""
        return f"{self.verdict} {self.covered}".rstrip()


class LedgerCheck:
    """The ledger's full verification, for the page: run in a background thread, so that a
    page waits for it at most ``wait_s``, one at a time, and started only by a page or its
    poll of the head (nobody watching, nothing checked).

    A check is due once the ledger has grown and ``MIN_GAP_S`` (or ``GROWTH_FACTOR`` times as
    long as the last check took) has passed since the last one; and, grown or not, once
    ``RECHECK_S`` (or ``RECHECK_FACTOR`` times as long as the last one took) has passed,
    since an entry can be altered without the ledger growing. Read while the ledger grows,
    checks keep at most a fifth of a core busy; read while it does not, a twentieth.
    A check that could not run is tried again after ``MIN_GAP_S``.
    """

    MIN_GAP_S = 10.0
    GROWTH_FACTOR = 4.0
    RECHECK_S = 10.0
    RECHECK_FACTOR = 20.0

    def __init__(self, ledger: Ledger, *, clock: Clock = SYSTEM_CLOCK, wait_s: float = 0.5) -> None:
        self.ledger = ledger
        self.clock = clock
        self._wait_s = wait_s
        self._lock = threading.Lock()
        self._finished = threading.Condition(self._lock)
        self._running: int | None = None  # the size being checked
        # The last check that finished: (size checked, ok or None if it could not run, text,
        # when it started).
        self._last: tuple[int, bool | None, str, datetime] | None = None
        self._number = 0
        self._next_start = float("-inf")  # once the ledger has grown
        self._recheck_at = float("-inf")  # grown or not

    def current(self, wait_s: float | None = None) -> CheckStatus:
        """The last check that finished, starting one if due and waiting up to ``wait_s``
        (default: the one given) for one running."""
        size = self.ledger.backend.size()  # other daemons' entries included
        wait = self._wait_s if wait_s is None else wait_s
        with self._lock:
            self._start_if_due(size)
            if self._running is not None:
                self._finished.wait_for(lambda: self._running is None, timeout=wait)
            status = self._status()
        if status.size is None:
            text = f"checking the ledger's {size:,} entries…"
            return CheckStatus(None, text, None, None, status.number, status.now)
        if size > status.size:
            text = f"{status.text} · {size - status.size:,} entries since, not yet checked"
            return CheckStatus(status.ok, text, status.size, status.at, status.number, status.now)
        return status

    def poll(self, size: int) -> CheckStatus:
        """Start a check if one is due for a ledger of ``size`` entries, without waiting for
        it; the last check that finished."""
        with self._lock:
            self._start_if_due(size)
            return self._status()

    def _status(self) -> CheckStatus:
        """The last finished check (lock held)."""
        now = self.clock.wall()
        if self._last is None:
            return CheckStatus(None, "", None, None, self._number, now)
        checked, ok, text, at = self._last
        return CheckStatus(ok, text, checked, at, self._number, now)

    def _start_if_due(self, size: int) -> None:
        """Start checking in the background if a check is due (lock held)."""
        if self._running is not None:
            return
        now = self.clock.monotonic()
        if self._last is not None and now < self._recheck_at:
            grown = size != self._last[0] and now >= self._next_start
            if not grown:
                return
        self._running = size
        thread = threading.Thread(target=self._check, name="assay ledger check")
        thread.daemon = True
        thread.start()

    def _check(self) -> None:
        started, at = self.clock.monotonic(), self.clock.wall()
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
        finished = self.clock.monotonic()
        took = finished - started
        with self._lock:
            self._last = (checked, ok, text, at)
            self._number += 1
            self._running = None
            self._next_start = finished + max(self.MIN_GAP_S, self.GROWTH_FACTOR * took)
            again = max(self.RECHECK_S, self.RECHECK_FACTOR * took) if ok is not None else 0.0
            self._recheck_at = finished + max(self.MIN_GAP_S, again)
            self._finished.notify_all()
