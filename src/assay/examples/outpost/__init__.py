"""The built-in example application (SPEC §10), as assay hosts it: ``APPLICATION``.

``assay serve`` and ``assay mcp`` host it when no ``--app`` is given. ``connect`` starts the
outpost (``app.py``, a real HTTP application) on a free loopback port, observes its inbox
through the reports the inbox pushes and its drone by polling the telemetry endpoint, and
wires handlers that call the outpost's HTTP API as any tool would.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

import httpx

from assay.graph import build_navigation_graph
from assay.host.application import Application, ConnectContext, Connection
from assay.host.loopback import LoopbackServer
from assay.state.probes import HttpProbe
from assay.state.store import StateStore
from assay.state.substrate import Substrate

from .app import MODES, Outpost

TELEMETRY_INTERVAL_S: Final = 0.1
EXPECTED_INTERVAL_S: Final = 1.0
ACTION_REQUESTS: Final = 16
"""Requests the handlers send the outpost at once; the rest wait for a turn. httpx's pool
looks over every request queued in it at each step, so a thousand sends queued there cost
more than the outpost spends answering them."""

GRAPH = build_navigation_graph(
    "outpost",
    pages={
        "inbox": {
            "actions": {
                "send": {
                    "does": "Send a message; it is delivered after a short delay",
                    "writes": ["inbox.sent_count", "inbox.sent.{message_id}"],
                    "verify": {"inbox.sent.{message_id}.status": {"eq": "sent"}},
                    "verify_timeout_ms": 3000,
                    "input": {
                        "type": "object",
                        "properties": {
                            "message_id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
                            "to": {"type": "string", "minLength": 1, "maxLength": 200},
                            "subject": {"type": "string", "maxLength": 200},
                        },
                        "required": ["message_id", "to"],
                        "additionalProperties": False,
                    },
                },
                "mark-all-read": {
                    "does": "Mark every message in the inbox as read",
                    "writes": ["inbox.unread"],
                    "verify": {"inbox.unread": {"eq": 0}},
                    "verify_timeout_ms": 1500,
                },
                "open-drone": {"does": "Switch to the drone console", "to": "drone"},
            }
        },
        "drone": {
            "actions": {
                "set-mode": {
                    "does": "Set the drone's flight mode",
                    "writes": ["drone.mode"],
                    "verify": {"drone.mode": {"eq": {"arg": "mode"}}},
                    "verify_timeout_ms": 3000,
                    "input": {
                        "type": "object",
                        "properties": {"mode": {"enum": list(MODES)}},
                        "required": ["mode"],
                        "additionalProperties": False,
                    },
                },
                "release-payload": {
                    "does": "Release the drone's payload; it cannot be taken back",
                    "writes": ["drone.payload"],
                    "verify": {"drone.payload": {"eq": "released"}},
                    "reversibility": "irreversible",
                    "single_flight": True,
                    "verify_timeout_ms": 3000,
                },
                "open-inbox": {"does": "Switch to the inbox", "to": "inbox"},
            }
        },
    },
)


def outpost_connector(outpost: Outpost | None = None) -> Any:
    """A ``connect`` for an outpost (a fresh default one when not given)."""

    async def connect(context: ConnectContext) -> Connection:
        app = outpost or Outpost()
        server = LoopbackServer(app.asgi(), name="outpost")
        await server.start()
        # The probe reads through a client of its own, so that observing never queues
        # behind the actions being observed.
        observer = httpx.AsyncClient(base_url=server.url, timeout=5.0)
        limits = httpx.Limits(max_connections=ACTION_REQUESTS)
        client = httpx.AsyncClient(base_url=server.url, timeout=5.0, limits=limits)
        turns = asyncio.Semaphore(ACTION_REQUESTS)
        store = StateStore(clock=context.clock)
        store.report({"inbox": (await observer.get("/state")).json()["inbox"]}, source="outpost")

        def on_inbox_change(values: dict[str, Any]) -> None:
            store.report(values, source="outpost")

        app.subscribe(on_inbox_change)
        probe = HttpProbe(
            f"{server.url}/drone/telemetry",
            into="drone",
            interval=TELEMETRY_INTERVAL_S,
            client=observer,
            name="drone telemetry",
        )
        substrate = Substrate(
            store,
            probes=[probe],
            declared_keys=GRAPH.declared_writes(),
            expected_interval=EXPECTED_INTERVAL_S,
            redaction=context.redaction,
            clock=context.clock,
        )

        async def post(path: str, body: dict[str, Any] | None = None) -> Any:
            async with turns:
                response = await client.post(path, json=body or {})
            response.raise_for_status()
            return response.json()

        async def send(args: dict[str, Any]) -> Any:
            return await post("/inbox/send", args)

        async def mark_all_read(args: dict[str, Any]) -> Any:
            return await post("/inbox/mark-all-read")

        async def set_mode(args: dict[str, Any]) -> Any:
            return await post("/drone/mode", {"mode": args["mode"]})

        async def release_payload(args: dict[str, Any]) -> Any:
            return await post("/drone/release-payload")

        def navigate(args: dict[str, Any]) -> None:
            return None

        async def close() -> None:
            await client.aclose()
            await observer.aclose()
            await server.stop()

        return Connection(
            substrate=substrate,
            handlers={
                "inbox.send": send,
                "inbox.mark-all-read": mark_all_read,
                "inbox.open-drone": navigate,
                "drone.set-mode": set_mode,
                "drone.release-payload": release_payload,
                "drone.open-inbox": navigate,
            },
            close=close,
            details={"outpost": server.url, "app": app},
        )

    return connect


APPLICATION = Application(
    GRAPH,
    start="inbox",
    connect=outpost_connector(),
    description="An outpost with an inbox and a drone: late effects, a silent no-op, an "
    "already-true mode, an irreversible payload release gated by confidence.",
)

__all__ = ["APPLICATION", "GRAPH", "Outpost", "outpost_connector"]
