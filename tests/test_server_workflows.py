"""Workflow runs over HTTP, through a real uvicorn server: start, read, list, resume."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from assay.examples.outpost import APPLICATION
from assay.ledger import Ledger, MemoryBackend
from assay.workflow.examples import COMPETITOR_INPUT
from http_daemon import serving, spawn_daemon

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "workflows"

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with serving(APPLICATION) as served, httpx.AsyncClient(base_url=served.url) as http:
        yield http


async def test_a_run_fails_its_gate_once_then_commits_and_reads_back(
    client: httpx.AsyncClient,
) -> None:
    started = await client.post(
        "/v1/workflows/competitor_deep_dive/runs", json={"input": COMPETITOR_INPUT}
    )
    assert started.status_code == 200, started.text
    run = started.json()
    assert (run["status"], run["verdicts"], list(run["committed"])) == (
        "completed",
        2,
        ["select_hypotheses"],
    )
    again = await client.get(f"/v1/runs/{run['run_id']}")
    assert again.json() == run
    listed = await client.get("/v1/runs")
    assert [r["run_id"] for r in listed.json()["runs"]] == [run["run_id"]]
    entries = (await client.get("/v1/ledger/entries", params={"run": run["run_id"]})).json()
    kinds = [entry["kind"] for entry in entries]
    assert kinds == ["commit", "verdict", "verdict", "commit"]
    resumed = await client.post(f"/v1/runs/{run['run_id']}/resume", json={"input": {}})
    assert resumed.status_code == 409, resumed.text
    assert resumed.json()["run_status"] == "completed"


async def test_only_workflows_the_daemon_was_given_run_by_name(
    client: httpx.AsyncClient,
) -> None:
    for name in ("nope", "..%2F..%2Fetc%2Fpasswd", "os:system"):
        response = await client.post(f"/v1/workflows/{name}/runs", json={"input": {}})
        assert response.status_code == 404, response.text
        assert response.headers["content-type"] == "application/problem+json"
    assert response.json()["detail"] == (
        "no workflow is called 'os:system'; this daemon runs: competitor_deep_dive "
        "(GET /v1/workflows)"
    )
    listed = await client.get("/v1/workflows")
    assert listed.json() == {"workflows": ["competitor_deep_dive"]}
    missing = await client.get("/v1/runs/no-such-run")
    assert missing.status_code == 404
    detail = missing.json()["detail"]
    assert detail.startswith("no run 'no-such-run' in the ledger at ")
    assert detail.endswith("; GET /v1/runs lists the runs in the ledger")
    assert "assay runs" not in detail  # the CLI's hint is the CLI's


def test_a_workflow_file_given_to_the_daemon_takes_the_place_of_the_built_in_one() -> None:
    """examples/workflows/competitor_deep_dive.yaml has two steps; the built-in workflow of
    that name is its first step alone, and used to shadow the file the operator gave."""
    with spawn_daemon(["--ledger", "memory:", "--workflows", str(EXAMPLES)]) as daemon:
        listed = httpx.get(f"{daemon.url}/v1/workflows", timeout=60)
        assert listed.json() == {"workflows": sorted(path.stem for path in EXAMPLES.glob("*.yaml"))}
        started = httpx.post(
            f"{daemon.url}/v1/workflows/competitor_deep_dive/runs",
            json={"input": COMPETITOR_INPUT},
            timeout=60,
        )
    assert started.status_code == 200, started.text
    run = started.json()
    assert run["status"] == "completed"
    assert list(run["committed"]) == ["select_hypotheses", "write_brief"]
    assert run["source"] == str(EXAMPLES / "competitor_deep_dive.yaml")


APPROVAL = (
    "workflow: approval\nbudget: {iterations_per_attempt: 1}\nsteps:\n  - id: a\n"
    "    executor: workflow_cli_steps:needs_approval\n    empty_output: {items: []}\n"
    "    verify: {criteria: ['output.items.every(i => i > 0)']}\n"
    "    escalation: [fresh_attempt, human]\n"
)


def test_a_workflow_file_broken_after_the_daemon_started_is_answered_409_not_400(
    tmp_path: Path,
) -> None:
    """The file is the operator's, so the caller gets a conflict naming it (it got 400, as if
    its own request were at fault); once the file is mended, the parked run resumes."""
    directory = tmp_path / "flows"
    directory.mkdir()
    flow = directory / "approval.yaml"
    flow.write_text(APPROVAL, encoding="utf-8")
    tests = str(Path(__file__).resolve().parent)
    arguments = ["--ledger", f"sqlite:///{tmp_path / 'ledger.db'}", "--workflows", str(directory)]
    with spawn_daemon(arguments, environ={"PYTHONPATH": tests}) as daemon:
        parked = httpx.post(f"{daemon.url}/v1/workflows/approval/runs", json={}, timeout=60)
        assert parked.json()["status"] == "parked", parked.text
        run_id = parked.json()["run_id"]

        flow.write_text("workflow: approval\nsteps: [", encoding="utf-8")
        started = httpx.post(f"{daemon.url}/v1/workflows/approval/runs", json={}, timeout=60)
        resumed = httpx.post(
            f"{daemon.url}/v1/runs/{run_id}/resume", json={"input": {"approve": True}}, timeout=60
        )
        for response, what in ((started, "the workflow 'approval'"), (resumed, "run")):
            assert response.status_code == 409, response.text
            problem = response.json()
            assert problem["type"] == "urn:assay:problem:workflow-unavailable"
            assert problem["detail"].startswith(f"{what}")
            assert f"{flow} is not valid YAML" in problem["detail"]
            assert problem["detail"].endswith(
                "; whoever runs this daemon must fix its file (the request was not at fault)"
            )
        assert resumed.json()["detail"].startswith(f"run {run_id!r}'s workflow cannot be loaded")

        flow.write_text(APPROVAL, encoding="utf-8")
        done = httpx.post(
            f"{daemon.url}/v1/runs/{run_id}/resume", json={"input": {"approve": True}}, timeout=60
        )
    assert done.status_code == 200, done.text
    assert done.json()["committed"] == {"a": {"items": [1]}}


async def test_runs_are_listed_a_page_at_a_time_and_by_status(client: httpx.AsyncClient) -> None:
    ids = []
    for _ in range(3):
        started = await client.post(
            "/v1/workflows/competitor_deep_dive/runs", json={"input": COMPETITOR_INPUT}
        )
        ids.append(started.json()["run_id"])

    async def listed(**params: object) -> list[str]:
        response = await client.get("/v1/runs", params=params)
        assert response.status_code == 200, response.text
        return [r["run_id"] for r in response.json()["runs"]]

    assert await listed() == ids
    assert await listed(limit=2) == ids[:2]
    assert await listed(after=ids[1]) == ids[2:]
    assert await listed(after=ids[2]) == []
    assert await listed(status="completed", limit=1, after=ids[0]) == [ids[1]]
    assert await listed(status="parked") == []
    unknown = await client.get("/v1/runs", params={"after": "no-such-run"})
    assert unknown.status_code == 404
    assert unknown.json()["detail"].startswith("no run 'no-such-run' in the ledger at ")
    for params, where in (({"limit": 0}, "limit"), ({"status": "stuck"}, "status")):
        refused = await client.get("/v1/runs", params=params)
        assert refused.status_code == 400, refused.text
        assert [error["field"] for error in refused.json()["errors"]] == [f"query.{where}"]


async def test_a_run_or_resume_input_over_a_mebibyte_is_a_400_and_nothing_is_recorded() -> None:
    """The daemon reads bodies up to --max-body-bytes (16 MiB by default, else 413); a run's
    input past the workflow's budget.output_bytes (1 MiB here) was taken, recorded in full
    and handed to every step."""
    ledger = Ledger(MemoryBackend())
    huge = {**COMPETITOR_INPUT, "notes": "a" * 2**20}
    size = len(json.dumps(huge, sort_keys=True, separators=(",", ":")))
    unsourced = {"competitor": "Acme", "sources": [], "findings": [COMPETITOR_INPUT["findings"][0]]}
    async with (
        serving(APPLICATION, ledger=ledger) as served,
        httpx.AsyncClient(base_url=served.url, timeout=60) as client,
    ):
        before = ledger.size
        started = await client.post("/v1/workflows/competitor_deep_dive/runs", json={"input": huge})
        assert (ledger.size, (await client.get("/v1/runs")).json()) == (before, {"runs": []})

        parked = await client.post(
            "/v1/workflows/competitor_deep_dive/runs", json={"input": unsourced}
        )
        assert parked.json()["status"] == "parked", parked.text
        run_id = parked.json()["run_id"]
        before = ledger.size
        resumed = await client.post(f"/v1/runs/{run_id}/resume", json={"input": huge})
        assert ledger.size == before
        assert (await client.get(f"/v1/runs/{run_id}")).json() == parked.json()

    for response, what, refused in (
        (started, "the run's input", "no run was started"),
        (resumed, "the human input", "the run was not resumed"),
    ):
        assert response.status_code == 400, response.text
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json() == {
            "type": "urn:assay:problem:bad-request",
            "title": "Bad request",
            "status": 400,
            "detail": f"{what} is {size:,} bytes as canonical JSON, over the workflow's limit "
            f"of 1,048,576 (budget.output_bytes), so {refused} and nothing was recorded; send "
            "less, or store the data elsewhere and send a reference to it",
            "instance": response.request.url.path,
            "field": "input",
        }
