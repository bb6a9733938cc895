"""The timeline's ledger check: in the background, never holding a page for long; again once
the ledger has grown and the gap after the last check has passed, and at a bounded interval
when it has not (an entry can be altered without the ledger growing); shown with when it ran."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.clock import Timer, VirtualClock
from assay.errors import LedgerEntryError, LedgerError
from assay.ledger import Ledger, MemoryBackend, SQLiteBackend
from assay.ledger.backends.sqlite import SCHEMA
from assay.ledger.verification import LedgerReport
from assay.timeline import LedgerCheck
from strategies import json_values


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


def alter(path: Path, seq: int, entry: str) -> None:
    """Set entry ``seq``'s stored text to ``entry``, as someone with access to the file
    could: the trigger that refuses an UPDATE dropped, then put back as it was."""
    start = SCHEMA.index("CREATE TRIGGER IF NOT EXISTS ledger_entries_no_update")
    trigger = SCHEMA[start : SCHEMA.index("END;", start) + len("END;")]
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TRIGGER ledger_entries_no_update")
        sql = f"UPDATE ledger_entries SET entry = {entry} WHERE seq = ?"
        assert raw.execute(sql, (seq,)).rowcount == 1
        raw.execute(trigger)


class StepClock:
    """Time that moves only when the test (or a slow check) moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> datetime:
        return datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=self.now)

    async def sleep(self, seconds: float) -> None:
        raise AssertionError("the check never sleeps")

    def call_later(self, seconds: float, callback: Callable[[], None]) -> Timer:
        raise AssertionError("the check never schedules")


def test_a_page_does_not_wait_for_a_check_that_takes_long() -> None:
    ledger = GatedLedger()
    _append(ledger, 3)
    check = LedgerCheck(ledger, clock=VirtualClock(), wait_s=0)
    first = check.current()
    assert (first.ok, first.text, first.size, first.at) == (
        None,
        "checking the ledger's 3 entries…",
        None,
        None,
    )
    assert first.headline == "unchecked"
    assert check.poll(3).size is None  # still running: not started twice
    ledger.gate.set()
    status = check.current(wait_s=30)
    assert (status.ok, status.size, ledger.runs) == (True, 3, 1)
    assert status.text.startswith("memory:: 3 entries verify: seq gapless")


def test_a_grown_ledger_is_checked_again_only_after_the_gap() -> None:
    ledger = GatedLedger()
    ledger.gate.set()
    clock = VirtualClock()
    check = LedgerCheck(ledger, clock=clock, wait_s=30)
    _append(ledger, 2)
    assert check.current().size == 2
    _append(ledger, 5)
    status = check.current()
    assert (status.ok, status.size, ledger.runs) == (True, 2, 1)  # within the gap: it stands
    assert status.text.endswith(" · 5 entries since, not yet checked")
    asyncio.run(clock.advance(LedgerCheck.MIN_GAP_S))  # the gap passes
    assert check.poll(7).size is not None  # the page's poll of the head starts it
    status = check.current()
    assert (status.ok, status.size, ledger.runs) == (True, 7, 2)
    assert "entries since" not in status.text
    assert check.current().size == 7 and ledger.runs == 2  # nothing grew: no third check yet


def test_a_tampered_ledger_shows_as_not_verifying(tmp_path: Path) -> None:
    path = tmp_path / "ledger.db"
    ledger = Ledger(SQLiteBackend(path))
    _append(ledger, 4)
    with sqlite3.connect(path) as raw:
        raw.execute("DROP TRIGGER ledger_entries_no_update")
        raw.execute("UPDATE ledger_entries SET kind = 'fire' WHERE seq = 2")
    try:
        status = LedgerCheck(ledger, clock=VirtualClock(), wait_s=30).current()
    finally:
        ledger.close()
    assert (status.ok, status.size) == (False, 4)
    assert "entry 2" in status.text
    assert status.headline == "does not verify (checked at 00:00:00 UTC)"


def test_a_check_that_cannot_run_says_so_rather_than_pass_or_fail() -> None:
    class Closed(Ledger):
        def verify(self, *args: object, **kwargs: object) -> LedgerReport:
            raise LedgerError("the ledger memory: is closed; open it again", url="memory:")

    ledger = Closed(MemoryBackend())
    _append(ledger, 1)
    status = LedgerCheck(ledger, clock=VirtualClock(), wait_s=30).current()
    assert (status.ok, status.size, status.headline) == (None, 1, "unchecked")
    assert status.text == (
        "the ledger could not be checked: the ledger memory: is closed; open it again"
    )


@pytest.mark.parametrize("size", [0, 1])
def test_the_first_check_of_a_small_ledger_is_waited_for(size: int) -> None:
    ledger = Ledger(MemoryBackend())
    _append(ledger, size)
    status = LedgerCheck(ledger, clock=VirtualClock()).current()
    assert (status.ok, status.size) == (True, size)


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


def test_an_entry_altered_without_the_ledger_growing_is_found_at_the_next_interval(
    tmp_path: Path,
) -> None:
    # The page said "verified" for as long as no entry arrived after one was altered.
    path = tmp_path / "ledger.db"
    ledger = Ledger(SQLiteBackend(path))
    _append(ledger, 4)
    clock = VirtualClock()
    check = LedgerCheck(ledger, clock=clock, wait_s=30)
    try:
        assert check.current().headline == "verified at 00:00:00 UTC, 4 entries"
        alter(path, 2, """replace(entry, '"n":1', '"n":9')""")
        asyncio.run(clock.advance(LedgerCheck.RECHECK_S - 1))
        stale = check.current()  # the last check stands, and says when it ran
        assert (stale.ok, stale.headline) == (True, "verified at 00:00:00 UTC, 4 entries")
        asyncio.run(clock.advance(1))
        found = check.current()
    finally:
        ledger.close()
    assert (found.ok, found.size, found.number) == (False, 4, 2)
    assert found.headline == "does not verify (checked at 00:00:10 UTC)"
    assert found.text.startswith("sqlite:///")
    assert ": entry 2: hash " in found.text


def test_the_interval_grows_with_what_a_check_costs() -> None:
    # A check of 100,000 entries takes seconds of CPU: re-run as often as a small one, it
    # would keep a core busy while anyone watches the page.
    clock = StepClock()

    class Slow(Ledger):
        def verify(self, *args: object, **kwargs: object) -> LedgerReport:
            clock.now += 3.0  # what 100,000 entries took here
            return super().verify()

    ledger = Slow(MemoryBackend())
    _append(ledger, 2)
    check = LedgerCheck(ledger, clock=clock, wait_s=30)
    assert check.current().number == 1
    clock.now += LedgerCheck.RECHECK_FACTOR * 3.0 - 0.5
    assert check.current().number == 1
    clock.now += 0.5
    assert check.current().number == 2
    assert LedgerCheck.RECHECK_FACTOR * 3.0 > LedgerCheck.RECHECK_S


def test_a_check_that_could_not_run_is_tried_again_after_the_gap() -> None:
    class Flaky(Ledger):
        fail = True

        def verify(self, *args: object, **kwargs: object) -> LedgerReport:
            if self.fail:
                raise LedgerError("cannot read the ledger memory:", url="memory:")
            return super().verify()

    ledger = Flaky(MemoryBackend())
    _append(ledger, 1)
    clock = StepClock()
    check = LedgerCheck(ledger, clock=clock, wait_s=30)
    assert check.current().ok is None
    ledger.fail = False
    clock.now += LedgerCheck.MIN_GAP_S
    assert check.current().headline == "verified at 00:00:10 UTC, 1 entry"


def test_a_check_on_another_day_shows_its_date() -> None:
    ledger = Ledger(MemoryBackend())
    _append(ledger, 1)
    clock = StepClock()
    check = LedgerCheck(ledger, clock=clock, wait_s=30)
    check.current()
    clock.now += 86_400
    assert check.poll(1).headline == "verified at 2026-01-01 00:00:00 UTC, 1 entry"


_FIELDS = ("narrative", "changed_fields", "passed", "criteria", "critique", "already_true")
_nested = st.one_of(
    json_values, st.fixed_dictionaries({}, optional=dict.fromkeys(_FIELDS, json_values))
)
_bodies = st.fixed_dictionaries(
    {},
    optional={
        **dict.fromkeys(
            ("action", "source", "args", "error", "refusal", "contract", "answer", "commit"),
            json_values,
        ),
        **dict.fromkeys(
            ("already_true", "passed", "narrative", "attempt", "iteration"), json_values
        ),
        **dict.fromkeys(("reason", "event", "step"), json_values),
        "outcome": _nested,
        "verdict": _nested,
    },
)


@settings(max_examples=100)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["fire", "refusal", "settlement", "verdict", "commit"]),
            _bodies,
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_entries_of_any_shape_are_shown_without_failing(
    entries: list[tuple[str, dict[str, Any], bool]],
) -> None:
    # What is stored is not trusted to have the shape assay writes: a settlement whose
    # outcome was a string made the page fail ('str' object has no attribute 'get').
    from assay.timeline.page import render_timeline

    ledger = Ledger(MemoryBackend())
    for kind, body, in_run in entries:
        where = {"run": "r-1"} if in_run else {"session": "s", "transition": "inbox.send#1"}
        with contextlib.suppress(LedgerEntryError):  # a body the ledger refuses to store
            ledger.append(kind, body, **where)
    page = render_timeline(ledger, app="outpost")
    assert page.startswith("<!doctype html>")
