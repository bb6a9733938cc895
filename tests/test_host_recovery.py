"""A fire left open by a host that stopped uncleanly is closed honestly, once, by a host that
can tell its owner is gone; and did_it_work answers any transition the ledger knows.

In process, on the memory ledger and virtual time: a "killed" host is one whose evidence has
stopped (it records nothing more, and so renews no lease), and a "paused" one runs on a clock
of its own that the test does not move. ``test_recovery_crash.py`` kills real daemons.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from assay.clock import VirtualClock
from assay.errors import EvidenceStoppedError, NotFoundError, WrongTypeError
from assay.graph.answers import FROM_EVIDENCE
from assay.host import Host
from assay.host.recorded import FROM_LEDGER
from assay.host.wire import ActionRequest
from assay.ledger import Lease, Ledger, MemoryBackend
from assay.ledger.lease import Closing
from stuck_app import APPLICATION as STUCK  # a press that never settles

pytestmark = pytest.mark.anyio

PRESS = "desk.press#1"
UNCHECKED = "its effect was never checked, and nothing more of it will be observed"
STOPPED = "the daemon that fired it stopped (it was killed or crashed) before the fire settled"


def _kill(host: Host) -> None:
    """What kill -9 leaves in the ledger: nothing more recorded, the lease never renewed."""
    host.evidence.halt(EvidenceStoppedError("killed"))


async def _pending_fire(host: Host) -> str:
    fired = await host.fire(ActionRequest(action="desk.press"))
    assert (fired.answer, fired.transition_id) == ("pending", PRESS)
    return host.default_session


def _closed_by(owner: str, by: str, expired_at: str) -> str:
    return (
        f"{STOPPED}: the lease of daemon {owner}, which fired it, expired unrenewed at "
        f"2026-01-01T00:00:{expired_at}.000000Z, and daemon {by} closed it; {UNCHECKED}"
    )


async def test_a_killed_hosts_open_fire_is_closed_once_its_lease_expires() -> None:
    clock = VirtualClock()
    ledger = Ledger(MemoryBackend(), clock=clock)
    async with Host(STUCK, ledger, clock=clock) as killed:
        session = await _pending_fire(killed)
        (fire,) = ledger.query(kind="fire")
        assert fire.body["owner"] == killed.owner
        _kill(killed)
        async with Host(STUCK, ledger, clock=clock) as host:
            # Its lease (30 s from 0) is still live: nothing is closed, and the fire is
            # answered as pending in the daemon that fired it, read from the ledger.
            assert ledger.query(kind="settlement") == []
            await clock.advance(20)
            pending = await host.adid_it_work(session, PRESS)
            waiting = (
                f"its settlement by daemon {killed.owner}, which fired it and holds its session"
            )
            assert (pending.session, pending.answer, pending.waiting_on) == (
                session,
                "pending",
                waiting,
            )
            assert pending.why == (
                f"Still pending: waiting on {waiting}. Its settlement is not recorded yet, and "
                f"daemon {killed.owner} holds a live lease on the ledger: ask that daemon what "
                "exactly it waits on and for how long. As fired, it declared writes lamp.on."
                + FROM_LEDGER
            )
            assert pending.pending_for_ms == 20_000

            await clock.advance(10)  # the lease expires at 30 s; the host looks every 10 s
            (closed,) = ledger.query(kind="settlement")
            error = _closed_by(killed.owner, host.owner, "30")
            assert (closed.session, closed.transition) == (session, PRESS)
            assert closed.body == {
                "action": "desk.press",
                "answer": "unobservable",
                "effect": "unobservable",
                "commit": [],
                "outcome": None,
                "error": error,
                "state_version": None,
            }
            answer = host.did_it_work(session, PRESS)
            assert (answer.answer, answer.effect, answer.error) == (
                "unobservable",
                "unobservable",
                error,
            )
            assert answer.why == error + FROM_EVIDENCE
            assert await host.adid_it_work(session, PRESS) == answer
            assert await host.wait(session, PRESS, 5000) == answer  # at once: nothing comes
            assert await host.recover() == []
            # The killed host's lease went with its fire, so no later look reads it again.
            assert [lease.owner for lease in ledger.backend.leases(now=clock.wall())] == [
                host.owner
            ]
    assert [e.kind for e in ledger.query(session=session)] == ["fire", "settlement"]
    assert ledger.verify().ok


async def test_a_host_starting_after_the_lease_expired_closes_the_fire_before_it_serves() -> None:
    clock = VirtualClock()
    ledger = Ledger(MemoryBackend(), clock=clock)
    killed = Host(STUCK, ledger, clock=clock)
    await killed.start()
    session = await _pending_fire(killed)
    _kill(killed)
    await clock.advance(31)
    first, second = Host(STUCK, ledger, clock=clock), Host(STUCK, ledger, clock=clock)
    await asyncio.gather(first.start(), second.start())  # two at once: one closing
    try:
        (closed,) = ledger.query(kind="settlement")
        closer = closed.body["error"].split("and daemon ")[1].split(" closed it")[0]
        assert closer in (first.owner, second.owner)
        assert closed.body["error"] == _closed_by(killed.owner, closer, "30")
        assert first.did_it_work(session, PRESS) == second.did_it_work(session, PRESS)
    finally:
        for host in (first, second, killed):
            await host.stop()
    assert [e.kind for e in ledger.query(session=session)] == ["fire", "settlement"]


async def test_a_live_hosts_fire_is_never_closed_and_its_own_close_settles_it() -> None:
    clock = VirtualClock()
    ledger = Ledger(MemoryBackend(), clock=clock)
    async with Host(STUCK, ledger, clock=clock) as owner:
        session = await _pending_fire(owner)
        async with Host(STUCK, ledger, clock=clock) as other:
            await clock.advance(300)  # the owner renews its lease every 10 s
            assert await other.recover() == []
            assert ledger.query(kind="settlement") == []
            assert other.did_it_work(session, PRESS).answer == "pending"
            await owner.stop()  # cleanly: its session settles the fire, its lease goes
            answer = other.did_it_work(session, PRESS)
            assert answer.answer == "unobservable"
            assert answer.error is not None
            assert answer.error.startswith("the session was closed while it waited on")
            assert answer.why == answer.error + FROM_EVIDENCE
            assert [lease.owner for lease in ledger.backend.leases(now=clock.wall())] == [
                other.owner
            ]
            await clock.advance(100)
            assert len(ledger.query(kind="settlement")) == 1


async def test_a_paused_host_whose_fires_were_closed_stops_recording_at_its_next_renewal() -> None:
    # Its own clock stands still while the other's runs on: a process stopped (SIGSTOP, a
    # suspended machine) past its lease, then resumed. A settlement it recorded for the fire
    # that was closed meanwhile would be that fire's second.
    paused, running = VirtualClock(), VirtualClock()
    ledger = Ledger(MemoryBackend(), clock=running)
    async with Host(STUCK, ledger, clock=paused) as sleeper:
        session = await _pending_fire(sleeper)
        async with Host(STUCK, ledger, clock=running) as host:
            await running.advance(40)
            (closed,) = ledger.query(kind="settlement")
            assert closed.body["error"] == _closed_by(sleeper.owner, host.owner, "30")
            await paused.advance(10)  # it resumes, and renews
            failure = sleeper.evidence.failure
            assert isinstance(failure, EvidenceStoppedError)
            assert str(failure) == (
                f"this daemon ({sleeper.owner}) lost its lease on the ledger memory:: it was not "
                "renewed within 30 s (the process was paused, or could not reach the ledger), so "
                "another daemon took it for stopped and closed its open fires as unobservable; it "
                "records no more evidence, so that no fire is settled twice: restart it"
            )
            with pytest.raises(EvidenceStoppedError, match="lost its lease"):
                await sleeper.fire(ActionRequest(action="desk.press"))
    assert [e.kind for e in ledger.query(session=session)] == ["fire", "settlement"]


async def test_a_fire_naming_no_owner_is_closed_only_by_a_host_alone_on_the_ledger() -> None:
    # An assay older than leases recorded fires without an owner; a daemon of it holds no
    # lease, so while other hosts run, the one that fired may be among them.
    clock = VirtualClock()
    ledger = Ledger(MemoryBackend(), clock=clock)
    body = {"action": "desk.press", "args": {}, "source": "agent", "writes": ["lamp.on"]}
    ledger.append("fire", body, session="old", transition=PRESS)
    async with Host(STUCK, ledger, clock=clock) as alone:
        (closed,) = ledger.query(kind="settlement")
        assert closed.body["error"] == (
            f"{STOPPED}: the fire names no daemon (an assay older than leases recorded it), and "
            f"daemon {alone.owner} closed it on starting, holding the only live lease on the "
            f"ledger; {UNCHECKED}"
        )
        ledger.append("fire", body, session="older", transition=PRESS)  # while it runs
        async with Host(STUCK, ledger, clock=clock) as second:
            # Another lease is live: the second leaves it; the first started before it.
            await clock.advance(60)
            assert [e.session for e in ledger.query(kind="settlement")] == ["old"]
            answer = second.did_it_work("older", PRESS)
            assert answer.answer == "pending"
            assert answer.waiting_on == "its settlement by the daemon that holds its session"
            assert "The fire names no daemon" in answer.why


async def test_did_it_work_reads_closed_and_unknown_sessions_from_the_ledger() -> None:
    clock = VirtualClock()
    ledger = Ledger(MemoryBackend(), clock=clock)
    async with Host(STUCK, ledger, clock=clock) as host:
        session = host.open_session().id
        fired = await host.fire(ActionRequest(action="desk.press", session=session))
        assert fired.transition_id == PRESS
        await clock.settle()  # its handler runs (and never returns)
        await host.close_session(session)
        answer = host.did_it_work(session, PRESS)
        assert (answer.session, answer.answer) == (session, "unobservable")
        assert await host.wait(session, PRESS, 1000) == answer
        # What the ledger does not know stays unknown, with what to do.
        with pytest.raises(NotFoundError, match=f"the session '{session}' was closed;"):
            host.did_it_work(session, "desk.press#2")
        with pytest.raises(NotFoundError, match="open one with POST /v1/sessions") as caught:
            await host.adid_it_work("nope", PRESS)
        assert (caught.value.kind, caught.value.id) == ("session", "nope")
        with pytest.raises(NotFoundError, match="no session is called 'nope'"):
            await host.wait("nope", PRESS, 1000)


async def test_the_lease_is_renewed_every_third_of_it_and_released_on_a_clean_stop() -> None:
    clock = VirtualClock()
    ledger = Ledger(MemoryBackend(), clock=clock)
    async with Host(STUCK, ledger, clock=clock, lease_s=9) as host:
        (taken,) = ledger.backend.leases(now=clock.wall())
        assert taken == Lease(
            host.owner, clock.wall(), taken.renewed_at + timedelta(seconds=9), live=True
        )
        await clock.advance(3)
        (renewed,) = ledger.backend.leases(now=clock.wall())
        assert renewed.renewed_at - taken.renewed_at == timedelta(seconds=3)
    assert ledger.backend.leases() == []
    for wrong in (0, -1, float("inf"), "30", True):
        with pytest.raises(WrongTypeError, match="lease_s must be a positive number of seconds"):
            Host(STUCK, ledger, lease_s=wrong)  # type: ignore[arg-type]


async def test_a_fire_settled_meanwhile_is_not_closed_again() -> None:
    # The host reads the open fires, then the fire settles (its own daemon was only slow to
    # record it) before the closing is stored: checked again under the append lock, it is
    # left alone.
    clock = VirtualClock()
    ledger = Ledger(MemoryBackend(), clock=clock)
    body = {"action": "desk.press", "owner": "gone"}
    (fire,) = ledger.store([ledger.draft("fire", body, session="s", transition=PRESS)])
    closing = Closing(
        ledger.draft("settlement", {"answer": "unobservable"}, session="s", transition=PRESS),
        fire.seq,
        "gone",
    )
    ledger.append("settlement", {"answer": "worked"}, session="s", transition=PRESS)
    assert ledger.close_fires([closing], by="me", now=clock.wall()) == []
    assert [e.body["answer"] for e in ledger.query(kind="settlement")] == ["worked"]
