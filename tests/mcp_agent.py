"""A scripted agent that acts through nothing but assay's MCP tools, as a model would.

It fires with a short wait, so that it meets pending answers and has to read them. A pending
answer's ``waiting_on`` decides what it does next: a verify contract or a handler will
settle by themselves, so it asks ``did_it_work`` with a ceiling; a state report that nothing
checks for may never come, so it stops at once and records the step as not known, rather
than wait on a settlement that cannot come.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mcp import Client

REPORT_ONLY = "a state report writing "
"""The start of ``waiting_on`` for a fire that only the application's own report can settle."""


@dataclass
class Step:
    """One press: what the agent fired, what it saw while pending, the last answer (from fire
    or did_it_work) and ``evidence``: did_it_work's answer, asked without waiting, at the end."""

    action: str
    args: dict[str, Any]
    answer: dict[str, Any]
    evidence: dict[str, Any] = field(default_factory=dict)
    waited_on: list[str] = field(default_factory=list)
    asked_again: int = 0
    stopped: bool = False

    @property
    def outcome(self) -> str:
        """worked, failed, unobservable, refused, ... or "unknown" when it stopped waiting."""
        return "unknown" if self.stopped else str(self.answer["answer"])


class ScriptedAgent:
    """Presses actions through ``client``'s MCP tools and keeps every step."""

    def __init__(self, client: Client, *, fire_wait_ms: int = 200, patience_ms: int = 10_000):
        self.client = client
        self.fire_wait_ms = fire_wait_ms
        self.patience_ms = patience_ms
        self.steps: list[Step] = []

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """A tool's structured answer; a tool error fails the journey with its text."""
        result = await self.client.call_tool(tool, arguments or {})
        assert not result.is_error, f"{tool}: {result.content}"
        assert result.structured_content is not None
        return result.structured_content

    async def actions(self) -> dict[str, dict[str, Any]]:
        """The actions available where the session is, by id."""
        listed = await self.call("list_actions")
        return {action["id"]: action for action in listed["actions"]}

    async def state(self, *keys: str) -> dict[str, Any]:
        """The observed state of ``keys`` (the objects map) and its confidence."""
        return await self.call("get_state", {"keys": list(keys)})

    async def press(self, action: str, args: dict[str, Any] | None = None) -> Step:
        """Fire ``action`` if it is available here; ask again only while something will come."""
        available = await self.actions()
        assert action in available, f"{action} is not available here: {sorted(available)}"
        args = args or {}
        answer = await self.call(
            "fire", {"action": action, "args": args, "wait_ms": self.fire_wait_ms}
        )
        step = Step(action, args, answer)
        while answer["answer"] == "pending":
            waiting_on = answer["waiting_on"]
            step.waited_on.append(waiting_on)
            if waiting_on.startswith(REPORT_ONLY) or step.asked_again >= 3:
                step.stopped = True
                break
            step.asked_again += 1
            answer = await self.call(
                "did_it_work",
                {"transition_id": answer["transition_id"], "wait_ms": self.patience_ms},
            )
        step.answer = answer
        if answer["transition_id"] is not None:
            step.evidence = await self.call(
                "did_it_work", {"transition_id": answer["transition_id"], "wait_ms": 0}
            )
        self.steps.append(step)
        return step


async def outpost_journey(client: Client) -> list[Step]:
    """Send a status message, clear the inbox, then put the drone in GUIDED and release the
    payload, on the built-in outpost (its drone starting in LOITER): one silent no-op (mark
    all read) and one already-true press (the mode it is already in) on the way."""
    agent = ScriptedAgent(client)
    await agent.press("inbox.send", {"message_id": "status-1", "to": "ops", "subject": "ok"})
    await agent.press("inbox.mark-all-read")
    await agent.press("inbox.open-drone")
    current = (await agent.state("drone.mode"))["objects"]["drone"]["mode"]
    await agent.press("drone.set-mode", {"mode": current})
    await agent.press("drone.set-mode", {"mode": "GUIDED"})
    release = (await agent.actions())["drone.release-payload"]
    assert release["reversibility"] == "irreversible"
    state = await agent.state("drone.payload")
    if state["confidence"]["value"] >= release["threshold"]:
        await agent.press("drone.release-payload")
    return agent.steps


def check_outpost_journey(steps: list[Step]) -> None:
    """The journey's steps, as any transport must show them."""
    assert [(s.action, s.outcome) for s in steps] == [
        ("inbox.send", "worked"),
        ("inbox.mark-all-read", "failed"),
        ("inbox.open-drone", "unobservable"),
        ("drone.set-mode", "unobservable"),
        ("drone.set-mode", "worked"),
        ("drone.release-payload", "worked"),
    ]
    send, silent, _, same, guided, _ = steps
    sent_count = [c for c in send.evidence["commit"] if c["key"] == "inbox.sent_count"]
    assert [(c["before"], c["after"]) for c in sent_count] == [(14, 15)]
    assert silent.evidence["outcome"]["changed_fields"] == []
    assert silent.evidence["commit"] == []
    assert "nothing observable changed" in silent.evidence["why"]
    assert silent.waited_on == ['the verify contract {"inbox.unread":{"eq":0}} to hold']
    assert same.args == {"mode": "LOITER"}
    assert [c["key"] for c in same.answer["already_true"]] == ["drone.mode"]
    assert same.evidence["commit"] == []
    assert guided.evidence["commit"] == [
        {"key": "drone.mode", "before": "LOITER", "after": "GUIDED", "kind": "changed"}
    ]
    assert not any(step.stopped for step in steps)
