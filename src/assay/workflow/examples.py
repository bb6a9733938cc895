"""The executors of ``examples/workflows/competitor_deep_dive.yaml``, runnable offline.

They stand in for a model-driven agent, and behave like one: the first draft of the
hypotheses also cites a rumour that is not among the input's sources, the gate rejects it,
and the critique sent back through the planner makes the next draft keep to cited sources.
"""

from __future__ import annotations

from typing import Any, Final

from assay.workflow.context import StepContext

RUMOUR = "forum: unverified rumour"


def plan_hypotheses(ctx: StepContext) -> dict[str, Any]:
    """The plan for the next draft: after any critique, keep to the input's own sources."""
    return {"cited_only": bool(ctx.critiques), "critiques_seen": len(ctx.critiques)}


def select_hypotheses(ctx: StepContext) -> dict[str, Any]:
    """One hypothesis per finding about the competitor; a first draft adds a rumour."""
    competitor = ctx.input.get("competitor", "")
    hypotheses = [
        {"claim": finding["claim"], "source": finding["source"]}
        for finding in ctx.input.get("findings", [])
        if finding.get("about") == competitor
    ]
    plan = ctx.plan or {}
    if not plan.get("cited_only") and hypotheses:
        hypotheses.append({"claim": f"{competitor} is about to be acquired", "source": RUMOUR})
    return {"selected_count": len(hypotheses), "hypotheses": hypotheses}


def write_brief(ctx: StepContext) -> dict[str, Any]:
    """A brief over the committed hypotheses, citing each one's source once."""
    hypotheses = ctx.input["steps"]["select_hypotheses"]["hypotheses"]
    if not hypotheses:
        return {"summary": "", "cited": []}
    competitor = ctx.input.get("competitor", "the competitor")
    lines = [f"- {h['claim']} ({h['source']})" for h in hypotheses]
    cited = sorted({h["source"] for h in hypotheses})
    return {"summary": f"{competitor}:\n" + "\n".join(lines), "cited": cited}


# The first step of competitor_deep_dive.yaml as a mapping, for the demo and the daemon's
# built-in workflow: it fails its gate once, takes the critique, then passes.
COMPETITOR_DEEP_DIVE: Final[dict[str, Any]] = {
    "workflow": "competitor_deep_dive",
    "description": "Hypotheses about a competitor, each backed by a cited source.",
    "budget": {"attempts": 2, "iterations_per_attempt": 3, "wall_s": 60},
    "steps": [
        {
            "id": "select_hypotheses",
            "planner": "assay.workflow.examples:plan_hypotheses",
            "executor": "assay.workflow.examples:select_hypotheses",
            "empty_output": {"selected_count": 0, "hypotheses": []},
            "verify": {
                "prompt": "Check that every selected hypothesis cites a source from the input.",
                "criteria": [
                    "output.selected_count === output.hypotheses.length",
                    "output.hypotheses.every(h => input.sources.includes(h.source))",
                ],
            },
            "escalation": ["fresh_attempt", "human"],
        }
    ],
}
COMPETITOR_INPUT: Final[dict[str, Any]] = {
    "competitor": "Acme",
    "sources": ["acme-10k-2025", "acme-pricing-page"],
    "findings": [
        {"about": "Acme", "claim": "Acme cut list prices by 10%", "source": "acme-pricing-page"},
        {
            "about": "Acme",
            "claim": "Acme's margins fell two years running",
            "source": "acme-10k-2025",
        },
    ],
}
