"""``assay example already-true``: three presses of "open billing", run for real.

1. the already-true press: the view is already billing; the declarative verify covers the
   write and holds, so the fire settles on its handler and carries the evidence;
2. the ordinary press beside it: the view is elsewhere; the handler's report lands and the
   verify contract settles it;
3. the same press on an action that declares writes and no verify: nothing is guessed for
   it, so it waits for a state report that an idempotent handler never sends — the honest
   limit, shown rather than described.

Every line printed is a real result of a real session.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from assay.graph import Session, build_navigation_graph
from assay.graph.evidence import EvidenceLog

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
WAIT_CEILING_S = 0.5


def _open_billing(session: Session) -> Callable[[dict[str, Any]], None]:
    """The application's handler: a store that publishes on change, like any store."""

    def handler(args: dict[str, Any]) -> None:
        if session.store.current.objects.get("view", {}).get("domain") != "billing":
            session.report({"view.domain": "billing"}, source="app")

    return handler


async def _press(
    label: str, action: str, domain: str, evidence: EvidenceLog | None
) -> dict[str, Any]:
    session = GRAPH.create_session(
        node="workspace", state={"view": {"domain": domain}}, evidence=evidence
    )
    handler = _open_billing(session)
    session.register_actions(
        "workspace", handlers={"open-billing": handler, "open-billing-writes-only": handler}
    )
    fired = session.fire(f"workspace.{action}", source="agent")
    settled = await session.wait(fired.transition_id or "", WAIT_CEILING_S)
    answer = session.did_it_work(fired.transition_id or "")
    await session.close()
    return {
        "press": label,
        "state_before": {"view.domain": domain},
        "fire": fired.model_dump(mode="json", exclude_none=True),
        "after_wait": settled.model_dump(mode="json", exclude_none=True),
        "did_it_work": answer.model_dump(mode="json", exclude_none=True),
    }


async def run(evidence: EvidenceLog | None = None) -> list[dict[str, Any]]:
    """The three presses, in order; each fire and settlement goes to ``evidence``."""
    return [
        await _press("already true", "open-billing", "billing", evidence),
        await _press("ordinary", "open-billing", "workspace", evidence),
        await _press("writes, no verify", "open-billing-writes-only", "billing", evidence),
    ]


def main(evidence: EvidenceLog | None = None) -> int:
    for line in asyncio.run(run(evidence)):
        print(json.dumps(line, ensure_ascii=False))
    return 0
