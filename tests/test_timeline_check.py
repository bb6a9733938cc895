"""The timeline's ledger check: in the background, never holding a page for long, and not
again until the ledger has grown and the gap after the last check has passed."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from assay.clock import VirtualClock
from assay.errors import LedgerError
from assay.ledger import Ledger, MemoryBackend, SQLiteBackend
from assay.ledger.verification import LedgerReport
from assay.timeline import LedgerCheck


class GatedLedger(Ledger):
    """A ledger whose ``verify`` waits until the test opens the gate, counting its runs."""

    def __init__(self) -> None:
        super().__init__(MemoryBackend())
        self.gate = threading.Event()
        self.runs = 0

    def verify(self, *args: object, **kwargs: object) -> LedgerReport:
        self.runs += 1
        assert self.gate.wait(30), "the test never opened the gate"
        return super().verify()


def _append(ledger: Ledger, count: int) -> None:
    for n in range(count):
        ledger.append("verdict", {"n": n})


def test_a_page_does_not_wait_for_a_check_that_takes_long() -> None:
    ledger = GatedLedger()
    _append(ledger, 3)
    check = LedgerCheck(ledger, clock=VirtualClock(), wait_s=0)
    assert check.current() == (None, "checking the ledger's 3 entries…", None)
    assert check.poll(3) is None  # still running: not started twice
    ledger.gate.set()
    ok, text, checked = check.current(wait_s=30)
    assert (ok, checked, ledger.runs) == (True, 3, 1)
    assert text.startswith("memory:: 3 entries verify: seq gapless")


def test_a_grown_ledger_is_checked_again_only_after_the_gap() -> None:
    ledger = GatedLedger()
    ledger.gate.set()
    clock = VirtualClock()
    check = LedgerCheck(ledger, clock=clock, wait_s=30)
    _append(ledger, 2)
    assert check.current()[2] == 2
    _append(ledger, 5)
    ok, text, checked = check.current()
    assert (ok, checked, ledger.runs) == (True, 2, 1)  # within the gap: the last check stands
    assert text.endswith(" · 5 entries since, not yet checked")
    asyncio.run(clock.advance(LedgerCheck.MIN_GAP_S))  # the gap passes
    assert check.poll(7) is not None  # the page's poll of the head starts it
    ok, text, checked = check.current()
    assert (ok, checked, ledger.runs) == (True, 7, 2)
    assert "entries since" not in text
    assert check.current()[2] == 7 and ledger.runs == 2  # nothing grew: no third check


def test_a_tampered_ledger_shows_as_not_verifying(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = Ledger(SQLiteBackend(path))
    _append(ledger, 4)
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TRIGGER ledger_entries_no_update")
        raw.execute("UPDATE ledger_entries SET kind = 'fire' WHERE seq = 2")
    try:
        ok, text, checked = LedgerCheck(ledger, clock=VirtualClock(), wait_s=30).current()
    finally:
        ledger.close()
    assert (ok, checked) == (False, 4)
    assert "entry 2" in text


def test_a_check_that_cannot_run_says_so_rather_than_pass_or_fail() -> None:
    class Closed(Ledger):
        def verify(self, *args: object, **kwargs: object) -> LedgerReport:
            raise LedgerError("the ledger memory: is closed; open it again", url="memory:")

    ledger = Closed(MemoryBackend())
    _append(ledger, 1)
    ok, text, checked = LedgerCheck(ledger, clock=VirtualClock(), wait_s=30).current()
    assert (ok, checked) == (None, 1)
    assert text == "the ledger could not be checked: the ledger memory: is closed; open it again"


@pytest.mark.parametrize("size", [0, 1])
def test_the_first_check_of_a_small_ledger_is_waited_for(size: int) -> None:
    ledger = Ledger(MemoryBackend())
    _append(ledger, size)
    ok, _, checked = LedgerCheck(ledger, clock=VirtualClock()).current()
    assert (ok, checked) == (True, size)


def test_the_page_shows_recorded_values_summarized_not_whole() -> None:
    # One fire with a 2 MB argument made a 2 MB page, the argument inside it whole.
    from assay.timeline.page import render_timeline

    ledger = Ledger(MemoryBackend())
    huge = "x" * 2_000_000
    for number, args in enumerate(({"note": huge}, {"to": "<b>ops</b>"}), start=1):
        body = {"action": "inbox.send", "args": args, "source": "agent"}
        ledger.append("fire", body, session="s", transition=f"inbox.send#{number}")
    page = render_timeline(ledger, app="outpost")
    assert len(page) < 50_000
    assert "{&#34;note&#34;:&#34;xxxx" in page and "x…" in page  # compact JSON, cut
    assert "&lt;b&gt;ops&lt;/b&gt;" in page and "<b>ops</b>" not in page  # and escaped
