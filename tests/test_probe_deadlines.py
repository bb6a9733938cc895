"""Every probe read has a deadline: one that never answers counts as failed and is stopped.

Against real components (a local HTTP server that drips its body, a SQLite file with a
query that runs for minutes) and on virtual time for the poller; nothing sleeps to wait.
A read that the old code never ended is awaited with a generous real-time guard, so a
regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from assay.clock import VirtualClock
from assay.state.probes import CallableProbe, HttpProbe, Poller, ProbeError, SqlProbe
from assay.state.probes.probe import grace
from assay.state.substrate import Substrate
from local_http import QuietHandler, serve

T = TypeVar("T")
GUARD = 60.0
"""Seconds of real time after which an await that should already be over fails the test."""


async def finished(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, GUARD)


class Sink:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, values: dict[str, Any], gone: frozenset[str]) -> None:
        self.calls.append((name, values))


# HTTP: a server that sends its headers and "{", then one space at a time.


class Drip:
    def __init__(self) -> None:
        self.dripping = True
        self.started = threading.Event()
        self.client_left = threading.Event()
        self.stop = threading.Event()


class DripHandler(QuietHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        drip = self.server.app
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        if not drip.dripping:
            self.wfile.write(b'{"ok": true}')
            return
        try:
            self.wfile.write(b"{")
            self.wfile.flush()
            drip.started.set()
            # A space every 50 ms for at most 5 s: every socket read gets a byte well
            # within any per-read timeout, so only a deadline on the whole read ends it.
            for _ in range(100):
                if drip.stop.wait(0.05):
                    return
                self.wfile.write(b" ")
                self.wfile.flush()
        except OSError:
            drip.client_left.set()


@pytest.fixture
def drip() -> Iterator[tuple[Drip, str]]:
    state = Drip()
    with serve(DripHandler, state, release=state.stop.set) as url:
        yield state, f"{url}/state"


def test_http_read_of_a_dripping_body_ends_at_its_deadline(drip: tuple[Drip, str]) -> None:
    """httpx's timeout is per socket read; a body that drips never tripped it."""
    _, url = drip

    async def main() -> str:
        async with HttpProbe(url, timeout=0.3) as probe:
            with pytest.raises(ProbeError) as caught:
                await finished(probe.read())
        return str(caught.value)

    assert asyncio.run(main()) == f"GET {url} gave no answer within 0.3 s; the read was abandoned"


def test_poller_abandons_a_dripping_http_read_and_reads_again(drip: tuple[Drip, str]) -> None:
    """The stuck request is cancelled at the deadline on the poller's clock, and the next read
    of the recovered application succeeds: one stuck read used to wedge the probe."""
    state, url = drip

    async def main() -> tuple[str | None, bool, list[tuple[str, dict[str, Any]]], int]:
        clock = VirtualClock()
        sink = Sink()
        async with HttpProbe(url, name="app", timeout=30) as probe:
            poller = Poller([probe], sink, clock)
            reading = asyncio.create_task(poller.read_once())
            assert await asyncio.to_thread(state.started.wait, GUARD)
            await clock.advance(30 + 2 * grace(30))  # the deadline, and its grace
            await finished(reading)
            error = poller.health("app").last_error
            left = await asyncio.to_thread(state.client_left.wait, GUARD)
            state.dripping = False
            await finished(poller.read_once())
            return error, left, sink.calls, poller.health("app").consecutive_failures

    error, left, calls, failing = asyncio.run(main())
    assert error == "probe 'app' gave no answer within 30 s; the read was abandoned"
    assert left
    assert calls == [("app", {"ok": True})]
    assert failing == 0


# SQLite: a recursive query that counts to the number in the knob table.

COUNT = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
    "WHERE x < (SELECT n FROM knob)) SELECT count(*) FROM c"
)


@pytest.fixture
def knob(tmp_path: Path) -> Path:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as db:
        db.executescript(f"CREATE TABLE knob (n INTEGER); INSERT INTO knob VALUES ({10**8});")
    db.close()
    return path


def test_sqlite_query_is_interrupted_at_its_deadline(knob: Path) -> None:
    """``timeout`` used to bound only the wait for a lock; the query ran on for minutes."""
    probe = SqlProbe(f"sqlite:///{knob}", {"count": COUNT}, timeout=0.2)

    async def main() -> str:
        with pytest.raises(ProbeError) as caught:
            await finished(probe.read())
        return str(caught.value)

    message = asyncio.run(main())
    assert message.startswith(
        "the query for 'count' failed: it gave no answer within 0.2 s and was interrupted "
        "(SQL: WITH RECURSIVE"
    )


def test_poller_stops_a_sqlite_read_so_the_application_can_write(knob: Path) -> None:
    """At the poller's deadline the query is interrupted and its lock released: the
    application's own write used to fail with "database is locked" while it ran."""
    probe = SqlProbe(f"sqlite:///{knob}", {"count": COUNT}, name="db", timeout=30)

    def write() -> None:
        with sqlite3.connect(knob, timeout=GUARD) as db:
            db.execute("UPDATE knob SET n = 3")
        db.close()

    async def main() -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        clock = VirtualClock()
        sink = Sink()
        poller = Poller([probe], sink, clock)
        reading = asyncio.create_task(poller.read_once())
        await clock.settle()
        await clock.advance(30 + 2 * grace(30))  # the deadline, and its grace
        await finished(reading)
        error = poller.health("db").last_error
        await asyncio.to_thread(write)
        await finished(poller.read_once())
        return error, sink.calls

    error, calls = asyncio.run(main())
    assert error == "probe 'db' gave no answer within 30 s; the read was abandoned"
    assert calls == [("db", {"count": 3})]


# Callables, and the poller's handling of reads that do not end.


def test_poller_cancels_an_async_callable_that_never_returns() -> None:
    calls: list[str] = []

    async def read() -> dict[str, Any]:
        calls.append("called")
        if len(calls) == 1:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                calls.append("cancelled")
                raise
        return {"n": len(calls)}

    async def main() -> tuple[str | None, list[tuple[str, dict[str, Any]]]]:
        clock = VirtualClock()
        sink = Sink()
        poller = Poller([CallableProbe(read, name="p", timeout=1)], sink, clock)
        reading = asyncio.create_task(poller.read_once())
        await clock.advance(1 + 2 * grace(1))  # the deadline, and its grace
        await finished(reading)
        error = poller.health("p").last_error
        await finished(poller.read_once())
        return error, sink.calls

    error, sunk = asyncio.run(main())
    assert error == "probe 'p' gave no answer within 1 s; the read was abandoned"
    assert calls == ["called", "cancelled", "called"]
    assert sunk == [("p", {"n": 3})]


def test_no_read_starts_on_top_of_one_that_ignores_cancellation() -> None:
    calls: list[int] = []

    async def main() -> tuple[list[str | None], list[int], list[tuple[str, dict[str, Any]]]]:
        release = asyncio.Event()

        async def stubborn() -> dict[str, Any]:
            calls.append(len(calls) + 1)
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue
            return {"n": len(calls)}

        clock = VirtualClock()
        sink = Sink()
        poller = Poller([CallableProbe(stubborn, name="p", timeout=1)], sink, clock)
        errors = []
        for _ in range(2):
            reading = asyncio.create_task(poller.read_once())
            await clock.advance(1 + 2 * grace(1))  # the deadline, and its grace
            await finished(reading)
            errors.append(poller.health("p").last_error)
        seen = list(calls)
        release.set()
        await finished(poller.read_once())
        return errors, seen, sink.calls

    errors, seen, sunk = asyncio.run(main())
    assert errors == [
        "probe 'p' gave no answer within 1 s; the read was abandoned",
        "probe 'p': a read abandoned after 1 s has not ended (it did not stop when "
        "cancelled); no new read starts until it does",
    ]
    assert seen == [1]
    assert sunk == [("p", {"n": 2})]


def test_poller_stop_does_not_wait_on_a_stuck_read() -> None:
    async def main() -> bool:
        release = asyncio.Event()

        async def stubborn() -> dict[str, Any]:
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    continue
            return {}

        poller = Poller([CallableProbe(stubborn, name="p")], Sink(), VirtualClock())
        running = asyncio.create_task(poller.run())
        await asyncio.sleep(0)
        await finished(poller.stop())
        stopped = running.done()
        release.set()
        await finished(running)
        return stopped

    assert asyncio.run(main())


def test_substrate_first_read_is_bounded_and_leaves_the_source_unhealthy() -> None:
    """``Host.start`` awaits ``read_once()`` before serving; a stuck probe kept the daemon
    from starting, and while it hung its source looked perfectly healthy."""

    async def never() -> dict[str, Any]:
        await asyncio.Event().wait()
        return {}

    async def main() -> tuple[float, str | None]:
        clock = VirtualClock()
        substrate = Substrate(probes=[CallableProbe(never, name="app", timeout=2)], clock=clock)
        assert substrate.poller is not None
        reading = asyncio.create_task(substrate.poller.read_once())
        await clock.advance(2 + 2 * grace(2))  # the deadline, and its grace
        await finished(reading)
        state = substrate.state()
        await finished(substrate.stop())
        return state.confidence.health, state.sources[0].last_error

    health, error = asyncio.run(main())
    assert health == 0.0
    assert error == "probe 'app' gave no answer within 2 s; the read was abandoned"
