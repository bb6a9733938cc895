"""Executors for the tests that run ``assay run``/``assay resume`` as real subprocesses.

Each appends a line to the effects file named in the input, so the test can count how often
each step's effect happened. ``second`` blocks forever while the block file exists, after
telling the test (a ``BLOCKED`` line on stdout) that it is mid-step. ``needs_approval``
fails its gate until a person resumes the run with ``{"approve": true}``.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from assay.workflow import StepContext


def _effect(ctx: StepContext, line: str) -> None:
    with Path(ctx.input["effects"]).open("a", encoding="utf-8") as file:
        file.write(line + "\n")


def first(ctx: StepContext) -> dict[str, Any]:
    _effect(ctx, "first")
    return {"items": [1]}


def second(ctx: StepContext) -> dict[str, Any]:
    _effect(ctx, "second")
    if Path(ctx.input["block"]).exists():
        print("BLOCKED", flush=True)
        threading.Event().wait()
    return {"items": [2]}


def needs_approval(ctx: StepContext) -> dict[str, Any]:
    approved = bool(ctx.human and ctx.human.get("approve"))
    return {"items": [1] if approved else [-1]}
