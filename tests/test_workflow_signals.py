"""Runs that never end, in real processes: a daemon whose first SIGTERM waits for a hung run
stops on the second at once, leaving a ledger that verifies; ``assay run`` parks a run whose
executor is stuck and exits; a budget beyond the ceiling is refused by every command."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from assay.ledger import open_ledger
from assay.workflow import RunStatus, Workflows
from http_daemon import spawn_daemon

TESTS = Path(__file__).resolve().parent
ENVIRON = {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}


def flow(directory: Path, executor: str, budget: str = "{}") -> Path:
    """``hung.yaml`` in ``directory``: one step run by ``workflow_hung_steps:EXECUTOR``."""
    directory.mkdir(exist_ok=True)
    path = directory / "hung.yaml"
    path.write_text(
        f"workflow: hung\nbudget: {budget}\nsteps:\n  - id: a\n"
        f"    executor: workflow_hung_steps:{executor}\n    empty_output: {{items: []}}\n"
        "    verify: {criteria: ['output.items.every(i => i > 0)']}\n",
        encoding="utf-8",
    )
    return path


def assay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **ENVIRON},
    )


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    """Wait for ``condition`` to hold (a generous guard, never a measurement)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s} s for {what}")
        time.sleep(0.02)


@pytest.mark.parametrize("executor", ["swallows", "blocks"])
def test_a_second_sigterm_stops_a_daemon_waiting_for_a_hung_run_at_once(
    tmp_path: Path, executor: str
) -> None:
    """The first SIGTERM waits for open requests, the hung run among them (up to its wall);
    the second stops the daemon at once, whether the executor swallows its cancellation or
    blocks its thread. The run stays `running` (resumable) and the ledger verifies."""
    directory = tmp_path / "flows"
    flow(directory, executor)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    arguments = ["--ledger", url, "--workflows", str(directory)]
    with spawn_daemon(arguments, environ=ENVIRON) as daemon:
        answers: list[int] = []

        def start() -> None:
            try:
                started = httpx.post(f"{daemon.url}/v1/workflows/hung/runs", json={}, timeout=120)
                answers.append(started.status_code)
            except httpx.HTTPError:
                answers.append(0)  # the connection closed unanswered

        request = threading.Thread(target=start, daemon=True)
        request.start()
        wait_until(lambda: "HUNG\n" in daemon.log, "the executor to run")

        daemon.process.send_signal(signal.SIGTERM)
        wait_until(
            lambda: any("Waiting for connections to close" in line for line in daemon.log),
            "the first SIGTERM to wait for the open request",
        )
        assert daemon.process.poll() is None
        daemon.process.send_signal(signal.SIGTERM)
        returncode = daemon.process.wait(60)  # a guard: it stops at once
        request.join(60)

    assert returncode == 0, "".join(daemon.log)
    assert answers == [503], answers  # stopped mid-request: not a 500, not a 200
    assert not any("Traceback" in line for line in daemon.log), "".join(daemon.log)
    verified = assay("ledger", "verify", "--ledger", url)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    with open_ledger(url) as ledger:
        (run,) = Workflows(ledger).runs()
        assert run.status is RunStatus.RUNNING
        assert [entry.kind for entry in ledger.query(run=run.run_id)] == ["commit"]


def test_assay_run_parks_a_run_whose_plain_executor_never_returns_and_exits(
    tmp_path: Path,
) -> None:
    """Its executor blocks its thread for ever; at ``--wall-s`` plus the grace the run parks,
    saying so, and the process exits 1 (the thread is a daemon: the exit does not wait)."""
    path = flow(tmp_path, "blocks")
    url = f"sqlite:///{tmp_path / 'ledger.db'}"

    result = assay("run", str(path), "--wall-s", "0.1", "--ledger", url)

    assert result.returncode == 1, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "parked"
    reason = record["park"]["reason"]
    assert re.fullmatch(  # real time: read a little after the bound
        r"step a's executor did not stop after the workflow budget's wall_s ran out "
        r"\(0\.1\d* of 0\.1; the default wall, as the workflow's budget sets no wall_s\); it "
        r"was abandoned \(it may still be running\), so the run parks rather than start "
        r"another attempt beside it",
        reason,
    ), reason
    assert assay("ledger", "verify", "--ledger", url).returncode == 0


LARGE = "{attempts: 1000000, iterations_per_attempt: 100000}"
REFUSAL = (
    "workflow 'hung': its budget allows up to 100,000 executor calls in one run (step 'a': 1 "
    "attempt × 100,000 iterations_per_attempt), over the ceiling of 1,000 (MAX_EXECUTOR_CALLS)"
)


def test_every_command_refuses_a_budget_beyond_the_ceiling_with_exit_2(tmp_path: Path) -> None:
    path = flow(tmp_path / "flows", "blocks", LARGE)
    url = f"sqlite:///{tmp_path / 'ledger.db'}"

    linted = assay("lint", str(path))
    ran = assay("run", str(path), "--ledger", url)
    served = assay("serve", "--port", "0", "--ledger", url, "--workflows", str(path.parent))

    assert (linted.returncode, ran.returncode, served.returncode) == (2, 2, 2)
    assert linted.stderr.startswith(f"assay lint: error: {REFUSAL}; ")
    assert ran.stderr.startswith(f"assay run: error: {REFUSAL}; ")
    assert served.stderr.endswith(
        f"assay serve: --workflows: {REFUSAL}; lower budget.attempts or "
        "budget.iterations_per_attempt, bound the run with budget.iterations, or, if a run may "
        "really take that, say so in the workflow's budget with allow_large_budget: true\n"
    )
    assert not (tmp_path / "ledger.db").exists()  # nothing was run


def test_a_wall_that_is_no_positive_number_of_seconds_up_to_a_day_is_refused(
    tmp_path: Path,
) -> None:
    path = flow(tmp_path, "blocks")

    ran = assay("run", str(path), "--wall-s", "0", "--ledger", "memory:")
    served = assay("serve", "--port", "0", "--ledger", "memory:", "--workflow-wall-s", "90000")

    assert (ran.returncode, ran.stderr) == (
        2,
        "assay run: error: --wall-s must be a number of seconds above 0 and at most 86,400 (a "
        "day; MAX_WALL_S), not 0.0\n",
    )
    assert (served.returncode, served.stderr) == (
        2,
        "assay serve: workflow_wall_s must be a positive number of seconds, at most 86,400 (a "
        "day), not 90000.0 (set by --workflow-wall-s)\n",
    )
