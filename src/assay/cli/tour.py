"""``assay demo``: the outpost, the daemon, and an agent that holds only the MCP port.

The daemon runs in this process on loopback: the HTTP API (with the timeline page) and the
MCP endpoint over streamable HTTP, both over one host of the built-in example application,
with its evidence in the ledger given (``./assay.db`` by default). The agent is an MCP
client and nothing else. Between its steps an operator degrades and restores the drone's
radio link through the outpost's own HTTP API, which is what moves confidence. Every answer
printed is the structured result of a real tool call.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any, Final

import httpx
from mcp import Client
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.examples.outpost import GRAPH, Outpost, outpost_connector
from assay.host import Application, Host
from assay.host.loopback import LoopbackServer
from assay.ledger.backends.memory import MemoryBackend
from assay.ledger.ledger import Ledger
from assay.mcp.http import StreamableHttpEndpoint
from assay.mcp.server import build_server
from assay.server.app import create_app
from assay.workflow.definition import Workflow
from assay.workflow.examples import COMPETITOR_DEEP_DIVE, COMPETITOR_INPUT
from assay.workflow.service import Workflows

WAIT_MS: Final = 5000
CONFIDENCE_CHECKS: Final = 60
"""How many times the agent reads confidence while waiting for it to move (every 0.2 s)."""

STATUS_STYLE: Final = {
    "worked": "bold green",
    "failed": "bold red",
    "refused": "bold red",
    "pending": "bold yellow",
    "unobservable": "bold yellow",
}


class Tour:
    """The agent's side: MCP tool calls, each printed with its answer."""

    def __init__(self, agent: Client, console: Console) -> None:
        self.agent = agent
        self.console = console

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call ``tool``; answer its structured content (progress printed while waiting)."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            self.console.print(f"    [dim]… {progress / 1000:.1f}s: {message}[/dim]")

        result = await self.agent.call_tool(tool, arguments, progress_callback=on_progress)
        content: dict[str, Any] = result.structured_content or {}
        if result.is_error:
            text = " ".join(getattr(block, "text", "") for block in result.content)
            content = {**content, "tool_error": text}
        return content

    async def fire(self, title: str, action: str, args: dict[str, Any] | None = None) -> Any:
        """Fire through the MCP ``fire`` tool and print what came back."""
        self.console.rule(f"[bold]{title}")
        shown = json.dumps(args or {})
        self.console.print(f"  agent → fire [cyan]{action}[/cyan] {shown} (wait ≤ {WAIT_MS} ms)")
        answer = await self.call("fire", {"action": action, "args": args or {}, "wait_ms": WAIT_MS})
        self.show(answer)
        return answer

    def show(self, answer: dict[str, Any]) -> None:
        """The parts of a fire's answer a person needs, in the order that matters."""
        status = str(answer.get("answer") or answer.get("effect_status") or "error")
        style = STATUS_STYLE.get(status, "bold")
        self.console.print(
            f"  assay → [{style}]{status}[/{style}]  executed={answer.get('executed')} "
            f"success={answer.get('success')}  transition={answer.get('transition_id')}"
        )
        verification = answer.get("verification") or {}
        if verification.get("narrative"):
            self.console.print(f"    {verification['narrative']}")
        elif answer.get("why") and not answer.get("already_true") and not answer.get("refusal"):
            self.console.print(f"    {answer['why']}")  # nothing verified: say why not
        if answer.get("already_true"):
            for condition in answer["already_true"]:
                self.console.print(
                    f"    already true at fire time: {condition['key']} {condition['op']} "
                    f"{json.dumps(condition['threshold'])} (saw {condition['actual_summary']})"
                )
            self.console.print(f"    [dim]{answer.get('why')}[/dim]")
        if "changed_fields" in verification:
            changes = verification["changed_fields"]
            if not changes:
                self.console.print("    changed_fields: [] (nothing observable changed)")
            for change in changes:
                self.console.print(f"    changed: {_change(change)}")
        if answer.get("refusal"):
            self.console.print(f"    refused ({answer['refusal']}): {answer.get('error')}")
        elif answer.get("tool_error"):
            self.console.print(f"    tool error: {answer['tool_error']}")
        if status == "pending":
            self.console.print(f"    waiting on: {answer.get('waiting_on')}")

    async def confidence_until(self, holds: Callable[[float], bool], wanted: str) -> float:
        """Read ``get_state`` until confidence satisfies ``holds``; bounded, never endless."""
        value = 0.0
        for _ in range(CONFIDENCE_CHECKS):
            state = await self.call("get_state", {"keys": ["drone.mode"]})
            confidence = state.get("confidence", {})
            value = float(confidence.get("value", 0.0))
            if holds(value):
                break
            await asyncio.sleep(0.2)
        parts = ", ".join(
            f"{k} {confidence.get(k, 0):.2f}" for k in ("freshness", "coverage", "health")
        )
        self.console.print(f"  agent → get_state: confidence {value:.2f} ({parts}) — {wanted}")
        return value


async def run_demo(ledger: Ledger, console: Console) -> int:
    """The whole demo; returns 0 when the ledger verifies at the end, else 1."""
    outpost = Outpost()
    application = Application(GRAPH, start="inbox", connect=outpost_connector(outpost))
    async with Host(application, ledger) as host:
        outpost_url = str(host.connection.details["outpost"])
        async with (
            LoopbackServer(create_app(host), name="daemon") as daemon,
            StreamableHttpEndpoint(build_server(host)) as endpoint,
            Client(endpoint.url) as agent,
        ):
            console.print(
                f"[bold]assay demo[/bold]: the outpost at {outpost_url}; the daemon at "
                f"{daemon.url} (HTTP API) with MCP at {endpoint.url}; ledger {ledger.url}"
            )
            tour = Tour(agent, console)
            await _journey(tour, outpost_url, console)
        await _workflow(ledger, console)
    report = await asyncio.to_thread(ledger.verify)
    console.rule("[bold]assay ledger verify")
    # What the command itself prints, word for word (docs/ledger.md asks to note its head).
    from assay.cli.ledger import verify_answer

    first, *rest = verify_answer(report)
    verdict, _, said = first.partition(" ")
    style = "bold green" if report.ok else "bold red"
    console.print(Text.assemble((verdict, style), " ", said), soft_wrap=True)
    for line in rest:
        console.print(Text(line), soft_wrap=True)
    if not isinstance(ledger.backend, MemoryBackend):  # another process can open it
        console.print(
            "\nSee it on the timeline: [bold]assay serve --ledger "
            f"{ledger.url}[/bold], then open http://127.0.0.1:8765/"
        )
    else:
        console.print(
            f"\nThe ledger {ledger.url} lived in this process and is gone with it; run with "
            "--ledger sqlite:///assay.db to keep it and see it on the timeline"
        )
    return 0 if report.ok else 1


async def _journey(tour: Tour, outpost_url: str, console: Console) -> None:
    console.rule("[bold]agent → list_actions")
    listed = await tour.call("list_actions", {})
    table = Table("action", "reversibility", "verify", box=None)
    for action in listed.get("actions", []):
        table.add_row(action["id"], action["reversibility"], str(action["verify"]))
    console.print(table)

    message_id = f"demo-{uuid.uuid4().hex[:8]}"
    await tour.fire(
        "1. A send whose count lands after a delay",
        "inbox.send",
        {"message_id": message_id, "to": "ops@outpost", "subject": "status"},
    )
    await tour.fire(
        "2. A silent no-op: the app answers 200 and does nothing", "inbox.mark-all-read"
    )
    await tour.fire("3. To the drone console", "inbox.open-drone")
    await tour.fire("4. A drone mode change", "drone.set-mode", {"mode": "GUIDED"})
    await tour.fire("5. The same press again: already true", "drone.set-mode", {"mode": "GUIDED"})

    console.rule("[bold]6. An irreversible action while the telemetry link is flaky")
    await _operator(outpost_url, "flaky", console)
    await tour.confidence_until(lambda c: c < 0.95, "below the 0.95 an irreversible action needs")
    await tour.fire("6a. Release the payload (irreversible)", "drone.release-payload")
    await _operator(outpost_url, "ok", console)
    await tour.confidence_until(lambda c: c >= 0.95, "recovered")
    await tour.fire("6b. Release the payload, confidence recovered", "drone.release-payload")


async def _operator(outpost_url: str, link: str, console: Console) -> None:
    async with httpx.AsyncClient() as client:
        response = await client.post(f"{outpost_url}/drone/link", json={"link": link})
        response.raise_for_status()
    console.print(f"  operator → the drone's telemetry link is now [bold]{link}[/bold]")


async def _workflow(ledger: Ledger, console: Console) -> None:
    console.rule("[bold]7. A workflow step that fails its gate, gets its critique, then passes")
    workflow = Workflow.from_mapping(COMPETITOR_DEEP_DIVE)
    workflows = Workflows(ledger, workflows=[workflow])
    record = await workflows.astart(workflow.name, COMPETITOR_INPUT)
    for entry in ledger.query(run=record.run_id):
        body = entry.body if isinstance(entry.body, dict) else {}
        if entry.kind == "verdict":
            verdict = body.get("verdict", {})
            passed = bool(verdict.get("passed"))
            style = "green" if passed else "red"
            console.print(
                f"  verdict [{style}]{'pass' if passed else 'fail'}[/{style}] on "
                f"{body.get('step')} (attempt {body.get('attempt')}, iteration "
                f"{body.get('iteration')})"
            )
            for criterion in verdict.get("criteria", []):
                mark = "✓" if criterion.get("passed") else "✗"
                console.print(f"    {mark} {criterion.get('criterion')}")
            if verdict.get("critique"):
                console.print(f"    critique → planner: {verdict['critique']}")
        elif entry.kind in ("commit", "escalation", "park"):
            what = body.get("step") or body.get("event", "")
            console.print(f"  {entry.kind}: {what}")
    console.print(f"  run {record.run_id}: {record.status}")


def _change(change: dict[str, Any]) -> str:
    """One changed leaf, as a person reads it."""
    key = change["key"]
    before = "(absent)" if change["kind"] == "added" else json.dumps(change["before"])
    after = "(absent)" if change["kind"] == "removed" else json.dumps(change["after"])
    return f"{key}: {before} → {after}"
