"""One gate checks both the output and the world: an executor fires through a session, and a
state contract among the criteria reads the session's substrate."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from assay.clock import VirtualClock
from assay.graph import Session, build_navigation_graph
from assay.workflow import Engine, RunRecord, RunStatus, StepContext
from workflow_steps import memory_ledger, workflow_of

GRAPH = build_navigation_graph(
    "mail",
    pages={
        "desk": {
            "actions": {
                "send": {
                    "does": "Send the draft",
                    "writes": ["inbox.sent_count"],
                    "verify_expression": "inbox.sent_count > 0",
                    "reversibility": "irreversible",
                }
            }
        }
    },
)


async def send(ctx: StepContext) -> dict[str, Any]:
    assert ctx.session is not None
    assert isinstance(ctx.clock, VirtualClock)
    fired = ctx.session.fire("desk.send")
    await ctx.clock.advance(1)  # virtual time: lets the handler and settlement run
    answer = ctx.session.did_it_work(fired.transition_id or "")
    return {"sent": [fired.transition_id], "answer": answer.answer}


def flow(*criteria: Any) -> Any:
    return workflow_of(
        {
            "id": "send",
            "executor": send,
            "empty_output": {"sent": []},
            "verify": {"criteria": ["output.sent.length <= 1", *criteria]},
            "reversibility": "irreversible",
        },
        budget={"iterations_per_attempt": 1},
    )


def run_with(session_applies: bool, *criteria: Any) -> tuple[RunRecord, list[Any]]:
    async def main() -> tuple[RunRecord, list[Any]]:
        clock = VirtualClock()
        session: Session = GRAPH.create_session(
            node="desk", state={"inbox": {"sent_count": 0}}, clock=clock
        )

        def handler(args: dict[str, Any]) -> None:
            if session_applies:
                session.report({"inbox": {"sent_count": 1}})

        session.register_actions("desk", {"send": handler})
        engine = Engine(flow(*criteria), memory_ledger(clock), clock=clock, session=session)
        record = await engine.astart({})
        await session.close()
        verdicts = engine.ledger.query(run=record.run_id, kind="verdict")
        return record, [v.body["verdict"] for v in verdicts]

    return asyncio.run(main())


def test_the_gate_passes_when_the_world_changed_as_claimed() -> None:
    record, (verdict,) = run_with(True, {"state": "inbox.sent_count === 1"})
    assert record.status is RunStatus.COMPLETED
    assert [(c["verifier"], c["passed"]) for c in verdict["criteria"]] == [
        ("expression", True),
        ("state", True),
    ]


def test_the_gate_fails_when_the_world_did_not_change_whatever_the_output_says() -> None:
    record, (verdict,) = run_with(False, {"state": {"inbox.sent_count": {"gte": 1}}})
    assert record.status is RunStatus.PARKED
    state = verdict["criteria"][1]
    assert state["verifier"] == "state"
    assert state["passed"] is False
    assert state["criterion"] == 'state: {"inbox.sent_count":{"gte":1}}'
    assert state["reason"] == "inbox.sent_count gte 1 but saw 0"


def test_without_a_session_a_state_criterion_fails_and_says_why() -> None:
    from workflow_steps import Recorder

    workflow = workflow_of(
        {
            "id": "a",
            "executor": Recorder([{"items": [1]}]),
            "empty_output": {"items": []},
            "verify": {"criteria": [{"state": "inbox.sent_count > 0"}]},
        },
        budget={"iterations_per_attempt": 1},
    )
    engine = Engine(workflow, memory_ledger())
    record = engine.start({})
    assert record.status is RunStatus.PARKED
    (verdict,) = engine.ledger.query(run=record.run_id, kind="verdict")
    assert verdict.body["verdict"]["criteria"][0]["reason"] == (
        "no session observes the application, so the world was not checked; run the "
        "workflow with a session"
    )


def test_a_state_criterion_never_shows_a_redacted_value() -> None:
    # The contract was compiled without the session's redaction, so its failure wrote
    # 'but saw "sk-live-TOPSECRET"' into the verdict and the critique.
    from workflow_steps import Recorder

    secret = "sk-live-TOPSECRET"
    workflow = workflow_of(
        {
            "id": "a",
            "executor": Recorder([{"items": [1]}]),
            "empty_output": {"items": []},
            "verify": {
                "criteria": [
                    {"state": "creds.api_key === 'expected-key' || creds.api_key.slice(0, 0)"},
                    {"state": {"creds.api_key": {"eq": "expected-key"}}},
                ]
            },
        },
        budget={"iterations_per_attempt": 1},
    )

    async def main() -> tuple[RunRecord, Engine]:
        clock = VirtualClock()
        session: Session = GRAPH.create_session(
            node="desk",
            state={"creds": {"api_key": secret}},
            clock=clock,
            redaction=["creds.api_key"],
        )
        engine = Engine(workflow, memory_ledger(clock), clock=clock, session=session)
        record = await engine.astart({})
        await session.close()
        return record, engine

    record, engine = asyncio.run(main())

    assert record.status is RunStatus.PARKED
    entries = engine.ledger.query(run=record.run_id)
    assert not [e.kind for e in entries if "TOPSECRET" in json.dumps(e.body)]
    (verdict,) = [e.body["verdict"] for e in entries if e.kind == "verdict"]
    assert [c["reason"] for c in verdict["criteria"]] == [
        "does not hold (what it evaluated to is withheld: it reads a redacted key)",
        'creds.api_key eq "expected-key" but saw [redacted]',
    ]
    assert "TOPSECRET" not in verdict["critique"]
