"""``assay.verified``: a tool's calls fired, verified and answered, on virtual and real time."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pydantic
import pytest

from assay import Ledger, Verification, Verified, verified
from assay.clock import VirtualClock
from assay.errors import GraphError, SessionError
from assay.ledger import MemoryBackend
from assay.state.probes import CallableProbe
from assay.state.snapshot import FieldChange
from assay.state.store import StateStore
from assay.state.substrate import Substrate
from outbox import ALREADY_TRUE, PENDING, SENT, WAITING_ON

T = TypeVar("T")


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


def inbox(clock: VirtualClock, **statuses: str) -> Substrate:
    """Pushed state: each message's status, heard from just now."""
    state = {"inbox": {"sent": {key: {"status": value} for key, value in statuses.items()}}}
    substrate = Substrate(StateStore(state, clock=clock), clock=clock)
    substrate.store.heartbeat("app")
    return substrate


def sender(substrate: Substrate, *, sends: bool = True, **options: Any) -> Any:
    """``send_message``, verified on ``substrate``; it marks the message sent when ``sends``."""
    calls: list[tuple[str, str, str]] = []

    @verified(writes=[SENT], verify={SENT: "sent"}, substrate=substrate, **options)
    async def send_message(message_id: str, to: str, subject: str = "") -> dict[str, str]:
        """Send the drafted message ``message_id`` to ``to``.

        The second paragraph is not part of the action's description."""
        calls.append((message_id, to, subject))
        if sends:
            substrate.store.report({f"inbox.sent.{message_id}.status": "sent"})
        return {"id": message_id}

    send_message.calls = calls
    return send_message


def test_an_async_tool_whose_effect_lands_worked() -> None:
    async def main(clock: VirtualClock) -> Verified:
        return await sender(inbox(clock, m1="draft"), timeout_ms=3000)("m1", to="ann")  # type: ignore[no-any-return]

    returned = run(main)
    assert returned.result == {"id": "m1"}
    assert returned.verification == Verification(
        answer="worked",
        why="Contract evaluated to true after 2 poll cycles (0ms); inbox.sent.m1.status changed "
        'from "draft" to "sent".',
        transition_id="tools.send_message#1",
        narrative="Contract evaluated to true after 2 poll cycles (0ms); inbox.sent.m1.status "
        'changed from "draft" to "sent".',
        changed_fields=[FieldChange("inbox.sent.m1.status", "draft", "sent", "changed")],
    )
    assert returned.summary == (
        "send_message: worked. Contract evaluated to true after 2 poll cycles (0ms); "
        'inbox.sent.m1.status changed from "draft" to "sent".'
    )
    dumped = returned.model_dump(mode="json")
    assert dumped["verification"]["changed_fields"] == [
        {"key": "inbox.sent.m1.status", "before": "draft", "after": "sent", "kind": "changed"}
    ]
    assert Verified.model_validate_json(returned.model_dump_json()) == returned


def test_a_silent_no_op_failed_naming_the_unchanged_key() -> None:
    async def main(clock: VirtualClock) -> Verified:
        send = sender(inbox(clock, m1="draft"), sends=False, timeout_ms=3000)
        call = asyncio.ensure_future(send("m1", to="ann"))
        await clock.advance(3.0)
        return await call

    returned = run(main)
    assert returned.result == {"id": "m1"}
    assert returned.verification.answer == "failed"
    assert returned.verification.failure == "verification"
    assert returned.summary == (
        'send_message: failed (verification). inbox.sent.m1.status remained "draft" after 1 '
        "poll cycle (3000ms); nothing observable changed. The action may have failed silently."
    )


def test_an_already_true_call_carries_its_evidence_and_the_tool_still_ran() -> None:
    async def main(clock: VirtualClock) -> tuple[Verified, Any]:
        send = sender(inbox(clock, m1="sent"), sends=False, timeout_ms=3000)
        return await send("m1", to="ann"), send.calls

    returned, calls = run(main)
    assert calls == [("m1", "ann", "")]
    assert returned.result == {"id": "m1"}
    verification = returned.verification
    assert verification.answer == "already_true"
    assert [
        (e.key, e.op, e.threshold, e.actual_summary, e.result)
        for e in verification.already_true or []
    ] == [("inbox.sent.m1.status", "eq", "sent", '"sent"', True)]
    assert returned.summary == ALREADY_TRUE


def test_a_late_effect_is_pending_at_the_ceiling_then_settles() -> None:
    async def main(clock: VirtualClock) -> tuple[Verified, Verification]:
        substrate = inbox(clock, m1="draft")
        send = sender(substrate, sends=False, timeout_ms=1000, verify_timeout_ms=10_000)
        call = asyncio.ensure_future(send("m1", to="ann"))
        await clock.advance(1.0)
        returned = await call
        await clock.advance(2.0)
        substrate.store.report({"inbox.sent.m1.status": "sent"})
        await clock.settle()
        return returned, send.did_it_work(returned.verification.transition_id)

    returned, later = run(main)
    assert returned.verification.answer == "pending"
    assert returned.verification.waiting_on == WAITING_ON
    assert returned.verification.pending_for_ms == 1000
    assert returned.summary == PENDING
    assert later.answer == "worked"
    assert later.changed_fields == [FieldChange("inbox.sent.m1.status", "draft", "sent", "changed")]


def test_a_raising_tool_raises_its_own_error_and_the_ledger_records_the_failure() -> None:
    ledger = Ledger(MemoryBackend())

    async def main(clock: VirtualClock) -> None:
        @verified(writes=[SENT], verify={SENT: "sent"}, substrate=inbox(clock), ledger=ledger)
        async def send_message(message_id: str) -> None:
            raise ValueError("mailbox full")

        await send_message("m1")

    with pytest.raises(ValueError, match="mailbox full") as raised:
        run(main)
    assert raised.value.__notes__ == [
        "assay: send_message: failed (handler). the handler raised ValueError: mailbox full"
    ]
    entries = list(ledger.iterate())
    assert [entry.kind for entry in entries] == ["fire", "settlement"]
    assert entries[0].body["args"] == {"message_id": "m1"}
    assert entries[1].body["answer"] == "failed"
    assert entries[1].body["error"] == "the handler raised ValueError: mailbox full"


def test_placeholders_come_from_positional_keyword_and_default_arguments() -> None:
    ledger = Ledger(MemoryBackend())

    async def main(clock: VirtualClock) -> list[Verified]:
        substrate = Substrate(StateStore({"folders": {}}, clock=clock), clock=clock)
        substrate.store.heartbeat("app")

        @verified(
            writes=["folders.{folder}.{message_id}"],
            verify={"folders.{folder}.{message_id}": {"eq": {"arg": "label"}}},
            substrate=substrate,
            ledger=ledger,
            name="file",
        )
        async def file(folder: str, message_id: str, label: str = "filed") -> None:
            """File a message under a label."""
            substrate.store.report({f"folders.{folder}.{message_id}": label})

        return [
            await file("archive", "m1"),
            await file("archive", message_id="m2", label="kept"),
            await file(folder="trash", message_id="m3"),
        ]

    returned = run(main)
    assert [r.verification.answer for r in returned] == ["worked", "worked", "worked"]
    assert [r.verification.changed_fields for r in returned] == [
        [FieldChange("folders.archive.m1", None, "filed", "added")],
        [FieldChange("folders.archive.m2", None, "kept", "added")],
        [FieldChange("folders.trash.m3", None, "filed", "added")],
    ]
    fires = [entry.body for entry in ledger.iterate() if entry.kind == "fire"]
    assert [(body["args"], body["writes"]) for body in fires] == [
        ({"folder": "archive", "message_id": "m1", "label": "filed"}, ["folders.archive.m1"]),
        ({"folder": "archive", "message_id": "m2", "label": "kept"}, ["folders.archive.m2"]),
        ({"folder": "trash", "message_id": "m3", "label": "filed"}, ["folders.trash.m3"]),
    ]


def test_the_signature_and_docstring_are_kept_for_frameworks_to_read() -> None:
    substrate = Substrate(StateStore())

    async def send_message(message_id: str, to: str, subject: str = "") -> dict[str, str]:
        """Send the drafted message ``message_id`` to ``to``."""
        return {}

    def count(limit: int, *, unread: bool = False) -> int:
        """Count messages."""
        return 0

    wrapped_async = verified(
        send_message, writes=[SENT], verify={SENT: "sent"}, substrate=substrate
    )
    wrapped_sync = verified(count, substrate=substrate)
    for original, wrapped in ((send_message, wrapped_async), (count, wrapped_sync)):
        signature = inspect.signature(wrapped)
        assert signature.parameters == inspect.signature(original).parameters
        assert signature.return_annotation is Verified
        assert wrapped.__doc__ == original.__doc__
        assert wrapped.__name__ == original.__name__
        assert wrapped.__wrapped__ is original
        assert inspect.get_annotations(wrapped)["return"] is Verified
        assert (
            pydantic.TypeAdapter(wrapped).json_schema()
            == pydantic.TypeAdapter(original).json_schema()
        )
    assert inspect.iscoroutinefunction(wrapped_async)
    assert not inspect.iscoroutinefunction(wrapped_sync)
    assert pydantic.TypeAdapter(wrapped_async).json_schema()["required"] == ["message_id", "to"]
    with pytest.raises(pydantic.ValidationError, match="limit"):
        pydantic.validate_call(wrapped_sync)(limit="many")


def test_a_declaration_that_cannot_hold_is_refused_when_decorating() -> None:
    with pytest.raises(GraphError) as raised:

        @verified(writes=["a.b"], verify={"c": 1}, substrate=Substrate(StateStore()))
        def touch() -> None:
            """Touch a.b."""

    assert str(raised.value) == (
        "tools.touch: verify: the contract reads 'c', which is outside the declared writes "
        "(a.b); declare it in writes or check only what the action writes"
    )


def lamp(app: dict[str, bool]) -> Substrate:
    """The lamp, read by a probe every 20 ms of real time."""
    return Substrate(
        probes=[CallableProbe(lambda: {"lamp.on": app["on"]}, name="app", interval=0.02)]
    )


def test_a_sync_tool_runs_in_its_callers_thread_and_is_verified_on_assays_loop() -> None:
    app = {"on": False}
    substrate = lamp(app)

    @verified(writes=["lamp.on"], verify="lamp.on === true", substrate=substrate, timeout_ms=600)
    def switch(on: bool) -> str:
        """Switch the lamp."""
        app["on"] = on
        return threading.current_thread().name

    first = switch(True)
    assert first.result == threading.current_thread().name
    assert first.verification.answer == "worked"
    assert first.verification.changed_fields == [FieldChange("lamp.on", False, True, "changed")]
    with ThreadPoolExecutor(1, thread_name_prefix="framework") as pool:
        off = pool.submit(switch, False).result()
        app["on"] = False
        on = pool.submit(switch, True).result()
    assert off.result.startswith("framework")
    assert off.verification.answer == "failed"
    assert off.verification.narrative is not None
    assert off.verification.narrative.startswith("lamp.on changed from true to false after ")
    assert off.verification.narrative.endswith("but the expression still evaluated to false.")
    assert on.verification.answer == "worked"
    assert on.verification.transition_id == "tools.switch#3"


def test_a_sync_tool_that_raises_raises_in_its_thread() -> None:
    app = {"on": False}

    @verified(writes=["lamp.on"], substrate=lamp(app), timeout_ms=500)
    def switch() -> None:
        raise OSError("the bulb is out")

    with pytest.raises(OSError, match="the bulb is out") as raised:
        switch()
    assert raised.value.__notes__ == [
        "assay: switch: failed (handler). the handler raised OSError: the bulb is out"
    ]


def test_a_substrate_used_from_two_loops_is_refused() -> None:
    async def main(clock: VirtualClock) -> tuple[str, str]:
        substrate = inbox(clock, m1="draft")
        send = sender(substrate)
        await send("m1", to="ann")

        @verified(writes=[SENT], substrate=substrate)
        def mark(message_id: str) -> None:
            """Mark a message."""

        with pytest.raises(SessionError) as blocked:
            mark("m1")
        with pytest.raises(SessionError) as other:
            await asyncio.to_thread(asyncio.run, send("m1", to="bob"))
        return str(blocked.value), str(other.value)

    blocked, other = run(main)
    assert blocked == (
        "the sync verified tool 'mark' was called on the event loop its substrate is bound to, "
        "and waiting for its verification there would block the loop that verifies it; make "
        "the tool async, or call it through asyncio.to_thread"
    )
    assert other == (
        "the verified tool 'send_message' was called on an event loop other than the one its "
        "substrate is bound to (another event loop); a substrate, its sessions and its probes "
        "belong to one event loop, so call every verified tool on that substrate from the same "
        "loop, or give each loop a substrate of its own"
    )


def test_an_async_tool_on_a_substrate_bound_to_assays_loop_is_refused() -> None:
    app = {"on": False}
    substrate = lamp(app)

    @verified(writes=["lamp.on"], substrate=substrate, timeout_ms=500)
    def switch() -> None:
        app["on"] = True

    @verified(writes=["lamp.on"], substrate=substrate, timeout_ms=500)
    async def switch_async() -> None:
        app["on"] = True

    assert switch().verification.answer == "worked"
    with pytest.raises(SessionError, match=r"bound to \(assay's own loop for sync tools\)"):
        asyncio.run(switch_async())
