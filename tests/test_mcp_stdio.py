"""``assay mcp`` as a real subprocess, over stdio, driven by the SDK's own stdio client.

The subprocess hosts the built-in outpost (its effects land after real delays) and writes to
a SQLite ledger in a temporary folder, read back once the server has exited.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from assay.ledger import open_ledger
from mcp_agent import check_outpost_journey, outpost_journey

pytestmark = pytest.mark.anyio

ASSAY = str(Path(sys.executable).parent / "assay")


def _server(ledger: Path) -> StdioServerParameters:
    return StdioServerParameters(command=ASSAY, args=["mcp", "--ledger", f"sqlite:///{ledger}"])


async def test_a_scripted_agent_completes_the_outpost_journey_over_stdio(tmp_path: Path) -> None:
    ledger_path = tmp_path / "evidence.db"
    async with Client(_server(ledger_path)) as client:
        steps = await outpost_journey(client)
    check_outpost_journey(steps)
    with open_ledger(f"sqlite:///{ledger_path}") as ledger:
        assert ledger.verify().ok
        settled = [e.transition for e in ledger.query(kind="settlement")]
    assert settled == [step.answer["transition_id"] for step in steps]


async def test_a_cancelled_fire_still_settles_in_the_ledger_over_stdio(tmp_path: Path) -> None:
    ledger_path = tmp_path / "evidence.db"
    async with Client(_server(ledger_path)) as client:
        waiting = anyio.Event()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            waiting.set()

        async def fire() -> None:
            # The message lands, but this extra contract never holds: the fire fails once
            # the action's 3 s verify timeout passes, long after the request is cancelled.
            arguments = {
                "action": "inbox.send",
                "args": {"message_id": "m-1", "to": "ops"},
                "verify_expression": "false",
                "wait_ms": 55_000,
            }
            await client.call_tool("fire", arguments, progress_callback=progress)

        async with anyio.create_task_group() as group:
            group.start_soon(fire)
            await waiting.wait()
            group.cancel_scope.cancel()
        settled = await client.call_tool(
            "did_it_work", {"transition_id": "inbox.send#1", "wait_ms": 20_000}
        )
        assert settled.structured_content is not None
        assert settled.structured_content["answer"] == "failed"
        assert settled.structured_content["why"].endswith(
            "but the expression still evaluated to false."
        )
    with open_ledger(f"sqlite:///{ledger_path}") as ledger:
        assert [(e.kind, e.transition) for e in ledger.query()] == [
            ("fire", "inbox.send#1"),
            ("settlement", "inbox.send#1"),
        ]
