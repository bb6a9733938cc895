"""``assay serve`` settings: flags over environment over TOML; tokens; the loopback rule."""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from assay.errors import RequestError
from assay.examples.outpost import APPLICATION as OUTPOST
from assay.graph.declaration import Reversibility
from assay.host import Host
from assay.ledger import Ledger, MemoryBackend
from assay.server import Scope, ServerConfig, Token, load_config
from http_daemon import spawn_daemon

SECRET = "s3cret-s3cret-s3cret"
SERVE = (sys.executable, "-m", "assay", "serve", "--port", "0")


def test_flags_win_over_the_environment_which_wins_over_the_file(tmp_path: Path) -> None:
    file = tmp_path / "assay.toml"
    file.write_text(
        'app = "file:APP"\nledger = "memory:"\nport = 9000\nlog_level = "debug"\n'
        f'[[tokens]]\nname = "ops"\nsecret = "{SECRET}"\nscopes = ["admin"]\n'
    )
    environ = {"ASSAY_PORT": "9001", "ASSAY_APP": "env:APP"}
    config = load_config({"app": "flag:APP"}, environ, file)
    assert (config.app, config.port, config.ledger, config.log_level) == (
        "flag:APP",
        9001,
        "memory:",
        "debug",
    )
    assert [(t.name, t.scopes) for t in config.tokens] == [("ops", frozenset({Scope.ADMIN}))]
    assert SECRET not in repr(config)


def test_tokens_from_the_environment_and_secret_env_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    environ = {"ASSAY_TOKENS": f"a:{SECRET}:read,act b:{SECRET}x:report"}
    config = load_config({}, environ)
    assert [(t.name, sorted(t.scopes)) for t in config.tokens] == [
        ("a", [Scope.ACT, Scope.READ]),
        ("b", [Scope.REPORT]),
    ]
    file = tmp_path / "assay.toml"
    file.write_text('[[tokens]]\nname = "agent"\nsecret_env = "AGENT_SECRET"\nscopes = ["act"]\n')
    monkeypatch.setenv("AGENT_SECRET", SECRET + ":with:colons")
    (token,) = load_config({}, {}, file).tokens
    assert token.secret == SECRET + ":with:colons"
    assert Token.parse(f"x:{SECRET}:with:colons:read").secret == f"{SECRET}:with:colons"


def test_a_non_loopback_bind_without_tokens_is_refused_saying_how_to_add_one() -> None:
    with pytest.raises(RequestError) as caught:
        load_config({"host": "0.0.0.0"}, {})
    assert str(caught.value) == (
        "refusing to serve on 0.0.0.0, which is not a loopback address, without tokens: anyone "
        "who can reach it could act. Add one with --token NAME:SECRET:SCOPE[,SCOPE...] (scopes: "
        "read, act, report, admin) (or ASSAY_TOKENS, or [[tokens]] in the --config file), or "
        "bind to 127.0.0.1"
    )
    assert load_config({"host": "0.0.0.0", "tokens": [f"a:{SECRET}:read"]}, {}).host == "0.0.0.0"
    for loopback in ("127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"):
        assert ServerConfig(host=loopback).loopback


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a:short:read", "the secret must be at least 16 printable characters"),
        (f"a:{SECRET}:fly", "unknown scope 'fly'; scopes are read, act, report, admin"),
        (f"a:{SECRET}", "a token is NAME:SECRET:SCOPE"),
        (f"a b:{SECRET}:read", "a token name is 1 to 64 letters"),
        (f"a:{SECRET}:", "has no scopes"),
    ],
)
def test_bad_tokens_are_refused_without_repeating_the_secret(text: str, message: str) -> None:
    with pytest.raises(RequestError, match=message) as caught:
        Token.parse(text)
    assert SECRET not in str(caught.value)


def test_bad_files_name_the_setting(tmp_path: Path) -> None:
    file = tmp_path / "assay.toml"
    file.write_text('port = "80"\n')
    with pytest.raises(RequestError, match=r"port must be a TOML integer, not str"):
        load_config({}, {}, file)
    file.write_text("colour = 1\n")
    with pytest.raises(RequestError, match=r"unknown settings colour; the settings are app, "):
        load_config({}, {}, file)
    with pytest.raises(RequestError, match=r"cannot read it"):
        load_config({}, {}, tmp_path / "missing.toml")
    file.write_bytes(b"port = 1\n\xff\n")
    with pytest.raises(RequestError, match=r"assay.toml: not UTF-8 text \(invalid start byte\)"):
        load_config({}, {}, file)


def test_a_workflows_directory_that_is_not_one_is_refused_at_start(tmp_path: Path) -> None:
    missing, file = tmp_path / "missing", tmp_path / "flow.yaml"
    file.write_text("workflow: w\n")
    for given, state in ((missing, "does not exist"), (file, "is a file")):
        with pytest.raises(RequestError, match=f"workflows: '{given}' {state}; give a") as caught:
            load_config({"workflows": [str(given)]}, {})
        assert caught.value.field == "workflows"
    # An empty part of ASSAY_WORKFLOWS (a trailing separator) is no directory, not "."
    found = load_config({}, {"ASSAY_WORKFLOWS": f"{tmp_path}:"})
    assert found.workflows == (str(tmp_path),)


def test_the_body_limit_comes_from_a_flag_the_environment_or_the_file(tmp_path: Path) -> None:
    file = tmp_path / "assay.toml"
    file.write_text("max_body_bytes = 4096\n")
    assert load_config({}, {}).max_body_bytes == 16 * 2**20
    assert load_config({}, {}, file).max_body_bytes == 4096
    assert load_config({}, {"ASSAY_MAX_BODY_BYTES": "2048"}, file).max_body_bytes == 2048
    assert load_config({"max_body_bytes": 1024}, {}, file).max_body_bytes == 1024
    with pytest.raises(RequestError, match=r"ASSAY_MAX_BODY_BYTES must be a number of bytes"):
        load_config({}, {"ASSAY_MAX_BODY_BYTES": "lots"})
    with pytest.raises(RequestError, match=r"max_body_bytes must be 1 or more, not 0"):
        load_config({"max_body_bytes": 0}, {})
    file.write_text('max_body_bytes = "big"\n')
    with pytest.raises(RequestError, match=r"max_body_bytes must be a TOML integer, not str"):
        load_config({}, {}, file)


def test_the_session_idle_time_comes_from_a_flag_the_environment_or_the_file(
    tmp_path: Path,
) -> None:
    file = tmp_path / "assay.toml"
    file.write_text("session_idle_s = 90\n")
    assert load_config({}, {}).session_idle_s == 3600
    assert load_config({}, {}, file).session_idle_s == 90
    assert load_config({}, {"ASSAY_SESSION_IDLE_S": "7.5"}, file).session_idle_s == 7.5
    assert load_config({"session_idle_s": 0.0}, {}, file).session_idle_s == 0  # never
    with pytest.raises(RequestError, match=r"ASSAY_SESSION_IDLE_S must be a number of seconds"):
        load_config({}, {"ASSAY_SESSION_IDLE_S": "an hour"})
    for wrong in (-1.0, float("inf"), float("nan")):
        with pytest.raises(
            RequestError,
            match=r"session_idle_s must be 0 \(never expire\) or a positive number of seconds, "
            r"not .* \(set by --session-idle-s\)",
        ):
            load_config({"session_idle_s": wrong}, {})
    file.write_text("session_idle_s = true\n")
    with pytest.raises(RequestError, match=r"session_idle_s must be a TOML number, not bool"):
        load_config({}, {}, file)


def test_the_lease_time_comes_from_a_flag_the_environment_or_the_file(tmp_path: Path) -> None:
    file = tmp_path / "assay.toml"
    file.write_text("lease_s = 12\n")
    assert load_config({}, {}).lease_s == 30
    assert load_config({}, {}, file).lease_s == 12
    assert load_config({}, {"ASSAY_LEASE_S": "2.5"}, file).lease_s == 2.5
    assert load_config({"lease_s": 60.0}, {"ASSAY_LEASE_S": "2.5"}).lease_s == 60
    with pytest.raises(RequestError, match=r"ASSAY_LEASE_S must be a number of seconds"):
        load_config({}, {"ASSAY_LEASE_S": "half a minute"})
    for wrong in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(
            RequestError,
            match=r"lease_s must be a positive number of seconds, not .* \(set by --lease-s\)",
        ):
            load_config({"lease_s": wrong}, {})


def assay(*arguments: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``assay ARGUMENTS`` run to its end (it should refuse to start), with its output."""
    return subprocess.run(
        [sys.executable, "-m", "assay", *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=cwd,
    )


def test_the_command_refuses_an_open_public_bind_with_exit_2() -> None:
    done = assay("serve", "--host", "0.0.0.0", "--ledger", "memory:")
    assert done.returncode == 2
    assert "Add one with --token NAME:SECRET:SCOPE" in done.stderr


@pytest.mark.parametrize("command", [["serve"], ["mcp", "--transport", "http"]])
def test_a_port_in_use_is_refused_with_exit_2_and_no_traceback(
    command: list[str], tmp_path: Path
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        done = assay(*command, "--port", str(port), cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []  # refused before the default ledger was opened
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}: another program listens there; choose " in (
        done.stderr
    )
    assert "Traceback" not in done.stderr
    assert "ERROR" not in done.stderr


def test_a_port_beyond_65535_is_refused_with_exit_2(tmp_path: Path) -> None:
    done = assay("mcp", "--transport", "http", "--port", "70000", cwd=tmp_path)
    assert list(tmp_path.iterdir()) == []  # refused before the default ledger was opened
    assert done.returncode == 2
    assert done.stderr == (
        "assay mcp: error: the MCP endpoint server cannot listen on port 70000: a port is 0 to "
        "65535 (0 picks a free one)\n"
    )


def test_a_workflow_file_that_cannot_run_is_refused_at_start(tmp_path: Path) -> None:
    flows = tmp_path / "flows"
    flows.mkdir()
    (flows / "broken.yaml").write_text("workflow: [\n")
    done = assay("serve", "--port", "0", "--workflows", str(flows), cwd=tmp_path)
    assert list(tmp_path.iterdir()) == [flows]  # refused before the default ledger was opened
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"assay serve: --workflows: {flows / 'broken.yaml'} is not valid YAML: "
    )


def test_the_command_serves_with_a_token_from_the_environment(tmp_path: Path) -> None:
    environ = {"ASSAY_TOKENS": f"agent:{SECRET}:read", "ASSAY_LEDGER": "memory:"}
    with spawn_daemon([], environ=environ) as daemon:
        assert httpx.get(f"{daemon.url}/healthz").json()["app"] == "outpost"
        assert httpx.get(f"{daemon.url}/v1/state").status_code == 401
        authorized = {"Authorization": f"Bearer {SECRET}"}
        assert httpx.get(f"{daemon.url}/v1/state", headers=authorized).status_code == 200
    assert daemon.process.returncode == 0
    log = "".join(daemon.log)
    assert "tokens: agent (read)" in log
    assert SECRET not in log


def test_the_log_announces_the_daemons_stop_once_not_that_of_the_application_it_serves() -> None:
    # The outpost example is served by an embedded server of its own, in the same process.
    with spawn_daemon(["--ledger", "memory:"]) as daemon:
        assert httpx.get(f"{daemon.url}/healthz").status_code == 200
    assert daemon.process.returncode == 0
    log = "".join(daemon.log)
    assert log.count("Started server process") == 1
    assert log.count("Shutting down") == 1
    assert log.count("Finished server process") == 1


def test_a_value_out_of_range_names_the_source_that_set_it(tmp_path: Path) -> None:
    """Flags, the environment and a file all set the same settings: the refusal of a value
    says which of them gave it (it said 'port must be 0 to 65535, not 99999' alone)."""
    file = tmp_path / "assay.toml"
    file.write_text("port = 99999\nmax_body_bytes = 0\n")
    for flags, environ, said in (
        ({"port": 70000}, {}, "port must be 0 to 65535, not 70000 (set by --port)"),
        ({}, {"ASSAY_PORT": "70000"}, "port must be 0 to 65535, not 70000 (set by ASSAY_PORT)"),
        ({}, {}, f"port must be 0 to 65535, not 99999 (set by port in --config {file})"),
        (
            {"port": 1},
            {},
            f"max_body_bytes must be 1 or more, not 0 (set by max_body_bytes in --config {file})",
        ),
    ):
        with pytest.raises(RequestError) as caught:
            load_config(flags, environ, file)
        assert str(caught.value) == said
    file.write_text('port = "80"\n')
    with pytest.raises(RequestError) as caught:
        load_config({}, {}, file)
    assert str(caught.value) == f"--config {file}: port must be a TOML integer, not str"


TODO_APP = (Path(__file__).resolve().parents[1] / "examples" / "todo_app.py").read_text(
    encoding="utf-8"
)


def test_the_installed_command_finds_an_app_module_in_the_working_directory(
    tmp_path: Path,
) -> None:
    """The console script (unlike ``python -m assay``) did not have the working directory on
    its import path, so ``--app myapp:APPLICATION`` beside the user failed to import."""
    (tmp_path / "todo_app.py").write_text(TODO_APP, encoding="utf-8")
    script = str(Path(sys.executable).with_name("assay"))
    arguments = ["--app", "todo_app:APPLICATION", "--ledger", "memory:"]
    with spawn_daemon(arguments, command=[script], cwd=tmp_path) as daemon:
        fired = httpx.post(
            f"{daemon.url}/v1/actions",
            json={"action": "list.add", "args": {"id": "milk"}, "wait_ms": 5000},
            timeout=60,
        )
    assert fired.status_code == 200, fired.text
    assert fired.json()["answer"] == "worked"


def test_an_app_module_that_fails_is_the_apps_error_not_an_internal_one(tmp_path: Path) -> None:
    """An application module that raised while importing (a wrong graph declaration, a bug)
    was reported as 'assay: internal error ... a bug in assay' with exit 70."""
    (tmp_path / "misdeclared.py").write_text(
        TODO_APP.replace('"input": {', '"args": {'), encoding="utf-8"
    )
    (tmp_path / "buggy.py").write_text("import json\n\nRATIO = 1 / 0\n", encoding="utf-8")
    (tmp_path / "factory.py").write_text(
        "def make():\n    raise RuntimeError('no database')\n", encoding="utf-8"
    )
    for target, said in (
        (
            "misdeclared:APPLICATION",
            "importing 'misdeclared' failed: list.add: args: unknown field; the fields of an "
            "action are does, input, reversibility, settle_ms, single_flight, to, verify, "
            "verify_expression, verify_timeout_ms, writes "
            f"({tmp_path / 'misdeclared.py'}, line 23)",
        ),
        (
            "buggy:APPLICATION",
            "importing 'buggy' failed: ZeroDivisionError: division by zero "
            f"({tmp_path / 'buggy.py'}, line 3)",
        ),
        (
            "factory:make",
            "calling make to make the application failed: RuntimeError: no database "
            f"({tmp_path / 'factory.py'}, line 2)",
        ),
    ):
        result = assay("serve", "--app", target, "--ledger", "memory:", cwd=tmp_path)
        assert (result.returncode, result.stderr) == (
            2,
            f"assay serve: --app {target}: {said}\n",
        )


def test_a_config_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    file = tmp_path / "assay.toml"
    file.write_bytes(b"\xef\xbb\xbfport = 9000\n")
    assert load_config({}, {}, file).port == 9000


def test_two_tokens_with_one_secret_are_refused_in_every_source_without_showing_it(
    tmp_path: Path,
) -> None:
    refusal = (
        "tokens 'a' and 'b' have the same secret; a secret names one token, so give each its "
        "own (make one with python -c 'import secrets; print(secrets.token_urlsafe(32))') "
        "(set by {source})"
    )
    flags = {"tokens": [f"a:{SECRET}:read", f"b:{SECRET}:admin"]}
    with pytest.raises(RequestError) as caught:
        load_config(flags, {})
    assert str(caught.value) == refusal.format(source="--token")
    assert SECRET not in str(caught.value)
    with pytest.raises(RequestError) as caught:
        load_config({}, {"ASSAY_TOKENS": f"a:{SECRET}:read b:{SECRET}:admin"})
    assert str(caught.value) == refusal.format(source="ASSAY_TOKENS")
    file = tmp_path / "assay.toml"
    file.write_text(
        "".join(
            f'[[tokens]]\nname = "{name}"\nsecret = "{SECRET}"\nscopes = ["read"]\n'
            for name in "ab"
        )
    )
    with pytest.raises(RequestError) as caught:
        load_config({}, {}, file)
    assert str(caught.value) == refusal.format(source=f"tokens in --config {file}")
    twice = {"tokens": [f"a:{SECRET}:read", f"a:{SECRET}x:admin"]}
    with pytest.raises(RequestError, match=r"^token names must differ; a is given twice"):
        load_config(twice, {})

    result = assay(
        *SERVE[3:], "--token", f"a:{SECRET}:read", "--token", f"b:{SECRET}:admin", cwd=tmp_path
    )
    assert result.returncode == 2
    assert result.stderr == f"assay serve: {refusal.format(source='--token')}\n"


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("", "invalid path '': it is empty; write a dotted path such as inbox.sent_count"),
        (
            "inbox..x",
            "invalid path 'inbox..x' at position 6: empty segment before '.'; remove the extra "
            'dot; write [""] for a key that is the empty string',
        ),
    ],
)
def test_a_redact_pattern_that_is_not_one_is_refused_naming_it_and_the_form(
    tmp_path: Path, pattern: str, why: str
) -> None:
    refusal = (
        f"redact: {why}; a redact pattern is a dotted state path whose segments may be * (any "
        "one key) or ** (any keys), such as inbox.sent.*.to or secrets.** (set by {source})"
    )
    with pytest.raises(RequestError) as caught:
        load_config({"redact": ["secrets.**", pattern]}, {})
    assert str(caught.value) == refusal.format(source="--redact")
    assert caught.value.field == "redact"
    file = tmp_path / "assay.toml"
    file.write_text(f'redact = ["{pattern}"]\n')
    with pytest.raises(RequestError) as caught:
        load_config({}, {}, file)
    assert str(caught.value) == refusal.format(source=f"redact in --config {file}")
    if pattern:  # the variable's patterns are split at spaces: none is empty
        with pytest.raises(RequestError) as caught:
            load_config({}, {"ASSAY_REDACT": pattern})
        assert str(caught.value) == refusal.format(source="ASSAY_REDACT")

    result = assay(*SERVE[3:], "--redact", pattern, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"assay serve: {refusal.format(source='--redact')}\n"


def test_thresholds_come_from_a_flag_the_environment_or_the_file(tmp_path: Path) -> None:
    # Only Host(thresholds=...) in Python could set them: the daemon ran on the defaults.
    assert load_config({"thresholds": ["irreversible=0.99"]}, {}).thresholds == (
        ("irreversible", 0.99),
    )
    assert load_config({}, {"ASSAY_THRESHOLDS": "reversible=0.2 compensable=0.9"}).thresholds == (
        ("reversible", 0.2),
        ("compensable", 0.9),
    )
    file = tmp_path / "assay.toml"
    file.write_text("[thresholds]\nirreversible = 0.975\n")
    assert load_config({}, {}, file).thresholds == (("irreversible", 0.975),)
    for given, says in (
        ("irreversible", "--threshold: 'irreversible' is not TIER=CONFIDENCE, such as "),
        ("irreversible=high", "--threshold: 'irreversible=high' is not TIER=CONFIDENCE"),
        ("irreversible=1.5", "thresholds: irreversible must be a number from 0 to 1, not 1.5"),
        ("risky=0.5", "thresholds: 'risky' is not a reversibility tier; tiers are reversible"),
    ):
        with pytest.raises(RequestError) as caught:
            load_config({"thresholds": [given]}, {})
        assert str(caught.value).startswith(says), str(caught.value)
        assert caught.value.field == "thresholds"


@pytest.mark.anyio
async def test_the_daemons_thresholds_go_over_the_applications() -> None:
    application = dataclasses.replace(OUTPOST, thresholds={"irreversible": 0.9, "reversible": 0.1})
    async with Host(application, Ledger(MemoryBackend()), thresholds={"reversible": 0.3}) as host:
        assert host.thresholds[Reversibility.IRREVERSIBLE] == 0.9
        assert host.thresholds[Reversibility.REVERSIBLE] == 0.3
        assert host.thresholds[Reversibility.COMPENSABLE] == 0.8  # the default
