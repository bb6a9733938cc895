"""``assay lint``, ``assay run``, ``assay resume`` and ``assay runs`` as real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from assay.ledger import open_ledger

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "workflows" / "competitor_deep_dive.yaml"
EXAMPLE_INPUT = EXAMPLE.with_name("competitor_deep_dive.input.json")
TESTS = ROOT / "tests"


def assay(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=cwd,
    )


def _one_step(directory: Path, name: str, criterion: str) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(
        f"workflow: {name}\nsteps:\n  - id: a\n    executor: json:dumps\n"
        f"    empty_output: {{items: []}}\n    verify: {{criteria: ['{criterion}']}}\n",
        encoding="utf-8",
    )
    return path


def test_lint_exits_0_when_clean_1_with_problems_2_when_unreadable(tmp_path: Path) -> None:
    clean = assay("lint", str(EXAMPLE))
    assert clean.returncode == 0, clean.stderr
    assert "workflow 'competitor_deep_dive' passes lint (2 steps)" in clean.stdout
    single = _one_step(tmp_path, "single", "output.items.length >= 0")
    one = assay("lint", str(single))
    assert one.stdout == f"{single}: workflow 'single' passes lint (1 step)\n", one.stderr

    found = assay("lint", str(_one_step(tmp_path, "bad", "output.items.length > 0")))
    assert found.returncode == 1
    assert "[zero-case] step 'a': criterion `output.items.length > 0` fails" in found.stdout

    missing = assay("lint", str(tmp_path / "missing.yaml"))
    assert missing.returncode == 2
    assert "cannot read the workflow file" in missing.stderr
    unknown = assay("lint", "no-such-workflow")
    assert (unknown.returncode, unknown.stderr) == (
        2,
        "assay lint: error: no workflow 'no-such-workflow': not a file and not module:attribute\n",
    )


def test_run_the_example_offline_from_any_directory(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    result = assay(
        "run", str(EXAMPLE), "--input", f"@{EXAMPLE_INPUT}", "--ledger", url, cwd=tmp_path
    )

    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["status"] == "completed"
    assert record["committed"]["write_brief"]["cited"] == ["10-K 2025", "press: Q3 launch"]
    assert "select_hypotheses attempt 1 iteration 1: fail:" in result.stderr
    assert "select_hypotheses: committed" in result.stderr


def test_run_parks_with_exit_1_and_resume_with_a_persons_input_completes(tmp_path: Path) -> None:
    flow = tmp_path / "approval.yaml"
    flow.write_text(
        "workflow: approval\nbudget: {iterations_per_attempt: 1}\nsteps:\n  - id: a\n"
        "    executor: workflow_cli_steps:needs_approval\n    empty_output: {items: []}\n"
        "    verify: {criteria: ['output.items.every(i => i > 0)']}\n"
        "    escalation: [fresh_attempt, human]\n",
        encoding="utf-8",
    )
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    open_ledger(url).close()  # an empty ledger
    none = assay("runs", "--ledger", url)
    assert (none.returncode, none.stdout) == (0, "")
    assert none.stderr == f"assay runs: no workflow runs in the ledger at {url}\n"

    parked = assay("run", str(flow), "--ledger", url)
    assert parked.returncode == 1, parked.stderr
    run_id = json.loads(parked.stdout)["run_id"]
    # The hint names the ledger given: without it, the resume would look in ./assay.db.
    assert parked.stderr.endswith(
        f"run {run_id} is parked at step 'a'; resume it with: assay resume {run_id} "
        f"--input '{{...}}' --ledger {url}\n"
    )
    assert "a: parked: the attempt 2 budget's iterations ran out (1 of 1)" in parked.stderr

    listed = assay("runs", "--ledger", url)
    assert listed.returncode == 0
    assert listed.stdout.split() == [run_id, "parked", "approval", "step=a"]
    assert assay("runs", "--status", "parked", "--limit", "1", "--ledger", url).stdout == (
        listed.stdout
    )
    later = assay("runs", "--after", run_id, "--status", "parked", "--ledger", url)
    assert (later.returncode, later.stdout) == (0, "")
    assert later.stderr == (
        f"assay runs: no parked workflow runs after {run_id} in the ledger at {url}\n"
    )

    done = assay("resume", run_id, "--input", '{"approve": true}', "--ledger", url)
    assert done.returncode == 0, done.stderr
    assert assay("runs", "--status", "parked", "--ledger", url).stdout == ""
    assert json.loads(done.stdout)["committed"] == {"a": {"items": [1]}}

    again = assay("resume", run_id, "--ledger", url)
    assert again.returncode == 2
    assert "every step has committed" in again.stderr

    gone = assay("run", str(flow), "--ledger", "memory:")
    assert gone.returncode == 1
    assert gone.stderr.splitlines()[-1].endswith(
        "is parked at step 'a'; its ledger memory: lived in this process and is gone with it, "
        "so it cannot be resumed: run it with --ledger sqlite:///PATH to resume it later"
    )


def test_bad_input_and_unknown_runs_exit_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    not_json = assay("run", str(EXAMPLE), "--input", "{nope", "--ledger", url)
    assert not_json.returncode == 2
    assert "--input is not valid JSON" in not_json.stderr
    not_object = assay("run", str(EXAMPLE), "--input", "[1]", "--ledger", url)
    assert not_object.returncode == 2
    assert "--input must be a JSON object, not an array" in not_object.stderr
    half_pair = assay("run", str(EXAMPLE), "--input", '{"topic": "\\udc00"}', "--ledger", url)
    assert (half_pair.returncode, half_pair.stderr) == (
        2,
        "assay run: error: --input: a string holds half of a surrogate pair, such as \\ud800 "
        "alone, which is not Unicode text; send each character whole or as a full surrogate "
        "pair\n",
    )
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"workflow: \xff\n")
    undecodable_input = assay("run", str(EXAMPLE), "--input", f"@{binary}", "--ledger", url)
    assert (undecodable_input.returncode, undecodable_input.stderr) == (
        2,
        f"assay run: error: the --input file {str(binary)!r} is not UTF-8 text: it holds "
        "the byte 0xff at offset 10\n",
    )
    undecodable = assay("run", str(binary), "--ledger", url)
    assert (undecodable.returncode, undecodable.stderr) == (
        2,
        f"assay run: error: the workflow file {str(binary)!r} is not UTF-8 text: "
        "invalid start byte\n",
    )
    unlinted = tmp_path / "unlinted.yaml"
    unlinted.write_text(
        "workflow: bad\nsteps:\n  - id: a\n    executor: json:dumps\n"
        "    empty_output: {items: []}\n    verify: {criteria: ['output.items.length > 0']}\n",
        encoding="utf-8",
    )
    rejected = assay("run", str(unlinted), "--ledger", url)
    assert rejected.returncode == 2
    assert "workflow 'bad' was rejected at load (1 problem)" in rejected.stderr
    unknown_workflow = assay("run", "no-such-workflow", "--ledger", url)
    assert unknown_workflow.returncode == 2
    assert unknown_workflow.stderr == (
        "assay run: error: no workflow 'no-such-workflow': not a file and not module:attribute\n"
    )
    assert not (tmp_path / "ledger.db").exists()  # none of these made a ledger
    nowhere = assay("resume", "no-such-run", "--ledger", url)
    assert nowhere.returncode == 2
    assert f"there is no ledger at {url}" in nowhere.stderr
    assert not (tmp_path / "ledger.db").exists()
    open_ledger(url).close()
    unknown = assay("resume", "no-such-run", "--ledger", url)
    assert unknown.returncode == 2
    assert unknown.stderr == (
        f"assay resume: error: no run 'no-such-run' in the ledger at {url}; "
        f"`assay runs --ledger {url}` lists the runs\n"
    )
    after_unknown = assay("runs", "--after", "no-such-run", "--ledger", url)
    assert (after_unknown.returncode, after_unknown.stderr) == (
        2,
        f"assay runs: error: no run 'no-such-run' in the ledger at {url}\n",
    )
    bad_status = assay("runs", "--status", "stuck", "--ledger", url)
    assert bad_status.returncode == 2
    assert "argument --status: invalid choice: 'stuck'" in bad_status.stderr


def test_run_asks_a_model_file_in_process_and_records_its_rulings(
    model_file: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    result = assay(
        "run", str(EXAMPLE), "--input", f"@{EXAMPLE_INPUT}", "--ledger", url,
        "--model-path", model_file,
    )  # fmt: skip

    # The tiny model's judgement decides whether the run completes or parks, never an error.
    assert result.returncode in {0, 1}, result.stderr
    assert "Traceback" not in result.stderr
    assert "Exception ignored" not in result.stderr
    assert "llama_context" not in result.stderr  # llama.cpp's warnings and information
    with open_ledger(url, create=False) as ledger:
        verdicts = [entry.body["verdict"] for entry in ledger.query(kind="verdict")]
    ruled = [v for v in verdicts if any(r["verifier"] == "model" for r in v["criteria"])]
    assert ruled, verdicts
    for verdict in ruled:
        assert verdict["tokens"] > 0
        reasons = [r["reason"] for r in verdict["criteria"] if r["verifier"] == "model"]
        assert not any(reason.startswith("the model ") for reason in reasons), reasons


def test_run_refuses_a_model_path_that_is_not_a_file_before_opening_the_ledger(
    tmp_path: Path,
) -> None:
    ledger = tmp_path / "ledger.db"
    missing = tmp_path / "judge.gguf"
    result = assay(
        "run", str(EXAMPLE), "--input", f"@{EXAMPLE_INPUT}", "--ledger", f"sqlite:///{ledger}",
        "--model-path", str(missing),
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (
        2,
        f"assay run: error: --model-path {missing}: no such file; give the path of a GGUF "
        "model file\n",
    )
    assert not ledger.exists()
    directory = assay("run", str(EXAMPLE), "--model-path", str(tmp_path))
    assert (directory.returncode, directory.stderr) == (
        2,
        f"assay run: error: --model-path {tmp_path}: is a directory; give the path of a GGUF "
        "model file\n",
    )

    both = assay("run", str(EXAMPLE), "--model-path", str(missing), "--model-url", "http://x/v1")
    assert both.returncode == 2
    assert "argument --model-url: not allowed with argument --model-path" in both.stderr


def test_an_input_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    given = tmp_path / "input.json"
    given.write_bytes(b"\xef\xbb\xbf" + EXAMPLE_INPUT.read_bytes())
    flow = tmp_path / "flow.yaml"
    flow.write_bytes(b"\xef\xbb\xbf" + EXAMPLE.read_bytes())
    result = assay("run", str(flow), "--input", f"@{given}", "--ledger", "memory:")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["status"] == "completed"


def test_an_input_nested_too_deeply_to_read_is_a_usage_error(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' + "[" * 100_000 + "]" * 100_000 + "}", encoding="utf-8")
    result = assay("run", str(EXAMPLE), "--input", f"@{deep}")
    assert (result.returncode, result.stderr) == (
        2,
        f"assay run: error: the --input file {str(deep)!r} nests deeper than 256 levels (too "
        "deeply to read); flatten it or send less of it\n",
    )


def test_runs_and_resume_refuse_a_memory_ledger_and_a_page_of_no_runs() -> None:
    # memory: holds nothing outside the process that wrote it: it was read as a ledger
    # without runs; and --limit 0 answered that the ledger held no runs.
    for command in (("runs",), ("resume", "some-run")):
        result = assay(*command, "--ledger", "memory:")
        assert result.returncode == 2
        assert result.stderr.startswith(
            f"assay {command[0]}: error: --ledger memory: names a ledger that lives only "
            f"inside one process, so it holds nothing for `assay {command[0]}` to read"
        )
    zero = assay("runs", "--limit", "0", "--ledger", "memory:")
    assert zero.returncode == 2
    assert "argument --limit: expected 1 or more runs, got 0" in zero.stderr


def test_a_run_nothing_could_judge_is_refused_before_a_ledger_is_made(tmp_path: Path) -> None:
    # A step checked only by a prompt, with no model to read it: the run was refused, but
    # only after the ledger file had been created.
    flow = tmp_path / "unjudged.yaml"
    flow.write_text(
        "workflow: unjudged\nsteps:\n  - id: a\n    executor: json:dumps\n"
        "    empty_output: {items: []}\n    verify: {prompt: Check the items.}\n",
        encoding="utf-8",
    )
    ledger = tmp_path / "ledger.db"
    result = assay("run", str(flow), "--input", "{}", "--ledger", f"sqlite:///{ledger}")
    assert result.returncode == 2
    assert "step 'a' is checked only by its verifier prompt, and no model is configured" in (
        result.stderr
    )
    assert not ledger.exists()


def test_an_input_over_the_workflows_output_bytes_exits_2_and_records_nothing(
    tmp_path: Path,
) -> None:
    # A run's input, or a resume's, was taken at any size and recorded in full.
    flow = tmp_path / "approval.yaml"
    flow.write_text(
        "workflow: approval\nbudget: {iterations_per_attempt: 1, output_bytes: 64}\nsteps:\n"
        "  - id: a\n    executor: workflow_cli_steps:needs_approval\n"
        "    empty_output: {items: []}\n"
        "    verify: {criteria: ['output.items.every(i => i > 0)']}\n"
        "    escalation: [fresh_attempt, human]\n",
        encoding="utf-8",
    )
    ledger = tmp_path / "ledger.db"
    url = f"sqlite:///{ledger}"
    big = json.dumps({"note": "x" * 100})  # {"note":"xxx…"}: 111 bytes as canonical JSON

    def refusal(what: str, refused: str) -> str:
        return (
            f"{what} is 111 bytes as canonical JSON, over the workflow's limit of 64 "
            f"(budget.output_bytes), so {refused} and nothing was recorded; send less, or "
            "store the data elsewhere and send a reference to it\n"
        )

    started = assay("run", str(flow), "--input", big, "--ledger", url)
    assert (started.returncode, started.stdout) == (2, "")
    assert started.stderr == "assay run: error: " + refusal("the run's input", "no run was started")
    assert not ledger.exists()

    parked = assay("run", str(flow), "--input", '{"note": "x"}', "--ledger", url)
    assert parked.returncode == 1, parked.stderr
    run_id = json.loads(parked.stdout)["run_id"]
    with open_ledger(url) as opened:
        recorded = opened.size
    resumed = assay("resume", run_id, "--input", big, "--ledger", url)
    assert (resumed.returncode, resumed.stdout) == (2, "")
    assert resumed.stderr == "assay resume: error: " + refusal(
        "the human input", "the run was not resumed"
    )
    with open_ledger(url) as opened:
        assert opened.size == recorded

    default = tmp_path / "huge.json"
    default.write_text(json.dumps({"blob": "a" * 2**20}), encoding="utf-8")
    other = tmp_path / "other.db"
    huge = assay("run", str(EXAMPLE), "--input", f"@{default}", "--ledger", f"sqlite:///{other}")
    assert huge.returncode == 2
    assert huge.stderr == (
        "assay run: error: the run's input is 1,048,587 bytes as canonical JSON, over the "
        "workflow's limit of 1,048,576 (budget.output_bytes), so no run was started and nothing "
        "was recorded; send less, or store the data elsewhere and send a reference to it\n"
    )
    assert not other.exists()


def test_lint_reports_an_empty_output_over_the_steps_output_bytes(tmp_path: Path) -> None:
    flow = tmp_path / "tight.yaml"
    flow.write_text(
        "workflow: tight\nsteps:\n  - id: a\n    executor: json:dumps\n"
        "    empty_output: {items: []}\n    verify: {criteria: ['output.items.length >= 0']}\n"
        "    budget: {output_bytes: 8}\n",
        encoding="utf-8",
    )
    result = assay("lint", str(flow))
    assert (result.returncode, result.stderr) == (1, "")
    assert result.stdout == (
        f"{flow}: [zero-case] step 'a': its declared empty output is 12 bytes as canonical "
        "JSON, over the step's limit of 8 (budget.output_bytes), so even the honest empty "
        "result would fail its gate unjudged, and the step could only ever retry to its bounds "
        "and park. Raise budget.output_bytes (the step's, or the workflow's) or declare a "
        "smaller empty_output\n"
    )
