"""An outbox application for the agent-framework adapters' tests: its state is pushed to a
``StateStore`` on virtual time, and its send handler does what the test says."""

from __future__ import annotations

import asyncio
from typing import Any, Final

from assay import Ledger
from assay.clock import VirtualClock
from assay.ledger import MemoryBackend
from assay.state.store import StateStore
from assay.state.substrate import Substrate

SENT: Final = "inbox.sent.{message_id}.status"
VERIFY: Final = {"writes": [SENT], "verify": {SENT: "sent"}}
"""A send tool's declaration: it writes the message's status, and works when it is sent."""

FIRE = {
    "action": "tools.send_message",
    "already_true": None,
    "args": {"message_id": "m1", "to": "ann"},
    "contract": '{"inbox.sent.{message_id}.status":"sent"}',
    "materialized": True,
    "source": "agent",
    "state_version": 0,
    "writes": ["inbox.sent.m1.status"],
}
"""The ledger's fire entry for the model's call: its arguments, with no framework context."""
NO_OP = (
    'send_message: failed (verification). inbox.sent.m1.status remained "draft" after 1 poll '
    "cycle (3000ms); nothing observable changed. The action may have failed silently."
)

ALREADY_TRUE: Final = (
    "send_message: already true, inbox.sent.m1.status held before the call, which says "
    "nothing of its effect; the tool ran. The handler finished, and no change to the "
    "declared keys was observed."
)
"""The summary of a send of ``m1`` already sent: the contract held before the call."""
WAITING_ON: Final = (
    'the verify contract {"inbox.sent.{message_id}.status":"sent"} to hold (on '
    "inbox.sent.m1.status)"
)
"""What a pending send of ``m1`` waits on."""
PENDING: Final = (
    f"send_message: pending, waiting on {WAITING_ON} (1,000 ms so far); nothing has settled "
    "it yet; ask did_it_work('tools.send_message#1') later"
)
"""The summary of a send of ``m1`` pending at a ceiling of 1000 ms."""
LANDED: Final = (
    "Contract evaluated to true after 2 poll cycles (3000ms); inbox.sent.m1.status changed "
    'from "draft" to "sent".'
)
WORKED: Final = {
    "verification": {
        "answer": "worked",
        "why": LANDED,
        "transition_id": "tools.send_message#1",
        "narrative": LANDED,
        "changed_fields": [
            {"key": "inbox.sent.m1.status", "before": "draft", "after": "sent", "kind": "changed"}
        ],
    },
    "summary": f"send_message: worked. {LANDED}",
}
"""What ``did_it_work`` answers the model for the pending send of ``m1`` once it was sent."""
UNKNOWN_ID: Final = (
    "no call of the verified tools asked about here (tools.send_message) has the transition "
    "id 'tools.archive_message#1'"
)
"""What ``did_it_work`` answers the model for a transition id none of its tools made."""

EVIDENCE = {
    "key": "inbox.sent.m1.status",
    "op": "eq",
    "threshold": "sent",
    "actual_summary": '"sent"',
    "result": True,
    "redacted": False,
    "reason": None,
    "elements": None,
    "missing": None,
}
"""The evidence that the send's contract held before the call, for ``m1`` already sent."""
ALREADY_SETTLED: Final = {
    "action": "tools.send_message",
    "answer": "unobservable",
    "commit": [],
    "effect": "unobservable",
    "error": None,
    "outcome": None,
    "state_version": 0,
}
"""The ledger's settlement of an already-true send: nothing observed its effect."""


class Outbox:
    """The application: messages' statuses, the sends its handler was asked for, and a ledger."""

    def __init__(self, clock: VirtualClock, *, sends: bool = False, **statuses: str) -> None:
        self.clock = clock
        self.sends = sends
        self.raises: Exception | None = None
        state = {"inbox": {"sent": {key: {"status": value} for key, value in statuses.items()}}}
        self.substrate = Substrate(StateStore(state, clock=clock), clock=clock)
        self.substrate.store.heartbeat("app")
        self.ledger = Ledger(MemoryBackend())
        self.calls: list[tuple[str, str]] = []
        self.started = asyncio.Event()

    def send(self, message_id: str, to: str) -> dict[str, str]:
        """The application's send handler: it marks the message sent only when ``sends``."""
        self.calls.append((message_id, to))
        self.started.set()
        if self.raises is not None:
            raise self.raises
        if self.sends:
            self.substrate.store.report({f"inbox.sent.{message_id}.status": "sent"})
        return {"id": message_id}

    def mark_sent(self, message_id: str) -> None:
        """The effect landing late, reported by the application on its own."""
        self.substrate.store.report({f"inbox.sent.{message_id}.status": "sent"})

    async def lands_late(self) -> None:
        """Two seconds on, ``m1``'s send lands and the clock settles (as a model thinks)."""
        await self.clock.advance(2.0)
        self.mark_sent("m1")
        await self.clock.settle()

    async def run_until_started(self, agent_run: Any, seconds: float) -> Any:
        """Run ``agent_run`` (an awaitable) with the clock moved ``seconds`` on once the handler
        has been called; its result, or its exception."""
        task = asyncio.ensure_future(agent_run)
        started = asyncio.ensure_future(self.started.wait())
        await asyncio.wait([task, started], return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        await self.clock.advance(seconds)
        return await task

    def fire_and_settlement(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The bodies of the ledger's two entries for one call: its fire, its settlement."""
        (fire, fired), (settlement, settled) = self.entries()
        assert (fire, settlement) == ("fire", "settlement")
        return fired, settled

    def entries(self) -> list[tuple[str, dict[str, Any]]]:
        """The ledger's entries, as (kind, body)."""
        return [(entry.kind, entry.body) for entry in self.ledger.iterate()]
