"""An answer that cannot be written to standard output (a full disk) is reported as incomplete
output, never as a bug in assay; a reader that went away is left in peace."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from assay.ledger import open_ledger

FULL = Path("/dev/full")  # every write to it fails with ENOSPC

pytestmark = pytest.mark.skipif(not FULL.exists(), reason="needs the /dev/full device")


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'evidence.db'}"
    with open_ledger(url) as ledger:
        for number in range(1, 6):
            ledger.append("verdict", {"subject": "verify", "n": number})
    return url


def _run(arguments: list[str], stdout: int, *, buffered: bool) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not buffered:
        environment["PYTHONUNBUFFERED"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "assay", *arguments],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
        env=environment,
    )


def _to_full(arguments: list[str], *, buffered: bool) -> subprocess.CompletedProcess[str]:
    with FULL.open("w") as full:
        return _run(arguments, full.fileno(), buffered=buffered)


def _incomplete(command: str) -> str:
    return (
        f"{command}: error: cannot write to standard output ({FULL}): No space left on "
        "device; the output is incomplete\n"
    )


COMMANDS = [
    ["ledger", "export"],
    ["ledger", "verify"],
    ["ledger", "show", "2"],
    ["ledger", "prove", "2"],
    ["ledger", "query", "--kind", "verdict"],
    ["ledger", "tail"],
]


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_a_full_disk_is_incomplete_output_with_exit_2(
    ledger_url: str, command: list[str], buffered: bool
) -> None:
    result = _to_full([*command, "--ledger", ledger_url], buffered=buffered)
    assert (result.returncode, result.stderr) == (2, _incomplete(f"assay ledger {command[1]}"))


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_failing_answer_keeps_its_exit_code_when_it_cannot_be_written(
    ledger_url: str, tmp_path: Path, buffered: bool
) -> None:
    with sqlite3.connect(ledger_url.removeprefix("sqlite:///")) as connection:
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        ).fetchall():
            connection.execute(f'DROP TRIGGER "{name}"')
        connection.execute("DELETE FROM ledger_entries WHERE seq = 3")
    failed = _to_full(["ledger", "verify", "--ledger", ledger_url], buffered=buffered)
    # The ledger fails its checks: that still says 1, though the report was not written.
    assert (failed.returncode, failed.stderr) == (1, _incomplete("assay ledger verify"))
    state = tmp_path / "state.json"
    state.write_text('{"a": 1}')
    held = ["verify", "a === 1", "--state", str(state)]
    assert _to_full(held, buffered=buffered).returncode == 2
    not_held = ["verify", "a === 2", "--state", str(state), "--timeout-ms", "0"]
    result = _to_full(not_held, buffered=buffered)
    assert (result.returncode, result.stderr) == (1, _incomplete("assay verify"))


def test_help_and_the_demo_report_a_full_disk_too(tmp_path: Path) -> None:
    helped = _to_full(["ledger", "verify", "--help"], buffered=True)
    assert (helped.returncode, helped.stderr) == (2, _incomplete("assay"))
    # The demo writes from inside task groups, which gather the failure.
    demo = _to_full(["demo", "--ledger", f"sqlite:///{tmp_path / 'demo.db'}"], buffered=False)
    assert (demo.returncode, demo.stderr) == (2, _incomplete("assay demo"))


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_reader_that_went_away_is_left_quietly(ledger_url: str, buffered: bool) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        exported = _run(["ledger", "export", "--ledger", ledger_url], write, buffered=buffered)
        verified = _run(["ledger", "verify", "--ledger", ledger_url], write, buffered=buffered)
    finally:
        os.close(write)
    assert (exported.returncode, exported.stderr) == (0, "")
    assert (verified.returncode, verified.stderr) == (0, "")
