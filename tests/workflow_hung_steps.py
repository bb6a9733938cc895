"""Executors that never end, for the tests that signal a real ``assay serve`` mid-run.

Each prints ``HUNG`` on stderr once it is running, so the test knows the run is in flight.
``swallows`` ignores every cancellation; ``blocks`` is a plain executor blocked in its thread.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

from assay.workflow import StepContext


async def swallows(ctx: StepContext) -> dict[str, Any]:
    print("HUNG", file=sys.stderr, flush=True)
    while True:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            continue


def blocks(ctx: StepContext) -> dict[str, Any]:
    print("HUNG", file=sys.stderr, flush=True)
    threading.Event().wait()
    return {"items": [1]}
