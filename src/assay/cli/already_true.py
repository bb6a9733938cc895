"""``assay example already-true``: three presses of "open billing", made over MCP.

The SDK's own MCP client calls the ``fire`` and ``did_it_work`` tools of an in-process MCP
server hosting the desk below, as a remote model would: the already-true press (the view is
already billing, so the fire settles on its handler with the evidence), the ordinary press
(the handler's report lands and the verify contract settles it), and the same press on an
action that declares writes and no verify, which waits for a report an idempotent handler
never sends. Every line printed is a real answer, as the model read it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from mcp import Client

from assay.graph import build_navigation_graph
from assay.graph.session import Handler
from assay.host import Application, Host
from assay.ledger import Ledger
from assay.mcp import build_server
from assay.state.store import StateStore

GRAPH = build_navigation_graph(
    "desk",
    pages={
        "workspace": {
            "actions": {
                "open-billing": {
                    "does": "Open the billing domain view",
                    "writes": ["view.domain"],
                    "verify": {"view.domain": {"eq": "billing"}},
                },
                "open-billing-writes-only": {
                    "does": "Open the billing domain view (declares writes, no verify)",
                    "writes": ["view.domain"],
                },
            }
        }
    },
)
WAIT_CEILING_MS = 500
PRESSES = {"already true": "already-true", "ordinary": "ordinary", "writes, no verify": "blind"}
"""Each press's label, and the session it is made in (one session per press)."""


def desk(domain: str) -> Application:
    """The desk, its view on ``domain``; its handler reports only a change, like any store."""

    def handlers(store: StateStore) -> dict[str, Handler]:
        def open_billing(args: dict[str, Any]) -> None:
            if store.current.objects.get("view", {}).get("domain") != "billing":
                store.report({"view.domain": "billing"}, source="app")

        return {
            "workspace.open-billing": open_billing,
            "workspace.open-billing-writes-only": open_billing,
        }

    return Application.in_process(
        GRAPH, start="workspace", state={"view": {"domain": domain}}, handlers=handlers
    )


async def _press(label: str, action: str, domain: str, ledger: Ledger) -> dict[str, Any]:
    async with Host(desk(domain), ledger) as host:
        session = host.open_session(session_id=f"desk-{PRESSES[label]}")
        async with Client(build_server(host, session=session.id)) as client:
            fired = await client.call_tool(
                "fire", {"action": f"workspace.{action}", "wait_ms": WAIT_CEILING_MS}
            )
            transition = (fired.structured_content or {}).get("transition_id")
            answer = await client.call_tool("did_it_work", {"transition_id": transition})
    return {
        "press": label,
        "state_before": {"view.domain": domain},
        "fire": _as_read(fired.content),
        "did_it_work": _as_read(answer.content),
    }


def _as_read(content: list[Any]) -> Any:
    return json.loads(content[0].text)


async def run(ledger: Ledger) -> list[dict[str, Any]]:
    """The three presses, in order; each fire and settlement goes to ``ledger``."""
    return [
        await _press("already true", "open-billing", "billing", ledger),
        await _press("ordinary", "open-billing", "workspace", ledger),
        await _press("writes, no verify", "open-billing-writes-only", "billing", ledger),
    ]


def main(ledger: Ledger) -> int:
    """Print the three presses as JSON lines."""
    for line in asyncio.run(run(ledger)):
        print(json.dumps(line, ensure_ascii=False))
    return 0
