"""The host: sessions on one application, durable evidence, idempotency, refusals with figures.

The outpost tests run the real example application on a loopback port (real time: its
effects land after real delays of a few hundred milliseconds).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from assay.clock import VirtualClock
from assay.errors import (
    ContractError,
    EvidenceStoppedError,
    IdempotencyKeyReusedError,
    LedgerError,
    NotFoundError,
    RequestError,
    WrongTypeError,
)
from assay.examples.outpost import APPLICATION, Outpost, outpost_connector
from assay.graph import build_navigation_graph
from assay.graph.answers import FROM_EVIDENCE, HELD_BEFORE_WHY
from assay.graph.result import ALREADY_TRUE_WHY
from assay.host import Application, DurableEvidence, Host
from assay.host.application import ConnectContext, Connection
from assay.host.wire import ActionRequest, ReportRequest, VerifyRequest
from assay.ledger import Ledger, SQLiteBackend
from assay.ledger.backends.memory import MemoryBackend
from assay.redaction import Redaction
from assay.state.probes import CallableProbe
from assay.state.substrate import Substrate

pytestmark = pytest.mark.anyio


def _desk_graph(**declared: Any) -> Any:
    """The desk's graph; ``declared`` overrides its one action's declaration (None drops)."""
    action = {
        "does": "Open the billing view",
        "writes": ["view.domain"],
        "verify": {"view.domain": {"eq": "billing"}},
        "input": {
            "type": "object",
            "properties": {"tab": {"type": "string", "maxLength": 5}},
            "additionalProperties": False,
        },
    } | declared
    kept = {name: value for name, value in action.items() if value is not None}
    return build_navigation_graph("desk", pages={"workspace": {"actions": {"open-billing": kept}}})


DESK = _desk_graph()


def _desk(calls: list[dict[str, Any]], graph: Any = DESK) -> Application:
    def handlers(store: Any) -> dict[str, Any]:
        def open_billing(args: dict[str, Any]) -> None:
            calls.append(args)
            store.report({"view.domain": "billing"}, source="desk")

        return {"workspace.open-billing": open_billing}

    return Application.in_process(
        graph, start="workspace", state={"view": {"domain": "home"}}, handlers=handlers
    )


@pytest.fixture
async def desk() -> AsyncIterator[tuple[Host, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    async with Host(_desk(calls), Ledger(MemoryBackend())) as host:
        yield host, calls


async def test_a_fire_answers_after_its_fire_and_settlement_are_in_the_ledger(
    desk: tuple[Host, list[dict[str, Any]]],
) -> None:
    host, calls = desk
    response = await host.fire(ActionRequest(action="workspace.open-billing", wait_ms=1000))
    assert (response.executed, response.success, response.answer) == (True, True, "worked")
    assert calls == [{}]
    kinds = [(e.kind, e.transition) for e in host.ledger.query(session=host.default_session)]
    assert kinds == [
        ("fire", "workspace.open-billing#1"),
        ("settlement", "workspace.open-billing#1"),
    ]
    assert host.ledger.verify().ok


async def test_a_fire_that_settles_while_its_evidence_is_stored_answers_as_settled(
    tmp_path: Path,
) -> None:
    # With no wait, a contract given no time settled as failed while the fire's entry was
    # being stored: the answer said "failed" with effect_status "pending" and no
    # verification, and was 200 over HTTP rather than 422.
    def handlers(store: Any) -> dict[str, Any]:
        return {"workspace.open-billing": lambda args: None}  # changes nothing

    application = Application.in_process(
        DESK, start="workspace", state={"view": {"domain": "home"}}, handlers=handlers
    )
    async with Host(application, Ledger(SQLiteBackend(tmp_path / "l.db"))) as host:
        request = ActionRequest(action="workspace.open-billing", verify_timeout_ms=0)
        response = await host.fire(request)
        assert (response.answer, response.effect_status, response.success) == (
            "failed",
            "failed",
            False,
        )
        assert response.verification is not None
        assert response.verification.passed is False
        assert response.error == response.verification.narrative
        # What it answered is durable: the settlement is in the ledger already.
        stored = host.ledger.backend.query(session=host.default_session)
        assert [entry.kind for entry in stored] == ["fire", "settlement"]


async def test_concurrent_retries_with_one_idempotency_key_fire_once(
    desk: tuple[Host, list[dict[str, Any]]],
) -> None:
    host, calls = desk
    request = ActionRequest(action="workspace.open-billing", wait_ms=1000)
    answers = await asyncio.gather(
        *(host.fire(request, idempotency_key="k-1", scope="agent") for _ in range(20))
    )
    assert len(calls) == 1
    assert {answer.transition_id for answer in answers} == {"workspace.open-billing#1"}
    assert len(host.ledger.query(kind="fire")) == 1
    other = ActionRequest(action="workspace.open-billing", args={"tab": "x"})
    with pytest.raises(IdempotencyKeyReusedError, match="first used for a different request"):
        await host.fire(other, idempotency_key="k-1", scope="agent")
    # The default session by any name is the same request, here as over HTTP.
    for named in ("default", host.default_session):
        retry = ActionRequest(action="workspace.open-billing", session=named, wait_ms=1000)
        again = await host.fire(retry, idempotency_key="k-1", scope="agent")
        assert again.transition_id == "workspace.open-billing#1"
    # The same key in another scope (another token) is another request.
    await host.fire(request, idempotency_key="k-1", scope="someone-else")
    assert len(calls) == 2


async def test_arguments_that_break_the_input_schema_are_refused_naming_the_argument(
    desk: tuple[Host, list[dict[str, Any]]],
) -> None:
    host, calls = desk
    response = await host.fire(
        ActionRequest(action="workspace.open-billing", args={"tab": "much-too-long"})
    )
    assert response.refusal == "bad_arguments"
    assert response.error == ("workspace.open-billing: args['tab']: 'much-too-long' is too long")
    assert calls == []
    assert [e.kind for e in host.ledger.query()] == ["refusal"]


async def test_unknown_sessions_and_transitions_say_what_to_do(
    desk: tuple[Host, list[dict[str, Any]]],
) -> None:
    host, _ = desk
    with pytest.raises(NotFoundError, match="open one with POST /v1/sessions") as caught:
        host.session("nope")
    assert (caught.value.kind, caught.value.id) == ("session", "nope")
    with pytest.raises(NotFoundError, match=r"look like page\.action#N"):
        host.did_it_work(None, "workspace.open-billing#9")
    with pytest.raises(RequestError, match="no page is called 'attic'"):
        host.open_session("attic")


async def test_a_closed_session_is_named_as_closed_for_as_long_as_the_host_remembers_it(
    desk: tuple[Host, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    host, _ = desk
    monkeypatch.setattr("assay.host.session_registry.CLOSED_REMEMBERED", 2)
    ids = [host.open_session().id for _ in range(3)]
    for session_id in ids:
        await host.close_session(session_id)
    with pytest.raises(NotFoundError, match="no session is called"):
        host.session(ids[0])  # the oldest of three, forgotten
    for session_id in ids[1:]:
        with pytest.raises(NotFoundError, match=f"the session '{session_id}' was closed;"):
            host.did_it_work(session_id, "workspace.open-billing#1")
    reopened = host.open_session(session_id=ids[2])
    assert host.session(ids[2]) is reopened


async def test_sessions_are_listed_a_page_at_a_time_in_the_order_opened(
    desk: tuple[Host, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GET /v1/sessions answered every open session at once, on the event loop.
    host, _ = desk
    monkeypatch.setattr("assay.host.session_registry.CLOSED_REMEMBERED", 2)
    opened = [host.open_session().id for _ in range(5)]
    every = [host.default_session, *opened]

    def ids(**paging: Any) -> list[str]:
        return [session.id for session in host.list_sessions(**paging)]

    assert ids() == every
    assert ids(limit=2) == every[:2]
    assert ids(after=every[1], limit=2) == every[2:4]
    assert ids(after="default", limit=1) == every[1:2]  # "default" names it, as elsewhere
    assert ids(after=every[-1]) == []
    # A page goes on after a session closed since it was listed, and a reopened id goes last.
    await host.close_session(opened[1])
    assert ids(after=opened[1]) == opened[2:]
    reopened = host.open_session(session_id=opened[0]).id
    assert ids() == [host.default_session, *opened[2:], reopened]
    # Once its id is forgotten (the host remembers the latest closed), it names no session.
    for session_id in opened[2:4]:
        await host.close_session(session_id)
    with pytest.raises(NotFoundError, match=r"after: no session is called '.*'; page on with"):
        ids(after=opened[1])
    with pytest.raises(WrongTypeError, match="limit must be a whole number"):
        ids(limit=-1)


async def test_a_settlement_whose_changes_hold_an_integer_beyond_2_53_is_recorded(
    desk: tuple[Host, list[dict[str, Any]]],
) -> None:
    # RFC 8785 carries numbers as doubles; the state stores a big integer as the double it
    # rounds to (as JSON.parse does), so the settlement that shows it can be written.
    host, _ = desk
    host.report(ReportRequest(values={"view.domain": 2**70 + 1}))
    response = await host.fire(ActionRequest(action="workspace.open-billing", wait_ms=1000))
    assert response.answer == "worked"
    fire, settlement = host.ledger.query(session=host.default_session)
    assert (fire.kind, settlement.kind) == ("fire", "settlement")
    (change,) = settlement.body["outcome"]["changed_fields"]
    assert (change["key"], change["before"], change["after"]) == (
        "view.domain",
        1.1805916207174113e21,
        "billing",
    )
    assert host.ledger.verify().ok


async def test_a_handlers_error_with_undecodable_bytes_in_it_is_still_recorded() -> None:
    # A file name read with surrogateescape keeps its undecodable bytes as half surrogate
    # pairs, which no JSON can carry; the settlement escapes them rather than losing itself.
    def handlers(store: Any) -> dict[str, Any]:
        def open_billing(args: dict[str, Any]) -> None:
            raise RuntimeError(b"report-\xff.csv is missing".decode("utf-8", "surrogateescape"))

        return {"workspace.open-billing": open_billing}

    app = Application.in_process(
        DESK, start="workspace", state={"view": {"domain": "home"}}, handlers=handlers
    )
    async with Host(app, Ledger(MemoryBackend())) as host:
        response = await host.fire(ActionRequest(action="workspace.open-billing", wait_ms=500))
        assert (response.executed, response.answer) == (True, "failed")
        error = "the handler raised RuntimeError: report-\\udcff.csv is missing"
        assert response.error == error
        fire, settlement = host.ledger.query()
        assert (fire.kind, settlement.kind, settlement.body["error"]) == (
            "fire",
            "settlement",
            error,
        )
        assert host.ledger.verify().ok


async def test_a_fire_whose_args_cannot_be_recorded_is_refused_before_anything_runs() -> None:
    calls: list[dict[str, Any]] = []
    app = _desk(calls, _desk_graph(single_flight=True, input=None))
    async with Host(app, Ledger(MemoryBackend())) as host:
        huge = ActionRequest(action="workspace.open-billing", args={"n": 2**70}, wait_ms=500)
        refused = await host.fire(huge)
        assert (refused.executed, refused.refusal) == (False, "bad_arguments")
        assert refused.error is not None
        assert refused.error == (
            "args.n: the integer 1180591620717411303424 is beyond ±(2**53 - 1), where JSON "
            "numbers stop being exact; send it as a string"
        )
        # Before, the unrecorded fire held the single flight for ever.
        fine = ActionRequest(action="workspace.open-billing", wait_ms=1000)
        assert (await host.fire(fine)).answer == "worked"
        assert calls == [{}]
        entries = host.ledger.query()
        assert [(e.kind, e.transition) for e in entries] == [
            ("refusal", "workspace.open-billing#1"),
            ("fire", "workspace.open-billing#2"),
            ("settlement", "workspace.open-billing#2"),
        ]
        assert entries[0].body["args"] is None
        assert host.did_it_work(None, "workspace.open-billing#1").answer == "refused"


async def test_state_selects_keys_and_reports_wake_sessions(
    desk: tuple[Host, list[dict[str, Any]]],
) -> None:
    host, _ = desk
    receipt = host.report(ReportRequest(values={"view.domain": "billing", "user.name": "ada"}))
    assert receipt.changed
    again = host.report(ReportRequest(values={"view.domain": "billing"}))
    assert (again.changed, again.version) == (False, receipt.version)
    assert host.state(["user.name", "view.missing"]).objects == {"user": {"name": "ada"}}
    outcome = await host.verify(VerifyRequest(expression="view.domain === 'billing'"))
    assert outcome.passed
    (verdict,) = host.ledger.query(kind="verdict")
    assert verdict.body["outcome"]["passed"] is True


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_durable_evidence_keeps_order_and_answers_after_storing(
    store: str, tmp_path: Path
) -> None:
    # Memory is stored to at once on the caller's thread; SQLite through the writer thread.
    backend = MemoryBackend() if store == "memory" else SQLiteBackend(tmp_path / "ledger.db")
    ledger = Ledger(backend)
    evidence = DurableEvidence(ledger)
    assert evidence.inline is (store == "memory")
    tickets = [evidence.append("fire", {"n": n}, session="s") for n in range(1000)]
    await evidence.durable(tickets[499])
    assert ledger.size >= 500
    await evidence.durable()
    assert [entry.body["n"] for entry in ledger.query()] == list(range(1000))
    assert evidence.pending == 0
    evidence.close()
    assert ledger.verify().ok
    ledger.close()


async def test_durable_evidence_keeps_each_tasks_order_across_batches(tmp_path: Path) -> None:
    # Sixteen tasks each wait for their entry before drafting the next: the writer commits
    # whatever is queued when it runs, so batches mix tasks and rounds, and each task's
    # entries must still be stored in the order it drafted them.
    backend = SQLiteBackend(tmp_path / "ledger.db")
    ledger = Ledger(backend)
    batches: list[list[tuple[int, int]]] = []
    backend.add_commit_listener(
        lambda entries: batches.append([(e.body["task"], e.body["round"]) for e in entries])
    )
    evidence = DurableEvidence(ledger)
    tasks, rounds = 16, 10

    async def appender(task: int) -> None:
        for round_ in range(rounds):
            ticket = evidence.append("fire", {"task": task, "round": round_}, session="s")
            await evidence.durable(ticket)

    await asyncio.gather(*(appender(task) for task in range(tasks)))
    evidence.close()
    sizes = [len(batch) for batch in batches]
    assert sum(sizes) == tasks * rounds
    assert max(sizes) > 1, sizes  # tasks waiting together shared commits
    stored = [pair for batch in batches for pair in batch]
    for task in range(tasks):
        assert [r for t, r in stored if t == task] == list(range(rounds))
    assert ledger.verify().ok
    ledger.close()


async def test_durable_evidence_stores_a_lone_callers_entry_on_the_loop(tmp_path: Path) -> None:
    # One caller at a time: the loop stores its entry itself, sparing it two thread
    # wake-ups. Callers waiting together, or entries nobody waits for, go to the writer.
    backend = SQLiteBackend(tmp_path / "ledger.db")
    ledger = Ledger(backend)
    committed_by: list[tuple[int, int]] = []
    seventh_commit = threading.Event()

    def record(entries: list[Any]) -> None:
        committed_by.append((threading.get_ident(), len(entries)))
        if len(committed_by) == 7:
            seventh_commit.set()

    backend.add_commit_listener(record)
    evidence = DurableEvidence(ledger)
    loop_thread = threading.get_ident()

    for n in range(5):
        await evidence.durable(evidence.append("fire", {"n": n}, session="s"))
    assert committed_by == [(loop_thread, 1)] * 5
    assert evidence.commits_in_place == 5

    async def together(n: int) -> None:
        await evidence.durable(evidence.append("fire", {"n": n}, session="s"))

    await asyncio.gather(*(together(n) for n in range(5, 13)))
    writer, together_batch = committed_by[5]
    assert (together_batch, len(committed_by)) == (8, 6)
    assert writer != loop_thread

    evidence.append("fire", {"n": 13}, session="s")  # nobody awaits it: the writer stores it
    assert await asyncio.to_thread(seventh_commit.wait, 30)
    assert committed_by[6] == (writer, 1)
    await evidence.durable(evidence.append("fire", {"n": 14}, session="s"))
    assert committed_by[7] == (loop_thread, 1)
    assert (evidence.commits, evidence.commits_in_place) == (8, 6)

    evidence.close()
    assert [entry.body["n"] for entry in ledger.query()] == list(range(15))
    assert ledger.verify().ok
    ledger.close()


async def test_durable_evidence_reports_a_failed_store_on_the_loop(tmp_path: Path) -> None:
    backend = SQLiteBackend(tmp_path / "ledger.db")
    ledger = Ledger(backend)
    evidence = DurableEvidence(ledger)
    await evidence.durable(evidence.append("fire", {"n": 0}, session="s"))
    backend.close()  # the next store fails, in place, as a lone caller's would
    ticket = evidence.append("fire", {"n": 1}, session="s")
    with pytest.raises(EvidenceStoppedError, match="is closed; open it again") as caught:
        await evidence.durable(ticket)
    assert str(caught.value).endswith(
        "; evidence stopped being recorded at that failure, and actions with it, so that none "
        "runs unrecorded: restart once the ledger is back"
    )
    assert isinstance(caught.value.__cause__, LedgerError)
    assert evidence.commits_in_place == 1
    with pytest.raises(EvidenceStoppedError, match="is closed"):
        evidence.append("fire", {"n": 2}, session="s")
    evidence.close()


async def test_once_evidence_stops_no_action_runs_unrecorded(tmp_path: Path) -> None:
    calls: list[dict[str, Any]] = []
    backend = SQLiteBackend(tmp_path / "ledger.db")
    async with Host(_desk(calls), Ledger(backend)) as host:
        request = ActionRequest(action="workspace.open-billing", wait_ms=1000)
        assert (await host.fire(request)).answer == "worked"
        backend.close()  # the ledger fails from here on
        with pytest.raises(EvidenceStoppedError):
            await host.fire(request)  # its fire was queued before the store failed: it ran
        assert len(calls) == 2
        with pytest.raises(EvidenceStoppedError, match="restart once the ledger is back"):
            await host.fire(request)
        assert len(calls) == 2  # refused before its handler, which never ran


async def test_the_outpost_journey_through_the_host() -> None:
    outpost = Outpost(delivery_delay=0.2, mode_delay=0.1, release_delay=0.1, mode="GUIDED")
    application = Application(APPLICATION.graph, start="inbox", connect=outpost_connector(outpost))
    async with Host(application, Ledger(MemoryBackend())) as host:
        sent = await host.fire(
            ActionRequest(action="inbox.send", args={"message_id": "m1", "to": "ops"}, wait_ms=3000)
        )
        assert sent.answer == "worked"
        assert sent.verification is not None
        assert {c.key for c in sent.verification.changed_fields} >= {"inbox.sent_count"}

        silent = await host.fire(ActionRequest(action="inbox.mark-all-read", wait_ms=3000))
        assert (silent.executed, silent.success, silent.effect_status) == (True, False, "failed")
        assert silent.verification is not None
        assert silent.verification.changed_fields == []
        assert "inbox.unread remained 3" in silent.verification.narrative

        await host.fire(ActionRequest(action="inbox.open-drone", wait_ms=1000))
        same = await host.fire(
            ActionRequest(action="drone.set-mode", args={"mode": "GUIDED"}, wait_ms=2000)
        )
        assert same.already_true is not None
        assert [c.key for c in same.already_true] == ["drone.mode"]

        outpost.link = "down"
        await _until(lambda: host.substrate.confidence().value < 0.95)
        refused = await host.fire(ActionRequest(action="drone.release-payload"))
        assert refused.refusal == "low_confidence"
        figures = refused.refusal_figures
        assert figures is not None and figures.threshold == 0.95
        assert figures.confidence is not None and figures.confidence < 0.95
        assert outpost.state["drone"]["payload"] == "stowed"

        outpost.link = "ok"
        await _until(lambda: host.substrate.confidence().value >= 0.95)
        released = await host.fire(ActionRequest(action="drone.release-payload", wait_ms=3000))
        assert released.answer == "worked"
        assert host.ledger.verify().ok


async def _until(condition: Any, timeout: float = 10.0) -> None:
    """Wait for a condition the real application reaches by itself (its probe reads)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, "the condition did not come about in time"
        await asyncio.sleep(0.05)


async def test_a_session_no_request_names_for_its_idle_time_expires_unless_busy() -> None:
    # Sessions stayed open until closed: an agent that died left its session, and its
    # subscription to every state change, in the daemon for good. Here the host looks for
    # idle sessions every 60 s of its clock and closes those unnamed for 250 s or more.
    clock = VirtualClock()
    release = asyncio.Event()

    def handlers(store: Any) -> dict[str, Any]:
        async def open_billing(args: dict[str, Any]) -> None:
            if args.get("tab") == "run":
                await release.wait()  # the handler runs on until released
                store.report({"view.domain": "billing"}, source="desk")
            # else it returns having written nothing: pending on a state report

        return {"workspace.open-billing": open_billing}

    application = Application.in_process(
        DESK, start="workspace", state={"view": {"domain": "home"}}, handlers=handlers
    )
    ledger = Ledger(MemoryBackend())
    async with Host(application, ledger, clock=clock, session_idle_s=250) as host:
        idle, used, waiting, running = (host.open_session().id for _ in range(4))
        for session, tab, timeout_ms in ((waiting, "wait", 590_000), (running, "run", None)):
            request = ActionRequest(
                session=session,
                action="workspace.open-billing",
                args={"tab": tab},
                verify_timeout_ms=timeout_ms,
            )
            assert (await host.fire(request)).answer == "pending"

        async def at(moment: float) -> set[str]:
            await clock.advance(moment - clock.monotonic())
            await clock.settle()
            return set(host.sessions) - {host.default_session}

        assert await at(249) == {idle, used, waiting, running}
        host.actions(used)  # naming a session is using it
        assert await at(310) == {used, waiting, running}  # the look at 300 s
        with pytest.raises(NotFoundError) as caught:
            host.did_it_work(idle, "workspace.open-billing#1")
        assert str(caught.value) == (
            f"the session {idle!r} expired: no request named it for 250 s; what it fired and "
            f"how each settled is in the ledger (GET /v1/ledger/entries?session={idle})"
        )
        assert host.did_it_work(waiting, "workspace.open-billing#1").answer == "pending"
        assert await at(590) == {waiting, running}  # used was last named at 249 s
        # At 590 s the waiting transition timed out; at 600 s nothing keeps its session. The
        # running handler keeps its own until it finishes, and 250 s more.
        assert await at(700) == {running}
        release.set()
        assert await at(899) == {running}
        assert await at(901) == set()
        assert [e.kind for e in ledger.query(session=waiting)] == ["fire", "settlement"]


async def test_sessions_never_expire_without_an_idle_time() -> None:
    clock = VirtualClock()
    decade = 10 * 365 * 86400
    # A lease longer than the wait: renewed every 10 s, it would wake the clock 30 million times.
    host = Host(
        _desk([]), Ledger(MemoryBackend()), clock=clock, session_idle_s=None, lease_s=decade
    )
    async with host:
        opened = host.open_session().id
        await clock.advance(decade)
        assert await host.expire_idle() == []
        assert host.session(opened).id == opened
    for wrong in (0, -1, float("nan"), float("inf"), "600", True):
        with pytest.raises(WrongTypeError, match="session_idle_s must be a positive number"):
            Host(_desk([]), Ledger(MemoryBackend()), session_idle_s=wrong)  # type: ignore[arg-type]


async def test_a_transition_the_session_let_go_is_answered_from_the_ledger(
    desk: tuple[Host, list[dict[str, Any]]],
) -> None:
    # A session holds only its latest settled transitions; asked about an older one, it
    # answered 404 though the ledger held the whole answer.
    host, _ = desk
    session = host.open_session()
    session.keep_settled = 3
    fire = ActionRequest(session=session.id, action="workspace.open-billing", wait_ms=1000)
    worked = await host.fire(fire)  # #1: the view turns to billing
    already = await host.fire(fire)  # #2: already true before it fired
    refused = await host.fire(fire.model_copy(update={"args": {"tab": "much-too-long"}}))  # #3
    ids = [worked.transition_id or "", already.transition_id or "", refused.transition_id or ""]
    assert refused.answer == "refused"
    held = [host.did_it_work(session.id, transition_id) for transition_id in ids]
    assert [answer.answer for answer in held] == ["worked", "unobservable", "refused"]
    assert held[1].already_true is not None
    for _ in range(3):
        await host.fire(fire)
    assert all(session.let_go(transition_id) for transition_id in ids)

    for before, transition_id in zip(held, ids, strict=True):
        after = host.did_it_work(session.id, transition_id)
        assert after.why == before.why + FROM_EVIDENCE
        assert after.model_dump(exclude={"why", "result", "outcome_now"}) == before.model_dump(
            exclude={"why", "result", "outcome_now"}
        )
        assert await host.adid_it_work(session.id, transition_id) == after  # read in a thread
        waited = await host.wait(session.id, transition_id, 1000)
        assert waited == after
    with pytest.raises(NotFoundError, match=r"has no transition 'workspace\.open-billing#99'"):
        host.did_it_work(session.id, "workspace.open-billing#99")


async def test_a_withheld_key_is_shown_withheld_never_missing_or_with_a_made_up_side() -> None:
    # keys=secrets.api_key answered {} under a withheld secrets: the same as a missing key.
    # And an added withheld leaf showed "[redacted]" as its value before it existed.
    application = Application.in_process(
        DESK,
        start="workspace",
        state={"view": {"domain": "home"}, "secrets": {"a": 1}},
        handlers=lambda store: {},
    )
    ledger = Ledger(MemoryBackend())
    async with Host(application, ledger, redaction=Redaction(["secrets", "view.token"])) as host:
        for keys in (["secrets.a"], ["secrets.a.b", "view.missing"]):
            assert host.state(keys).objects == {"secrets": "[redacted]"}
        request = VerifyRequest(expression="view.token !== undefined", timeout_ms=5000)
        verifying = asyncio.ensure_future(host.verify(request))
        await asyncio.sleep(0)  # it has taken its first look
        host.report(ReportRequest(values={"view.token": "t-1"}))
        outcome = await verifying
        assert outcome.passed
    (added,) = [change for change in outcome.changed_fields if change.key == "view.token"]
    assert (added.before, added.after, added.kind) == (None, "[redacted]", "added")


async def test_a_wait_on_a_transition_whose_session_closes_answers_how_it_settled() -> None:
    # It answered 404 "the session was closed", though closing settled the transition.
    application = Application.in_process(
        DESK,
        start="workspace",
        state={"view": {"domain": "home"}},
        handlers=lambda store: {"workspace.open-billing": lambda args: None},
    )
    async with Host(application, Ledger(MemoryBackend())) as host:
        session = host.open_session().id
        request = ActionRequest(session=session, action="workspace.open-billing")
        fired = await host.fire(request)
        assert fired.answer == "pending"
        waiting = asyncio.ensure_future(host.wait(session, fired.transition_id or "", 30_000))
        await asyncio.sleep(0)
        await host.close_session(session)
        answer = await waiting
    assert (answer.session, answer.answer) == (session, "unobservable")
    assert answer.error is not None
    assert answer.error.startswith("the session was closed while it waited on the verify contract")


async def test_a_verify_contract_with_placeholders_says_a_verify_has_no_arguments(
    desk: tuple[Host, list[dict[str, Any]]],
) -> None:
    # It said "call bind(args) before check": advice for Python code, not for the caller.
    host, _ = desk
    with pytest.raises(ContractError) as caught:
        await host.verify(VerifyRequest(expression={"orders.{order_id}.status": "cancelled"}))
    assert str(caught.value) == (
        "the contract holds placeholders ({order_id}), which only an action's arguments fill, "
        "and a verify has none; write each key in full, such as orders.A1.status rather than "
        "orders.{order_id}.status"
    )
    assert host.ledger.query(kind="verdict") == []


async def test_an_already_true_fire_answers_with_how_it_settled_after_the_evidence() -> None:
    # Its why was the already-true sentence alone: how it settled was dropped (the contract
    # held before the fire too, here), and another fire's credit survived only in error.
    application = Application.in_process(
        DESK,
        start="workspace",
        state={"view": {"domain": "billing"}, "x": 2},
        handlers=lambda store: {"workspace.open-billing": lambda args: None},
    )
    async with Host(application, Ledger(MemoryBackend())) as host:
        request = ActionRequest(
            action="workspace.open-billing", verify_expression="x > 1", wait_ms=5000
        )
        fired = await host.fire(request)
        settled = host.did_it_work(None, fired.transition_id or "")
    assert fired.already_true is not None
    assert (fired.answer, settled.answer) == ("unobservable", "unobservable")
    assert settled.why.startswith(HELD_BEFORE_WHY)
    assert fired.why == f"{ALREADY_TRUE_WHY} {settled.why}"


LAMP = build_navigation_graph(
    "lamp",
    pages={
        "room": {
            "actions": {
                "switch-on": {
                    "does": "Switch the lamp on",
                    "writes": ["lamp.on"],
                    "verify": {"lamp.on": {"eq": True}},
                }
            }
        }
    },
)


def _polled_lamp(lamp: dict[str, Any], reads: list[float], clock: VirtualClock) -> Application:
    """The lamp, seen only through a probe polled every 0.5 s, each read taking
    ``lamp["read_s"]`` (0 when not given), or failing while ``lamp["broken"]``; the time
    each read started is added to ``reads``."""

    async def read() -> dict[str, Any]:
        reads.append(clock.monotonic())
        if lamp.get("broken"):
            raise RuntimeError("the lamp's controller does not answer")
        if lamp.get("read_s"):
            await clock.sleep(lamp["read_s"])
        return {"lamp.on": lamp["on"]}

    async def connect(context: ConnectContext) -> Connection:
        substrate = Substrate(
            probes=[CallableProbe(read, name="lamp", interval=0.5)],
            declared_keys=LAMP.declared_writes(),
            clock=context.clock,
        )
        return Connection(substrate, {"room.switch-on": lambda args: lamp.update(on=True)})

    return Application(LAMP, "room", connect)


async def test_a_polled_change_made_before_the_fire_is_never_credited_to_it() -> None:
    # The lamp came on at 0.4 s, between two polls, and the agent switched it on at 0.45 s:
    # the fire's pre-action snapshot was the poll of 0 s, so it answered worked for a change
    # made before it fired. The host now reads the probes afresh before each fire.
    clock = VirtualClock()
    lamp: dict[str, Any] = {"on": False}
    reads: list[float] = []
    async with Host(_polled_lamp(lamp, reads, clock), Ledger(MemoryBackend()), clock=clock) as h:
        await clock.advance(0.4)
        lamp["on"] = True  # the application's own doing, before the agent fires
        await clock.advance(0.05)
        request = ActionRequest(action="room.switch-on", wait_ms=2000)
        firing = asyncio.ensure_future(h.fire(request))
        await clock.advance(2)
        fired = await firing
    assert fired.answer == "unobservable"
    assert 0.45 in reads  # read as it fired, not at the next poll
    assert fired.already_true is not None
    assert fired.already_true[0].actual_summary == "true"


async def test_fires_made_while_a_read_is_under_way_share_the_next_read() -> None:
    # Each fire reads the probes afresh; those asking while a read is under way (it started
    # before they asked, so it may miss what they saw) share one read started after it.
    clock = VirtualClock()
    lamp: dict[str, Any] = {"on": False}
    reads: list[float] = []
    async with Host(_polled_lamp(lamp, reads, clock), Ledger(MemoryBackend()), clock=clock) as h:
        await clock.advance(0.2)
        lamp["read_s"] = 0.1
        sessions = [h.open_session().id for _ in range(3)]
        before = len(reads)
        fires = [asyncio.ensure_future(h.fire(ActionRequest(action="room.switch-on")))]
        await clock.settle()  # its read is under way
        for session in sessions:
            request = ActionRequest(action="room.switch-on", session=session, wait_ms=1000)
            fires.append(asyncio.ensure_future(h.fire(request)))
        await clock.advance(0.35)
        answers = await asyncio.gather(*fires)
    # The first fire's read, then one for the other three; then one, begun after their
    # handlers returned, that settles those three (already true, nothing changed); then the
    # poll due at 0.5 s.
    assert reads[before:] == pytest.approx([0.2, 0.3, 0.4, 0.5])
    assert [a.answer for a in answers] == [
        "pending",
        "unobservable",
        "unobservable",
        "unobservable",
    ]


async def test_a_fire_whose_fresh_read_fails_is_judged_with_the_confidence_that_leaves() -> None:
    # The read before the fire fails: the fire is neither stopped by it nor judged as if
    # the state were fresh; the failure is in the probe's health, so in the confidence gate.
    clock = VirtualClock()
    lamp: dict[str, Any] = {"on": False}
    reads: list[float] = []
    application = _polled_lamp(lamp, reads, clock)
    ledger = Ledger(MemoryBackend())
    async with Host(application, ledger, clock=clock, thresholds={"reversible": 0.7}) as h:
        await clock.advance(0.2)
        lamp["broken"] = True
        fired = await h.fire(ActionRequest(action="room.switch-on"))
        (probe,) = h.substrate.sources()
    assert reads[-1] == 0.2
    assert probe.last_error == "RuntimeError: the lamp's controller does not answer"
    assert fired.refusal == "low_confidence"
    assert fired.refusal_figures is not None
    assert fired.refusal_figures.health == pytest.approx(2 / 3)


SHOP = build_navigation_graph(
    "shop",
    pages={
        "desk": {
            "actions": {
                "create": {
                    "does": "create an order",
                    "writes": ["orders.{id}.status"],
                    "verify": {"orders.{id}.status": {"eq": "open"}},
                }
            }
        }
    },
)


async def test_a_record_created_before_the_fire_under_a_probes_keys_is_never_credited_to_it() -> (
    None
):
    # The probe answers a key per record (orders.o1.status), so before o2 exists no key it
    # answers names o2. Reading afresh only the probes whose last keys bear on the fire
    # skipped it, and a create of o2, made by the application between two polls, answered
    # worked. Every probe is read before every fire.
    clock = VirtualClock()
    records = {"o1": "open"}
    reads: list[float] = []

    async def read() -> dict[str, Any]:
        reads.append(clock.monotonic())
        return {f"orders.{key}.status": status for key, status in records.items()}

    async def connect(context: ConnectContext) -> Connection:
        substrate = Substrate(
            probes=[CallableProbe(read, name="orders", interval=0.5)],
            declared_keys=SHOP.declared_writes(),
            clock=context.clock,
        )
        return Connection(substrate, {"desk.create": lambda args: None})  # does nothing

    application = Application(SHOP, "desk", connect)
    thresholds = {"reversible": 0}  # orders.{id}.status is no key before a fire: no coverage
    async with Host(application, Ledger(MemoryBackend()), clock=clock, thresholds=thresholds) as h:
        await clock.advance(0.4)
        records["o2"] = "open"  # the application's own doing, before the agent fires
        await clock.advance(0.05)
        request = ActionRequest(action="desk.create", args={"id": "o2"}, wait_ms=2000)
        firing = asyncio.ensure_future(h.fire(request))
        await clock.advance(2)
        fired = await firing
    assert 0.45 in reads
    assert fired.answer == "unobservable"
    assert fired.already_true is not None
