"""An application for daemons the tests kill mid-fire: its one press never settles.

``desk.press`` declares a write that no state report ever makes, and its handler never
returns, so a fire of it stays pending for as long as its daemon runs.
"""

from __future__ import annotations

import asyncio
from typing import Any

from assay.graph import build_navigation_graph
from assay.host import Application

GRAPH = build_navigation_graph(
    "desk",
    pages={"desk": {"actions": {"press": {"does": "Press the switch", "writes": ["lamp.on"]}}}},
)


async def press(args: dict[str, Any]) -> None:
    await asyncio.Event().wait()


APPLICATION = Application.in_process(
    GRAPH, start="desk", state={"lamp": {"on": False}}, handlers={"desk.press": press}
)
