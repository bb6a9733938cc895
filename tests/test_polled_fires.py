"""Fires on polled state, and time counted from the fire (issue 31, parts 1 to 3 and 6).

A probe's state is as old as its last read. A fire takes its pre-action snapshot only after a
read begun when it was made (``Session.afire``; the host fires through it), and an
already-true fire does not settle "nothing changed" before a read begun after its handler
returned. The library, the daemon and the MCP server answer alike. Time counts from the
fire, however late the verification task first runs. Virtual time throughout, and the
port comparison and the busy loop on real time: the probes there are polled once a minute,
so only a fresh read can see what the tests change.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from mcp import Client

from assay.clock import SYSTEM_CLOCK, Clock, VirtualClock
from assay.errors import SessionError
from assay.graph import FireResult, Session, build_navigation_graph
from assay.host import Application, Host
from assay.host.application import ConnectContext, Connection
from assay.host.wire import VerifyRequest
from assay.ledger import Ledger, MemoryBackend
from assay.mcp import build_server
from assay.redaction import Redaction
from assay.state.probes import CallableProbe
from assay.state.substrate import Substrate
from http_daemon import serving

pytestmark = pytest.mark.anyio

GRAPH = build_navigation_graph(
    "accounts",
    {
        "profile": {
            "actions": {
                "set-city": {
                    "does": "Set a user's city",
                    "writes": ["users.{user_id}.address.city"],
                    "verify": {"users.{user_id}.address.city": {"eq": {"arg": "city"}}},
                },
                "set-mode": {
                    "does": "Set the drone's mode",
                    "writes": ["drone.mode"],
                    "verify": {"drone.mode": {"eq": {"arg": "mode"}}},
                },
                "switch-mode": {
                    "does": "Set the drone's mode, checked by an expression",
                    "writes": ["drone.mode"],
                    "verify_expression": "drone.mode === args.mode",
                },
            }
        }
    },
)
THRESHOLDS = {"reversible": 0.0}  # a placeholder key is no key before a fire: no coverage
SEATTLE = {"user_id": "u1", "city": "Seattle"}


def _application(
    app: dict[str, Any], *, interval: float, on_mode: str | None = None
) -> Application:
    """The accounts application, read whole by one probe every ``interval`` seconds. Its
    set-city handler does nothing; set-mode sets the mode to ``on_mode`` (a toggle that
    breaks the contract) when given, else does nothing."""

    def read() -> dict[str, Any]:
        return {key: copy.deepcopy(value) for key, value in app.items()}

    def set_mode(args: dict[str, Any]) -> None:
        if on_mode is not None:
            app["drone"]["mode"] = on_mode

    async def connect(context: ConnectContext) -> Connection:
        substrate = Substrate(
            probes=[CallableProbe(read, name="app", interval=interval)],
            declared_keys=GRAPH.declared_writes(),
            clock=context.clock,
        )
        handlers = {
            "profile.set-city": lambda args: None,
            "profile.set-mode": set_mode,
            "profile.switch-mode": set_mode,
        }
        return Connection(substrate, handlers)

    return Application(GRAPH, "profile", connect, thresholds=THRESHOLDS)


def _state() -> dict[str, Any]:
    return {"users": {"u1": {"address": {"city": "Portland"}}}, "drone": {"mode": "GUIDED"}}


async def _library_session(application: Application, clock: Clock) -> tuple[Session, Connection]:
    """A session of the library's own on ``application``, polling as a host would."""
    connection = await application.connect(ConnectContext(clock=clock, redaction=Redaction.none()))
    await connection.substrate.read_fresh()
    await connection.substrate.start()
    session = GRAPH.create_session(
        node="profile", substrate=connection.substrate, clock=clock, thresholds=THRESHOLDS
    )
    session.register_actions_by_id(connection.handlers)
    return session, connection


async def _waited(
    session: Session, clock: VirtualClock, transition_id: str, advance: float
) -> FireResult:
    """``session.wait`` on ``transition_id`` (ceiling 10 s) while ``clock`` moves ``advance``
    seconds: the fire result as of then."""
    waiting = asyncio.ensure_future(session.wait(transition_id, 10))
    await clock.advance(advance)
    return await waiting


async def test_a_library_fire_on_polled_state_reads_the_probes_before_its_snapshot() -> None:
    # The application moved u1 to Seattle between two polls; the agent's set-city does
    # nothing. On the last poll's snapshot the fire looked like the change: worked.
    clock = VirtualClock()
    app = _state()
    session, connection = await _library_session(_application(app, interval=0.5), clock)
    try:
        await clock.advance(0.4)
        app["users"]["u1"]["address"]["city"] = "Seattle"
        await clock.advance(0.05)
        with pytest.raises(SessionError, match=r"observes polled state.*await session\.afire"):
            session.fire("profile.set-city", SEATTLE)
        assert session.fired == 0  # refused before anything was done or recorded
        fired = await session.afire("profile.set-city", SEATTLE)
        assert fired.already_true is not None
        assert fired.already_true[0].actual_summary == '"Seattle"'
        settled = await _waited(session, clock, str(fired.transition_id), 0.1)
        answer = session.did_it_work(str(fired.transition_id))
    finally:
        await session.close()
        await connection.aclose()
    assert settled.effect_status == "settled"
    assert answer.answer == "unobservable"
    assert answer.commit == []


async def test_afire_on_pushed_state_fires_at_once() -> None:
    session = GRAPH.create_session(node="profile", state={"drone": {"mode": "AUTO"}})
    session.register_actions("profile", {"set-mode": lambda args: session.report(
        {"drone.mode": args["mode"]}
    )})  # fmt: skip
    fired = await session.afire("profile.set-mode", {"mode": "GUIDED"})
    assert fired.effect_status == "pending"
    settled = await session.wait(str(fired.transition_id), 1)
    assert session.did_it_work(str(fired.transition_id)).answer == "worked"
    assert settled.outcome is not None and settled.outcome.passed


async def _through_library(application: Application, change: Callable[[], None]) -> dict[str, Any]:
    session, connection = await _library_session(application, SYSTEM_CLOCK)
    try:
        change()
        fired = await session.afire("profile.set-city", SEATTLE)
        await session.wait(str(fired.transition_id), 5)
        answer = session.did_it_work(str(fired.transition_id))
        return {
            "answer": answer.answer,
            "already_true": [dataclasses.asdict(c) for c in fired.already_true or []],
        }
    finally:
        await session.close()
        await connection.aclose()


async def _through_http(application: Application, change: Callable[[], None]) -> dict[str, Any]:
    async with serving(application) as served, httpx.AsyncClient(base_url=served.url) as client:
        change()
        request = {"action": "profile.set-city", "args": SEATTLE, "wait_ms": 5000}
        response = await client.post("/v1/actions", json=request)
        assert response.status_code == 200, response.text
        body = response.json()
    return {"answer": body["answer"], "already_true": body["already_true"]}


async def _through_mcp(application: Application, change: Callable[[], None]) -> dict[str, Any]:
    async with (
        Host(application, Ledger(MemoryBackend())) as host,
        Client(build_server(host)) as client,
    ):
        change()
        arguments = {"action": "profile.set-city", "args": SEATTLE, "wait_ms": 5000}
        result = await client.call_tool("fire", arguments)
        assert not result.is_error, result.content
        body = result.structured_content
    assert body is not None
    return {"answer": body["answer"], "already_true": body["already_true"]}


PORTS: dict[str, Callable[[Application, Callable[[], None]], Awaitable[dict[str, Any]]]] = {
    "library": _through_library,
    "http": _through_http,
    "mcp": _through_mcp,
}


@pytest.mark.parametrize("port", PORTS)
async def test_every_port_answers_a_change_made_before_the_fire_as_already_true(port: str) -> None:
    # Real time, a probe polled once a minute: after the first read, only the read each
    # fire makes can see that u1 moved to Seattle before the agent's (no-op) set-city.
    app = _state()

    def move() -> None:
        app["users"]["u1"]["address"]["city"] = "Seattle"

    said = await PORTS[port](_application(app, interval=60), move)
    assert said["answer"] == "unobservable"
    (condition,) = said["already_true"]
    assert condition["key"] == "users.u1.address.city"
    assert condition["actual_summary"] == '"Seattle"'
    assert condition["result"] is True


async def test_an_already_true_press_whose_handler_breaks_the_contract_fails() -> None:
    # The drone is GUIDED; the press of GUIDED toggles it to LOITER. The last poll still says
    # GUIDED when the handler returns, so the fire answered unobservable, "no change to the
    # declared keys was observed". It now waits for a read begun after the handler returned.
    clock = VirtualClock()
    app = _state()
    application = _application(app, interval=0.5, on_mode="LOITER")
    session, connection = await _library_session(application, clock)
    try:
        await clock.advance(0.1)
        fired = await session.afire("profile.set-mode", {"mode": "GUIDED"})
        assert fired.already_true is not None
        await clock.settle()
        transition_id = str(fired.transition_id)
        settled = await _waited(session, clock, transition_id, 6)
        answer = session.did_it_work(transition_id)
    finally:
        await session.close()
        await connection.aclose()
    assert settled.effect_status == "failed"
    assert answer.answer == "failed"
    assert settled.failure == "verification"
    assert settled.outcome is not None
    changed = [(c.key, c.before, c.after) for c in settled.outcome.changed_fields]
    assert changed == [("drone.mode", "GUIDED", "LOITER")]
    assert [(c.key, c.before, c.after) for c in answer.commit] == changed
    assert settled.outcome.narrative.startswith(
        'drone.mode changed from "GUIDED" to "LOITER" after '
    ), settled.outcome.narrative


@pytest.mark.parametrize(("toggle", "answer"), [("LOITER", "failed"), (None, "unobservable")])
async def test_a_held_before_contract_is_judged_on_a_read_after_its_handler(
    toggle: str | None, answer: str
) -> None:
    # An expression contract (no already-true stamp) that held before the fire: on the last
    # poll nothing it reads changed, so it answered unobservable even when the handler had
    # broken it. A read begun after the handler returned decides.
    clock = VirtualClock()
    app = _state()
    session, connection = await _library_session(
        _application(app, interval=0.5, on_mode=toggle), clock
    )
    try:
        await clock.advance(0.1)
        fired = await session.afire("profile.switch-mode", {"mode": "GUIDED"})
        assert fired.already_true is None
        settled = await _waited(session, clock, str(fired.transition_id), 6)
        said = session.did_it_work(str(fired.transition_id))
    finally:
        await session.close()
        await connection.aclose()
    assert said.answer == answer
    if toggle is not None:
        assert settled.outcome is not None
        changed = [(c.key, c.before, c.after) for c in settled.outcome.changed_fields]
        assert changed == [("drone.mode", "GUIDED", "LOITER")]
        assert [(c.key, c.before, c.after) for c in said.commit] == changed
    else:
        assert said.why.startswith("The contract holds, but it held before the action fired")


async def test_an_already_true_press_waits_for_the_read_after_its_handler_on_real_time() -> None:
    app = _state()
    application = _application(app, interval=60, on_mode="LOITER")
    session, connection = await _library_session(application, SYSTEM_CLOCK)
    try:
        fired = await session.afire("profile.set-mode", {"mode": "GUIDED"}, verify_timeout_ms=300)
        settled = await session.wait(str(fired.transition_id), 5)
    finally:
        await session.close()
        await connection.aclose()
    assert settled.effect_status == "failed"
    assert settled.outcome is not None
    assert [c.key for c in settled.outcome.changed_fields] == ["drone.mode"]


async def test_an_already_true_fire_pending_on_its_read_says_so() -> None:
    clock = VirtualClock()
    app = _state()
    slow: dict[str, float] = {}

    async def read() -> dict[str, Any]:
        if slow:
            await clock.sleep(slow["s"])
        return {key: copy.deepcopy(value) for key, value in app.items()}

    substrate = Substrate(
        probes=[CallableProbe(read, name="app", interval=5)],
        declared_keys=GRAPH.declared_writes(),
        clock=clock,
    )
    await substrate.start()
    session = GRAPH.create_session(
        node="profile", substrate=substrate, clock=clock, thresholds=THRESHOLDS
    )
    session.register_actions("profile", {"set-mode": lambda args: None})
    try:
        await clock.settle()
        fired = await session.afire("profile.set-mode", {"mode": "GUIDED"})
        slow["s"] = 1.0
        await clock.settle()  # the handler has returned; its read is under way
        pending = session.did_it_work(str(fired.transition_id))
        await clock.advance(1)
        settled = session.did_it_work(str(fired.transition_id))
    finally:
        await session.close()
        await substrate.stop()
    assert pending.answer == "pending"
    assert pending.waiting_on is not None
    assert pending.waiting_on.startswith("a read of the probes begun after the handler returned")
    assert settled.answer == "unobservable"


async def test_outcome_now_says_when_later_state_contradicts_an_already_true_receipt() -> None:
    session = GRAPH.create_session(node="profile", state=_state())
    session.register_actions("profile", {"set-mode": lambda args: None})
    fired = session.fire("profile.set-mode", {"mode": "GUIDED"})
    settled = await session.wait(str(fired.transition_id), 1)
    assert (settled.effect_status, settled.outcome_now) == ("settled", None)
    session.report({"drone.mode": "RTL"})
    later = session.did_it_work(str(fired.transition_id))
    assert later.answer == "unobservable"
    assert later.outcome_now is not None
    assert later.outcome_now.result is False
    assert later.outcome_now.detail.startswith("since settlement the contract no longer holds")
    assert session.result(session.transitions[str(fired.transition_id)]).outcome_now is not None


async def test_outcome_now_says_when_later_state_contradicts_a_held_before_receipt() -> None:
    graph = build_navigation_graph(
        "mail",
        {"inbox": {"actions": {"send": {
            "does": "send a message", "writes": ["sent.{id}", "count"],
            "verify_expression": "sent[args.id] === 'sent'",
        }}}},
    )  # fmt: skip
    session = graph.create_session(node="inbox", state={"sent": {"m1": "sent"}, "count": 1})
    session.register_actions("inbox", {"send": lambda args: None})
    fired = session.fire("inbox.send", {"id": "m1"})
    await session.wait(str(fired.transition_id), 1)
    assert session.did_it_work(str(fired.transition_id)).answer == "unobservable"
    session.report({"sent": {"m1": "bounced"}})
    later = session.did_it_work(str(fired.transition_id))
    assert later.outcome_now is not None and later.outcome_now.result is False


def _contract_session(clock: Clock) -> Session:
    graph = build_navigation_graph(
        "mail",
        {"inbox": {"actions": {"send": {
            "does": "send a message", "writes": ["count"], "verify": {"count": {"gte": 1}},
        }}}},
    )  # fmt: skip
    session = graph.create_session(node="inbox", state={"count": 0}, clock=clock)
    session.register_actions("inbox", {"send": lambda args: None})  # the app reports later
    return session


async def test_an_effect_landing_after_the_deadline_fails_however_late_the_check_runs() -> None:
    # The loop was busy for 5.3 s right after the fire; the count moved at 5.3 s. Counted
    # from when the verification task first ran, the 5 s timeout had not passed: worked.
    clock = VirtualClock()
    session = _contract_session(clock)
    fired = session.fire("inbox.send", verify_timeout_ms=5000)
    clock.stall(5.3)  # nothing ran meanwhile, the verification task included
    session.report({"count": 1})
    settled = await _waited(session, clock, str(fired.transition_id), 1)
    assert settled.effect_status == "failed"
    assert settled.failure == "verification"
    assert settled.outcome is not None
    assert (settled.outcome.passed, settled.outcome.result) == (False, True)
    assert settled.outcome.elapsed_ms == 5300
    assert settled.outcome.narrative.startswith(
        "Contract evaluated to true only on state observed after its 5000ms timeout, after 2 "
        "poll cycles (5300ms); count changed from 0 to 1. An effect observed after the "
        "deadline is a failure, however late the check ran."
    ), settled.outcome.narrative


async def test_an_effect_landing_in_time_passes_though_the_check_ran_late() -> None:
    clock = VirtualClock()
    session = _contract_session(clock)
    fired = session.fire("inbox.send", verify_timeout_ms=5000)
    clock.stall(1.0)
    session.report({"count": 1})  # lands 1 s after the fire
    clock.stall(5.0)  # and the loop stays busy past the deadline
    settled = await _waited(session, clock, str(fired.transition_id), 1)
    assert settled.effect_status == "settled"
    assert settled.outcome is not None and settled.outcome.passed
    assert settled.outcome.elapsed_ms == 6000  # checked 6 s after the fire, on 1 s's state


async def test_an_effect_in_time_passes_though_other_keys_changed_after_the_deadline() -> None:
    # Other sessions' sends went on: the state now was observed after the deadline, but the
    # count it reads has been 1 since 1 s after the fire.
    clock = VirtualClock()
    session = _contract_session(clock)
    fired = session.fire("inbox.send", verify_timeout_ms=5000)
    clock.stall(1.0)
    session.report({"count": 1})
    clock.stall(5.0)
    session.report({"others": 7})  # observed at 6 s, past the 5 s deadline
    settled = await _waited(session, clock, str(fired.transition_id), 1)
    assert settled.effect_status == "settled"
    assert settled.outcome is not None and settled.outcome.passed
    assert [change.key for change in settled.outcome.changed_fields] == ["count"]


async def test_an_effect_in_time_passes_though_it_was_undone_before_the_late_check() -> None:
    # The count was 1 from 1 s to 2 s after the fire; the check ran only at 6 s.
    clock = VirtualClock()
    session = _contract_session(clock)
    fired = session.fire("inbox.send", verify_timeout_ms=5000)
    clock.stall(1.0)
    session.report({"count": 1})
    clock.stall(1.0)
    session.report({"count": 0})
    clock.stall(4.0)
    settled = await _waited(session, clock, str(fired.transition_id), 1)
    assert settled.effect_status == "settled"
    assert settled.outcome is not None and settled.outcome.passed
    assert settled.outcome.changed_fields[0].after == 1  # the state it held on
    answer = session.did_it_work(str(fired.transition_id))
    assert answer.answer == "worked"
    assert answer.outcome_now is not None and answer.outcome_now.result is False


async def test_a_late_check_judges_the_state_when_it_was_due() -> None:
    # The handler's report landed with the fire; it was overwritten at 2 s, and the check,
    # due at once, ran at 6 s: it is made on the state as it was when due.
    clock = VirtualClock()
    graph = build_navigation_graph(
        "mail",
        {"inbox": {"actions": {"send": {
            "does": "send", "writes": ["count"], "verify": {"count": {"gte": 1}},
        }}}},
    )  # fmt: skip
    session = graph.create_session(node="inbox", state={"count": 0}, clock=clock)
    session.register_actions("inbox", {"send": lambda args: session.report({"count": 1})})
    fired = session.fire("inbox.send", verify_timeout_ms=5000)
    clock.stall(2.0)
    session.report({"count": 0})
    clock.stall(4.0)
    settled = await _waited(session, clock, str(fired.transition_id), 1)
    assert settled.effect_status == "settled"
    assert settled.outcome is not None
    assert (settled.outcome.passed, settled.outcome.poll_cycles) == (True, 2)


async def test_a_late_check_fails_what_never_held_in_time() -> None:
    # Nothing the contract reads moved in time; the count moved after the deadline, and
    # unrelated keys after that.
    clock = VirtualClock()
    session = _contract_session(clock)
    fired = session.fire("inbox.send", verify_timeout_ms=5000)
    clock.stall(5.5)
    session.report({"count": 1})
    clock.stall(1.0)
    session.report({"others": 7})
    settled = await _waited(session, clock, str(fired.transition_id), 1)
    assert settled.effect_status == "failed"
    assert settled.outcome is not None
    assert (settled.outcome.passed, settled.outcome.result) == (False, True)


async def test_settle_ms_and_elapsed_ms_count_from_the_fire() -> None:
    clock = VirtualClock()
    graph = build_navigation_graph(
        "mail",
        {"inbox": {"actions": {"send": {
            "does": "send", "writes": ["count"], "verify": {"count": {"gte": 1}},
            "settle_ms": 500,
        }}}},
    )  # fmt: skip
    session = graph.create_session(node="inbox", state={"count": 0}, clock=clock)
    session.register_actions("inbox", {"send": lambda args: session.report({"count": 1})})
    fired = session.fire("inbox.send")
    clock.stall(0.3)  # the task starts 300 ms late: 200 ms of the settlement wait are left
    settled = await _waited(session, clock, str(fired.transition_id), 0.2)
    assert settled.outcome is not None
    assert (settled.outcome.passed, settled.outcome.elapsed_ms) == (True, 500)


async def test_an_effect_landing_after_the_deadline_fails_on_a_busy_real_loop() -> None:
    session = _contract_session(SYSTEM_CLOCK)
    fired = session.fire("inbox.send", verify_timeout_ms=200)
    time.sleep(0.3)  # the loop is busy: no task runs until this returns
    session.report({"count": 1})
    settled = await session.wait(str(fired.transition_id), 5)
    assert settled.effect_status == "failed"
    assert settled.outcome is not None
    assert (settled.outcome.passed, settled.outcome.result) == (False, True)
    assert settled.outcome.elapsed_ms >= 300


async def test_a_handler_that_raised_is_its_own_problem_over_http() -> None:
    def handlers(store: Any) -> dict[str, Any]:
        def set_mode(args: dict[str, Any]) -> None:
            store.report({"drone.mode": args["mode"]})  # it did something, then raised
            raise RuntimeError("the radio link dropped")

        return {"profile.set-mode": set_mode}

    application = Application.in_process(
        GRAPH, start="profile", state=_state(), handlers=handlers, thresholds=THRESHOLDS
    )
    async with serving(application) as served, httpx.AsyncClient(base_url=served.url) as client:
        request = {"action": "profile.set-mode", "args": {"mode": "RTL"}, "wait_ms": 1000}
        response = await client.post("/v1/actions", json=request)
        body = response.json()
        transition = await client.get(f"/v1/transitions/{quote(body['transition_id'])}")
    assert response.status_code == 422
    assert body["type"] == "urn:assay:problem:handler-failed"
    assert body["title"] == "The action's handler failed"
    assert body["failure"] == "handler"
    assert body["detail"] == "the handler raised RuntimeError: the radio link dropped"
    assert body["verification"] is None
    commit = transition.json()["commit"]
    assert [(c["key"], c["before"], c["after"]) for c in commit] == [
        ("drone.mode", "GUIDED", "RTL")
    ]


async def test_a_verify_on_polled_state_checks_what_the_application_holds_now() -> None:
    app = _state()
    async with Host(_application(app, interval=60), Ledger(MemoryBackend())) as host:
        app["drone"]["mode"] = "RTL"  # after the last poll; the next is a minute away
        outcome = await host.verify(VerifyRequest(expression="drone.mode === 'RTL'", timeout_ms=0))
    assert (outcome.passed, outcome.poll_cycles) == (True, 1)
