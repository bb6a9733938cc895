"""What a long-running host holds: nothing in reference cycles, and bounded structures.

A closed session, its transitions and their changes must be freed by reference counting as
soon as nothing names them: the daemon raises the collector's thresholds (``prepare_to_serve``)
and under load a cycle waits long for it. The workloads run with the collector off, then one
collection with ``DEBUG_SAVEALL`` keeps whatever was only in cycles, for the test to count.
"""

from __future__ import annotations

import gc
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from assay.graph import build_navigation_graph
from assay.host import Application, Host
from assay.host.wire import ActionRequest
from assay.ledger import Ledger
from assay.ledger.backends.memory import MemoryBackend

pytestmark = pytest.mark.anyio

GRAPH = build_navigation_graph(
    "mail",
    pages={
        "inbox": {
            "actions": {
                "send": {
                    "does": "Send a message",
                    "writes": ["sent.{message_id}"],
                    "verify": {"sent.{message_id}.status": {"eq": "sent"}},
                    "verify_timeout_ms": 1000,
                },
                "fail": {"does": "Raise", "writes": ["broken"]},
            }
        }
    },
)


def _mail() -> Application:
    def handlers(store: Any) -> dict[str, Any]:
        async def send(args: dict[str, Any]) -> None:
            store.report({f"sent.{args['message_id']}": {"status": "sent", "to": "ops"}})

        async def fail(args: dict[str, Any]) -> None:
            raise RuntimeError("the outbox is gone")

        return {"inbox.send": send, "inbox.fail": fail}

    return Application.in_process(GRAPH, start="inbox", state={"sent": {}}, handlers=handlers)


@contextmanager
def cycles_kept() -> Iterator[Counter[str]]:
    """Run the block with the collector off; then count, by type name, what only cycles held."""
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    found: Counter[str] = Counter()
    try:
        yield found
    finally:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found.update(type(thing).__name__ for thing in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
            if was_enabled:
                gc.enable()


async def _workload(host: Host, sessions: int, fires: int) -> None:
    for number in range(sessions):
        session = host.open_session()
        for fire in range(fires):
            message = f"m{number}-{fire}"
            request = ActionRequest(
                action="inbox.send",
                args={"message_id": message},
                session=session.id,
                wait_ms=1000,
            )
            answer = await host.fire(request)
            assert answer.answer == "worked", answer
        failed = await host.fire(
            ActionRequest(action="inbox.fail", session=session.id, wait_ms=1000)
        )
        assert failed.answer == "failed", failed
        await host.close_session(session.id)


async def test_closed_sessions_leave_nothing_in_cycles() -> None:
    async with Host(_mail(), Ledger(MemoryBackend())) as host:
        with cycles_kept() as kept:
            await _workload(host, sessions=20, fires=5)
        assert len(host.sessions) == 1  # the default session
    for name in ("FieldChange", "Session", "Transition", "VerificationOutcome", "frame"):
        assert kept[name] == 0, kept.most_common(10)


async def test_closed_sessions_leave_bounded_traces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("assay.host.session_registry.CLOSED_REMEMBERED", 5)
    async with Host(_mail(), Ledger(MemoryBackend())) as host:
        await _workload(host, sessions=20, fires=2)
        store = host.substrate.store
        assert store.waiting == 1  # the default session's subscription, and nothing else
        assert len(host._closed) == 5
        assert len(host._opened) == 6  # the remembered closed ones and the default session
        assert len(host._used) == 0  # the default session never expires
        # Nothing is pending: only the claim of the latest version is kept.
        assert len(host.sessions[host.default_session].claims) <= 1
