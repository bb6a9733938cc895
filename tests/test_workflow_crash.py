"""Crash and resume: a real ``assay run`` killed mid-step (SIGKILL) resumes from its last
commit, without repeating the committed step's effect, and leaves a ledger that verifies."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

from assay.ledger import open_ledger
from assay.workflow import RunStatus, Workflows

TESTS = Path(__file__).resolve().parent
FLOW = """\
workflow: crashable
budget: {iterations_per_attempt: 2}
steps:
  - id: first
    executor: workflow_cli_steps:first
    empty_output: {items: []}
    verify: {criteria: ['output.items.every(i => i > 0)']}
  - id: second
    executor: workflow_cli_steps:second
    empty_output: {items: []}
    verify: {criteria: ['output.items.every(i => i > 1)']}
"""


def assay(*args: str, **kwargs: object) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "assay", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        **kwargs,  # type: ignore[arg-type]
    )


def read_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    """The child's next stdout line, waiting at most ``timeout_s`` (a readiness wait, no sleep)."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout_s):
            process.kill()
            raise AssertionError(f"no output in {timeout_s}s; stderr: {process.stderr.read()}")  # type: ignore[union-attr]
    return process.stdout.readline().strip()


def _blocked_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path, Path, str]:
    """An ``assay run`` of ``FLOW`` blocked in its second step, with its effects file, the
    file that blocks the step (remove it to let the step finish) and its ledger URL."""
    flow = tmp_path / "crashable.yaml"
    flow.write_text(FLOW, encoding="utf-8")
    effects, block = tmp_path / "effects.txt", tmp_path / "block"
    block.touch()
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    run_input = json.dumps({"effects": str(effects), "block": str(block)})
    running = assay("run", str(flow), "--input", run_input, "--ledger", url)
    assert read_line(running, 60) == "BLOCKED"
    return running, effects, block, url


def test_a_run_killed_mid_step_resumes_from_its_last_commit(tmp_path: Path) -> None:
    running, effects, block, url = _blocked_run(tmp_path)
    running.send_signal(signal.SIGKILL)
    running.communicate(timeout=30)
    assert running.returncode == -signal.SIGKILL

    with open_ledger(url) as ledger:
        (interrupted,) = Workflows(ledger).runs()
        assert ledger.verify().ok
    assert interrupted.status is RunStatus.RUNNING
    assert interrupted.committed == {"first": {"items": [1]}}
    assert interrupted.next_step == "second"
    assert effects.read_text().splitlines() == ["first", "second"]

    block.unlink()
    resumed = assay("resume", interrupted.run_id, "--input", "{}", "--ledger", url)
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err

    record = json.loads(out)
    assert record["status"] == "completed"
    assert record["committed"] == {"first": {"items": [1]}, "second": {"items": [2]}}
    assert effects.read_text().splitlines() == ["first", "second", "second"]
    with open_ledger(url) as ledger:
        assert ledger.verify().ok
        kinds = [entry.kind for entry in ledger.query(run=interrupted.run_id)]
    assert kinds == ["commit", "verdict", "commit", "resume", "verdict", "commit"]


def test_ctrl_c_stops_a_run_mid_step_at_once_and_it_resumes(tmp_path: Path) -> None:
    # asyncio.run took SIGINT as a request to cancel at the run's next pause; steps that never
    # paused ran on, each verified and committed, and only then did it exit 130.
    running, effects, block, url = _blocked_run(tmp_path)
    running.send_signal(signal.SIGINT)  # the step blocks until the process is interrupted
    out, err = running.communicate(timeout=30)
    assert running.returncode == 130, err
    assert out == ""
    assert effects.read_text().splitlines() == ["first", "second"]  # no step after it ran

    with open_ledger(url) as ledger:
        (interrupted,) = Workflows(ledger).runs()
        assert ledger.verify().ok
        kinds = [entry.kind for entry in ledger.query(run=interrupted.run_id)]
    assert kinds == ["commit", "verdict", "commit"]  # start, first's verdict and commit
    assert interrupted.status is RunStatus.RUNNING
    assert interrupted.next_step == "second"
    assert err.endswith(
        f"assay run: interrupted; run {interrupted.run_id} stopped at step 'second', which did "
        f"not commit; take it up again with: assay resume {interrupted.run_id} --ledger {url}\n"
    )

    block.unlink()
    resumed = assay("resume", interrupted.run_id, "--input", "{}", "--ledger", url)
    out, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, err
    assert json.loads(out)["committed"] == {"first": {"items": [1]}, "second": {"items": [2]}}
