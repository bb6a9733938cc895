"""The ``assay`` command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import assay


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
        check=False,
    )


@pytest.fixture
def state_file(tmp_path: Path) -> Path:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"inbox": {"sent_count": 15}, "drone": {"mode": "GUIDED"}}))
    return path


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"assay {assay.__version__}"


def test_help_documents_exit_codes() -> None:
    result = run("--help")
    assert result.returncode == 0
    assert "verify" in result.stdout
    assert "2  usage error or invalid input" in result.stdout


def test_verify_true_exits_0(state_file: Path) -> None:
    result = run(
        "verify", 'inbox.sent_count >= 15 && drone.mode == "GUIDED"', "--state", str(state_file)
    )
    assert result.returncode == 0
    assert json.loads(result.stdout) == {
        "expression": 'inbox.sent_count >= 15 && drone.mode == "GUIDED"',
        "value": True,
        "type": "boolean",
        "result": True,
        "keys": ["drone.mode", "inbox.sent_count"],
        "error": None,
    }


def test_verify_false_exits_1(state_file: Path) -> None:
    result = run("verify", "inbox.sent_count + 1", "--state", str(state_file))
    assert result.returncode == 0
    assert json.loads(result.stdout)["value"] == 16
    result = run("verify", "inbox.sent_count > 15", "--state", str(state_file))
    assert result.returncode == 1
    assert json.loads(result.stdout)["result"] is False


def test_verify_evaluation_error_is_a_null_result(state_file: Path) -> None:
    result = run("verify", "inbox.missing.count", "--state", str(state_file))
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["result"] is None
    assert report["error"] == "inbox.missing is undefined (reading 'count')"


def test_verify_reads_state_from_stdin() -> None:
    result = run("verify", "a === 1", "--state", "-", stdin='{"a": 1}')
    assert result.returncode == 0


def test_verify_syntax_error_exits_2_with_caret(state_file: Path) -> None:
    result = run("verify", "inbox.(", "--state", str(state_file))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "assay verify: error: the expression has a syntax error: expected a property name "
        "after '.', found '(' at position 6\ninbox.(\n      ^\n"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON: Expecting property name enclosed in double quotes"),
        ("[1, 2]", "must hold a JSON object (the objects map), not an array"),
        ("42", "must hold a JSON object (the objects map), not number"),
    ],
)
def test_verify_bad_state_exits_2(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = run("verify", "a", "--state", str(path))
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_missing_file_exits_2(tmp_path: Path) -> None:
    result = run("verify", "a", "--state", str(tmp_path / "absent.json"))
    assert result.returncode == 2
    assert "cannot read the state file" in result.stderr
    assert "No such file or directory" in result.stderr


def test_usage_errors_exit_2() -> None:
    for args in (("verify",), ("verify", "a"), ("nonsense",), ()):
        result = run(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr
