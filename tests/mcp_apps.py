"""Applications for the MCP tests: the panel settles only when the test reports its state, so
waits, progress and cancellation are exercised without racing a timer."""

from __future__ import annotations

from assay.graph import build_navigation_graph
from assay.host import Application

ARMED = '{"system.armed":{"eq":true}}'
"""The arm action's contract, as ``waiting_on`` and the verdicts spell it."""

PANEL = build_navigation_graph(
    "panel",
    pages={
        "panel": {
            "actions": {
                "arm": {
                    "does": "Arm the system",
                    "writes": ["system.armed"],
                    "verify": {"system.armed": {"eq": True}},
                    "verify_timeout_ms": 50_000,
                    "input": {
                        "type": "object",
                        "properties": {"zone": {"type": "integer", "minimum": 1}},
                        "additionalProperties": False,
                    },
                },
            }
        }
    },
)


def panel_application() -> Application:
    """Arming is accepted and does nothing by itself: the test's report is what lands.
    ``user.token`` is redacted."""
    return Application.in_process(
        PANEL,
        start="panel",
        state={"system": {"armed": False}, "user": {"name": "ada", "token": "s3cret"}},
        handlers={"panel.arm": lambda args: None},
        redaction=["user.token"],
    )
