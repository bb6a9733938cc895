"""The ``assay`` command line, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import assay
from assay.ledger import open_ledger


def run(
    *args: str, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "assay", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
        check=False,
        cwd=cwd,
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
    source = 'inbox.sent_count >= 15 && drone.mode == "GUIDED"'
    result = run("verify", source, "--state", str(state_file))
    assert result.returncode == 0
    assert json.loads(result.stdout) == {
        "passed": True,
        "expression": source,
        "result": True,
        "narrative": "Expression evaluated to true after 1 poll cycle (0ms); drone.mode "
        'remained "GUIDED"; inbox.sent_count remained 15.',
        "elapsed_ms": 0,
        "poll_cycles": 1,
        "changed_fields": [],
    }


def test_verify_false_exits_1_after_the_timeout(state_file: Path) -> None:
    result = run(
        "verify", "inbox.sent_count > 15", "--state", str(state_file),
        "--timeout-ms", "300", "--interval-ms", "100",
    )  # fmt: skip
    assert result.returncode == 1
    outcome = json.loads(result.stdout)
    assert outcome["passed"] is False
    assert outcome["result"] is False
    assert outcome["poll_cycles"] >= 2
    assert outcome["narrative"].startswith("inbox.sent_count remained 15 after ")


def test_verify_evaluation_error_is_a_null_result(state_file: Path) -> None:
    result = run("verify", "inbox.missing.count", "--state", str(state_file), "--timeout-ms", "0")
    assert result.returncode == 1
    outcome = json.loads(result.stdout)
    assert outcome["result"] is None
    assert outcome["narrative"] == (
        "Expression could not be evaluated after 1 poll cycle (0ms): inbox.missing is "
        "undefined (reading 'count'); inbox.missing.count is missing (inbox has no key "
        "'missing')."
    )


def test_verify_reads_state_from_stdin() -> None:
    result = run("verify", "a === 1", "--state", "-", stdin='{"a": 1}')
    assert result.returncode == 0


def test_verify_answers_a_state_from_stdin_at_once() -> None:
    # Read once, it cannot change; the answer waited out the whole timeout all the same.
    result = run("verify", "a === 2", "--state", "-", "--timeout-ms", "55000", stdin='{"a": 1}')
    assert result.returncode == 1
    outcome = json.loads(result.stdout)
    assert (outcome["poll_cycles"], outcome["elapsed_ms"]) == (1, 0)
    assert (
        outcome["narrative"] == "a remained 1 after 1 poll cycle (0ms); nothing observable changed."
    )


def test_verify_takes_a_declarative_contract_written_as_a_json_object(state_file: Path) -> None:
    # EXPR '{...}' was refused: 'object literals are not supported'.
    held = run("verify", '{"inbox.sent_count": {"gte": 15}}', "--state", str(state_file))
    assert held.returncode == 0, held.stderr
    assert json.loads(held.stdout)["narrative"] == (
        "Contract evaluated to true after 1 poll cycle (0ms); inbox.sent_count remained 15."
    )
    for contract, message in (
        (
            '{"inbox.sent_count": {"gte": 15}',
            "EXPR starts with '{', so it is read as a declarative contract, but it is not valid "
            "JSON: Expecting ',' delimiter at line 1 column 33;",
        ),
        ('{"inbox.sent_count": {"gtee": 15}}', "has unknown operator 'gtee'"),
    ):
        refused = run("verify", contract, "--state", str(state_file))
        assert (refused.returncode, refused.stdout) == (2, "")
        assert refused.stderr.startswith("assay verify: error: the contract is malformed: ")
        assert message in refused.stderr


def test_verify_names_stdin_not_a_file_called_dash_when_its_state_is_wrong(
    tmp_path: Path,
) -> None:
    for given, said in (
        (
            "[1]",
            "the state read from stdin must hold a JSON object (the objects map), not an array",
        ),
        (
            '{"a":',
            "the state read from stdin is not valid JSON: Expecting value at line 1 column 6",
        ),
    ):
        refused = run("verify", "a", "--state", "-", stdin=given)
        assert refused.returncode == 2
        assert refused.stderr == f"assay verify: error: {said}\n"
    undecodable = subprocess.run(
        [sys.executable, "-m", "assay", "verify", "a", "--state", "-"],
        input=b'{"a": "\xff"}',
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert undecodable.returncode == 2
    assert undecodable.stderr == (
        b"assay verify: error: the state read from stdin is not UTF-8 text: it holds the byte "
        b"0xff at offset 7\n"
    )
    binary = tmp_path / "state.json"
    binary.write_bytes(b'{"a": "\xff"}')
    refused = run("verify", "a", "--state", str(binary))
    assert refused.stderr == (
        f"assay verify: error: the state file {str(binary)!r} is not UTF-8 text: it holds the "
        "byte 0xff at offset 7\n"
    )


def test_verify_rereads_a_state_file_that_changes(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text('{"inbox": {"sent_count": 14}}')
    process = subprocess.Popen(
        [sys.executable, "-m", "assay", "verify", "inbox.sent_count == 15", "--state", str(path),
         "--timeout-ms", "20000", "--interval-ms", "50"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        path.write_text('{"inbox": {"sent_count": 15, "drafts": 1}}')
        stdout, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    outcome = json.loads(stdout)
    assert outcome["passed"] is True
    assert [change["key"] for change in outcome["changed_fields"]] in (
        ["inbox.drafts", "inbox.sent_count"],
        [],  # the rewrite landed before the first read
    )


def test_verify_polls_a_live_endpoint() -> None:
    from apps import DelayedApp, serve

    app = DelayedApp(delay=0.2)
    with serve(app) as url:
        app.act("/send")
        result = run(
            "verify", "inbox.sent_count === 1", "--probe", f"{url}/state",
            "--timeout-ms", "20000", "--interval-ms", "50",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout)
    assert outcome["passed"] is True


def test_verify_takes_part_of_an_endpoints_response_under_a_state_key() -> None:
    from apps import DelayedApp, serve

    app = DelayedApp(delay=0)
    with serve(app) as url:
        app.act("/send")
        result = run(
            "verify", "mail.sent_count === 1", "--probe", f"{url}/state", "--pointer", "/inbox",
            "--into", "mail", "--timeout-ms", "20000", "--interval-ms", "50",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["passed"] is True


def test_verify_unreachable_endpoint_exits_2() -> None:
    result = run("verify", "a", "--probe", "http://127.0.0.1:9/state", "--timeout-ms", "0")
    assert result.returncode == 2
    assert result.stderr.startswith("assay verify: error: cannot read the state from the probe: ")
    assert "Traceback" not in result.stderr


def test_a_probe_the_flags_set_wrongly_is_named_by_its_flag() -> None:
    for given, said in (
        (
            ("--probe", "notaurl"),
            "--probe 'notaurl' is not a URL assay can read; give an http:// or https:// URL of a "
            "JSON endpoint",
        ),
        (
            ("--probe", "http://127.0.0.1:9/state", "--pointer", "inbox"),
            "--pointer: invalid JSON pointer 'inbox': it must be empty or start with '/' (write "
            "'/inbox' to select the key 'inbox')",
        ),
        (
            ("--probe", "http://127.0.0.1:9/state", "--into", "a..b"),
            "--into: into 'a..b' is not a state key: invalid path 'a..b' at position 2: empty "
            "segment before '.'; remove the extra dot; write [\"\"] for a key that is the empty "
            "string",
        ),
        (
            ("--state", "-", "--into", "inbox"),
            "--into is about reading an endpoint, so it goes with --probe",
        ),
    ):
        refused = run("verify", "a", *given)
        assert (refused.returncode, refused.stderr) == (2, f"assay verify: error: {said}\n")


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
        ("42", "must hold a JSON object (the objects map), not a number"),
    ],
)
def test_verify_bad_state_exits_2(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = run("verify", "a", "--state", str(path))
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_verify_refuses_an_expression_or_a_state_that_is_not_unicode(
    state_file: Path, tmp_path: Path
) -> None:
    undecodable = subprocess.run(
        [sys.executable, "-m", "assay", "verify", b'inbox.sent_count == "\xff"', "--state",
         str(state_file)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip
    assert undecodable.returncode == 2
    assert undecodable.stderr.splitlines()[-2] == (
        "assay: error: argument 2 is not UTF-8 text: it holds the byte 0xff at "
        "character 21; check the terminal's or the script's encoding"
    )
    for command in (
        [b"ledger", b"query", b"--session", b"\xff", b"--ledger", b"sqlite:///x.db"],
        [b"resume", b"run-\xff"],
        [b"serve", b"--redact", b"a.\xff"],
    ):
        refused = subprocess.run(
            [sys.executable, "-m", "assay", *command], capture_output=True, timeout=60, check=False
        )
        assert refused.returncode == 2, command
        assert b"is not UTF-8 text: it holds the byte 0xff" in refused.stderr
    half_pair = tmp_path / "half.json"
    half_pair.write_text('{"inbox": {"note": "\\ud800"}}')
    refused = run("verify", "inbox.note", "--state", str(half_pair))
    assert refused.returncode == 2
    assert "cannot store inbox.note: a string holds half of a surrogate pair" in refused.stderr


def test_verify_missing_file_exits_2(tmp_path: Path) -> None:
    result = run("verify", "a", "--state", str(tmp_path / "absent.json"))
    assert result.returncode == 2
    assert "cannot read the state file" in result.stderr
    assert "No such file or directory" in result.stderr


def test_usage_errors_exit_2() -> None:
    for args in (
        ("verify",),
        ("verify", "a"),
        ("nonsense",),
        (),
        ("verify", "a", "--state", "x.json", "--probe", "http://127.0.0.1:9"),
        ("verify", "a", "--state", "x.json", "--timeout-ms", "-1"),
        ("verify", "a", "--state", "x.json", "--interval-ms", "soon"),
    ):
        result = run(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr


def test_example_already_true_prints_three_real_presses(tmp_path: Path) -> None:
    result = run("example", "already-true", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # Its evidence went to the default ledger, ./assay.db in the working directory.
    with open_ledger(f"sqlite:///{tmp_path / 'assay.db'}", create=False) as ledger:
        kinds = [entry.kind for entry in ledger.query()]
    # The last press, still pending when the example ended, settled when its session closed.
    assert kinds == ["fire", "settlement"] * 3
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["press"] for line in lines] == ["already true", "ordinary", "writes, no verify"]
    already, ordinary, blind = lines
    assert already["fire"]["already_true"][0]["key"] == "view.domain"
    assert already["did_it_work"]["answer"] == "unobservable"
    assert "already_true" not in ordinary["fire"]
    assert ordinary["did_it_work"]["answer"] == "worked"
    assert "already_true" not in blind["fire"]
    assert blind["did_it_work"]["answer"] == "pending"
    assert blind["did_it_work"]["waiting_on"] == "a state report writing view.domain"


def test_example_unknown_name_exits_2() -> None:
    result = run("example", "nope")
    assert result.returncode == 2
    assert "invalid choice: 'nope'" in result.stderr


def test_verify_reads_an_endpoint_within_the_read_timeout_given() -> None:
    """Each read of --probe had a fixed 2 s timeout: an endpoint slower than that could never
    be checked from the command line."""
    import socket

    with socket.socket() as listener:  # accepts, never answers: every read stalls
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/state"
        result = run("verify", "a", "--probe", url, "--read-timeout-ms", "150")
    assert (result.returncode, result.stderr) == (
        2,
        f"assay verify: error: cannot read the state from the probe: GET {url} timed out "
        "after 0.15 s while waiting for the response\n",
    )


def test_a_state_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    """Editors and shells on Windows write UTF-8 with a BOM; it was refused as 'Unexpected
    UTF-8 BOM (decode using utf-8-sig)', which RFC 8259 lets a parser ignore."""
    path = tmp_path / "state.json"
    path.write_bytes(b'\xef\xbb\xbf{"inbox": {"sent_count": 15}}')
    from_file = run("verify", "inbox.sent_count == 15", "--state", str(path))
    assert from_file.returncode == 0, from_file.stderr
    from_stdin = subprocess.run(
        [sys.executable, "-m", "assay", "verify", "inbox.sent_count == 15", "--state", "-"],
        input=path.read_bytes(), capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert from_stdin.returncode == 0, from_stdin.stderr


def test_the_parser_is_built_without_loading_what_the_commands_run_on() -> None:
    # `assay --version` took about 0.55 s, most of it importing the ledger (cryptography),
    # the probes (httpx, psycopg), pydantic, the expression compiler and the workflow layer
    # for commands it was not running; they now load when a command runs.
    heavy = (
        "assay.expr", "assay.ledger", "assay.workflow", "assay.state", "assay.verify",
        "assay.host.host", "assay.server.app", "cryptography", "httpx", "psycopg", "pydantic",
        "fastapi", "mcp", "jsonschema", "asyncio",
    )  # fmt: skip
    probe = (
        "import sys; from assay.cli.main import build_parser; build_parser(); "
        f"print(sorted({{m.split('.')[0] if m.split('.')[0] != 'assay' else m for m in sys.modules "
        f"if m.startswith({heavy!r})}}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout
    from assay.cli.workflow import RUN_STATUSES
    from assay.workflow.run import RunStatus

    assert tuple(status.value for status in RunStatus) == RUN_STATUSES
