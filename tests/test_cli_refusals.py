"""Input the command line refuses with exit 2 (or, for a ledger that fails its checks, 1) and a
message naming what was wrong and what to do: never an internal error (exit 70)."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest

from assay.cli.main import main
from assay.host.wire import MAX_WAIT_MS
from assay.ledger import SigningKey, open_ledger

DEEP = "[" * 100_000 + "]" * 100_000


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))


@pytest.fixture
def state(tmp_path: Path) -> Path:
    path = tmp_path / "state.json"
    path.write_text('{"a": 1}')
    return path


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'evidence.db'}"
    with open_ledger(url) as ledger:
        for number in range(1, 6):
            ledger.append("verdict", {"subject": "verify", "n": number})
    return url


def _tamper(url: str, seq: int, text: str | None) -> None:
    """Store ``text`` as entry ``seq``, or delete the entry when ``text`` is None."""
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        ).fetchall():
            connection.execute(f'DROP TRIGGER "{name}"')
        if text is None:
            connection.execute("DELETE FROM ledger_entries WHERE seq = ?", (seq,))
        else:
            connection.execute("UPDATE ledger_entries SET entry = ? WHERE seq = ?", (text, seq))


def _stored(url: str, seq: int) -> str:
    with sqlite3.connect(url.removeprefix("sqlite:///")) as connection:
        (text,) = connection.execute(
            "SELECT entry FROM ledger_entries WHERE seq = ?", (seq,)
        ).fetchone()
    return str(text)


# Deep nesting


def test_a_state_file_nested_too_deeply_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"a":' + DEEP + "}")
    assert main(["verify", "a", "--state", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"assay verify: error: the state file {str(path)!r} nests deeper than 256 levels "
        "(too deeply to read); flatten it or send less of it\n"
    )


def test_a_state_on_stdin_nested_too_deeply_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, ('{"a":' + DEEP + "}").encode())
    assert main(["verify", "a", "--state", "-"]) == 2
    assert capsys.readouterr().err == (
        "assay verify: error: the state read from stdin nests deeper than 256 levels "
        "(too deeply to read); flatten it or send less of it\n"
    )


@pytest.mark.parametrize("depth", [900, 100_000])
def test_a_contract_nested_too_deeply_is_a_usage_error(
    depth: int, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = '{"a":{"eq":' + "[" * depth + "]" * depth + "}}"
    assert main(["verify", contract, "--state", str(state)]) == 2
    expected = (
        "contract key 'a' (eq): the operand nests deeper than 256 levels; flatten it, or "
        "compare a part of it"
        if depth == 900
        else "EXPR (read as a declarative contract) nests deeper than 256 levels (too deeply "
        "to read); flatten it or send less of it"
    )
    malformed = "assay verify: error: the contract is malformed: "
    assert capsys.readouterr().err == f"{malformed}{expected}\n"


def test_an_operand_at_the_depth_bound_is_accepted(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    contract = '{"a":{"eq":' + "[" * 256 + "]" * 256 + "}}"
    assert main(["verify", contract, "--state", str(state), "--timeout-ms", "0"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False
    deeper = '{"a":{"eq":' + "[" * 257 + "]" * 257 + "}}"
    assert main(["verify", deeper, "--state", str(state)]) == 2
    assert capsys.readouterr().err == (
        "assay verify: error: the contract is malformed: contract key 'a': the operand nests "
        "deeper than 256 levels; flatten it, or compare a part of it\n"
    )


def test_an_export_nested_too_deeply_fails_verification(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('{"a":' + DEEP + "}\n")
    assert main(["ledger", "verify", "--export", str(path)]) == 1
    assert capsys.readouterr().out == (
        f"FAILED {path}: entry 1: the stored entry nests too deeply to be read as JSON\n"
        "  0 entries verified before it\n"
    )


# Unreadable or ill-typed stored entries


def test_tail_of_an_entry_whose_seq_is_a_string_fails_the_ledger_naming_it(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _tamper(ledger_url, 3, _stored(ledger_url, 3).replace('"seq":3', '"seq":"3"'))
    assert main(["ledger", "tail", "--ledger", ledger_url]) == 1
    out, err = capsys.readouterr()
    assert [json.loads(line)["seq"] for line in out.splitlines()] == [1, 2]
    assert err == (
        "assay ledger tail: FAILED: entry 3: seq is '3', not a positive integer; the ledger "
        f"fails its checks (`assay ledger verify --ledger {ledger_url}` finds everything that "
        "is wrong)\n"
    )


@pytest.mark.parametrize(
    ("stored", "reason"),
    [
        ("not json", "the stored entry is not JSON (Expecting value: line 1 column 1 (char 0))"),
        ("[1, 2]", "the stored entry is an array, not an object of fields"),
        ('{"a": 1}', "the stored entry has no 'seq' field"),
        ('{"a":' + DEEP + "}", "the stored entry nests too deeply to be read as JSON"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["show", "prove", "tail", "export", "query"])
def test_every_reading_command_fails_an_unreadable_entry_with_exit_1(
    ledger_url: str, stored: str, reason: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _tamper(ledger_url, 3, stored)
    seq = ["3"] if command in ("show", "prove") else []
    assert main(["ledger", command, *seq, "--ledger", ledger_url]) == 1
    out, err = capsys.readouterr()
    # query reads its matches in one go, so one too deep to read has no known place
    subject = "an entry" if command == "query" and "deeply" in reason else "entry 3"
    failed = (
        f"assay ledger {command}: FAILED: {subject}: {reason}; the ledger fails its checks "
        f"(`assay ledger verify --ledger {ledger_url}` finds everything that is wrong)\n"
    )
    if command == "export":
        failed += "assay ledger export: the output is incomplete: it holds only the 2 entries "
        failed += "before entry 3\n"
    printed = [1, 2] if command in ("export", "tail") else []
    assert [json.loads(line)["seq"] for line in out.splitlines()] == printed
    assert err == failed


def test_show_and_prove_still_read_a_sound_entry_of_a_damaged_ledger(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _tamper(ledger_url, 3, "not json")
    assert main(["ledger", "show", "2", "--ledger", ledger_url]) == 0
    assert json.loads(capsys.readouterr().out)["seq"] == 2
    assert main(["ledger", "prove", "2", "--ledger", ledger_url]) == 0
    assert json.loads(capsys.readouterr().out)["seq"] == 2


# Waits with a range


@pytest.mark.parametrize(
    ("flag", "value", "low"),
    [
        ("--interval-ms", "0", 10),
        ("--interval-ms", "9", 10),
        ("--interval-ms", str(MAX_WAIT_MS + 1), 10),
        ("--timeout-ms", "99999999999999999999999", 0),
        ("--settle-ms", str(MAX_WAIT_MS + 1), 0),
    ],
)
def test_waits_outside_their_range_are_refused_naming_the_flag_and_range(
    flag: str, value: str, low: int, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["verify", "a", "--state", str(state), flag, value])
    assert exited.value.code == 2
    assert (
        f"assay verify: error: argument {flag}: expected {low} to {MAX_WAIT_MS} milliseconds "
        f"(the longest wait the HTTP port accepts), got {value}\n"
    ) in capsys.readouterr().err


def test_waits_at_the_ends_of_their_ranges_are_accepted(
    state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    arguments = ["verify", "a == 1", "--state", str(state), "--interval-ms", "10"]
    assert main([*arguments, "--timeout-ms", "0", "--settle-ms", "0"]) == 0
    assert main([*arguments, "--timeout-ms", str(MAX_WAIT_MS)]) == 0
    capsys.readouterr()


# Nothing to check


@pytest.mark.parametrize("url", ["memory:", "MEMORY://"])
@pytest.mark.parametrize(
    "command", [["verify"], ["export"], ["query"], ["show", "1"], ["tail"], ["prove", "1"]]
)
def test_a_memory_ledger_is_refused_by_every_reading_command(
    url: str, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", *command, "--ledger", url]) == 2
    assert capsys.readouterr().err == (
        "assay ledger: error: --ledger memory: names a ledger that lives only inside one "
        f"process, so it holds nothing for `assay ledger {command[0]}` to read; give the "
        "ledger that process wrote to, such as sqlite:///assay.db or postgresql://...\n"
    )


@pytest.mark.parametrize("name", ["/dev/null", "empty"])
def test_an_empty_export_verifies_saying_there_was_nothing_to_check(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = name if name.startswith("/") else str(tmp_path / name)
    Path(path).touch()
    assert main(["ledger", "verify", "--export", path]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"OK {path}: no entries to check: it holds no entries, so nothing was verified (head 0:"
    )
    assert out.endswith(
        "); 0 checkpoints checked; give --trusted-head SIZE:ROOT to require the entries a "
        "head covers\n"
    )


# Messages


def test_a_sqlite_url_naming_a_device_or_a_directory_says_so(
    tmp_path: Path, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "verify", "--ledger", "sqlite:////dev/null"]) == 2
    assert capsys.readouterr().err == (
        "assay ledger: error: there is no ledger at sqlite:////dev/null: /dev/null is not a "
        "regular file (it is a device, a pipe or a socket), so it cannot hold a SQLite ledger; "
        "name a ledger file\n"
    )
    url = f"sqlite:///{tmp_path}"
    assert main(["verify", "a", "--state", str(state), "--ledger", url]) == 2
    assert capsys.readouterr().err == (
        f"assay verify: error: --ledger {url}: {tmp_path} is a directory, not a SQLite ledger "
        f"file; name a file in it, such as {url}/assay.db\n"
    )


def test_a_probe_url_without_a_host_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "a", "--probe", "http://"]) == 2
    assert capsys.readouterr().err == (
        "assay verify: error: --probe 'http://' names no host; give the endpoint's whole URL, "
        "such as http://localhost:8000/state\n"
    )


def test_a_checkpoint_problem_names_the_checkpoint_once(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "export.jsonl"
    assert main(["ledger", "export", "--ledger", ledger_url]) == 0
    path.write_text(capsys.readouterr().out + '{"checkpoint":{"size":1}}\n')
    assert main(["ledger", "verify", "--export", str(path)]) == 1
    assert capsys.readouterr().out == (
        f"FAILED {path}: checkpoint 1: field 'root' is malformed: Field required\n"
        "  5 entries verified before it\n"
    )


@pytest.mark.parametrize("contract", ['{"a":{"eq":1},"a":{"eq":2}}', '{"a":{"eq":{"b":1,"b":2}}}'])
def test_a_contract_giving_a_key_twice_is_refused_naming_it(
    contract: str, state: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["verify", contract, "--state", str(state)]) == 2
    key = "a" if contract.count('"a"') == 2 else "b"
    assert capsys.readouterr().err == (
        f"assay verify: error: the contract is malformed: the contract gives the key '{key}' "
        "twice in one object; give each key once (to test one key two ways, put both "
        """operators in its object, e.g. '{"n": {"gte": 1, "lte": 9}}')\n"""
    )


# Blank lines in an export


def test_an_export_skips_lines_of_only_whitespace_as_it_skips_empty_ones(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "export", "--ledger", ledger_url]) == 0
    lines = capsys.readouterr().out.splitlines()
    path = tmp_path / "export.jsonl"
    path.write_text("\n".join([*lines[:2], "", " \t\r", *lines[2:], "   "]) + "\n")
    assert main(["ledger", "verify", "--export", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"OK {path}: 5 entries, chain and Merkle tree")


@pytest.mark.parametrize("command", ["show", "prove"])
def test_an_entry_deleted_from_the_middle_fails_the_ledger_naming_it(
    ledger_url: str, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    _tamper(ledger_url, 3, None)
    assert main(["ledger", command, "3", "--ledger", ledger_url]) == 1
    assert capsys.readouterr() == (
        "",
        f"assay ledger {command}: FAILED: entry 3: it is missing; the ledger fails its checks "
        f"(`assay ledger verify --ledger {ledger_url}` finds everything that is wrong)\n",
    )
    # Beyond the last entry there is no entry to miss.
    assert main(["ledger", "show", "6", "--ledger", ledger_url]) == 2
    assert capsys.readouterr().err == (
        f"assay ledger: error: there is no entry 6; the ledger {ledger_url} holds entries 1 to 5\n"
    )


def test_query_for_checkpoints_says_they_are_no_entries_and_where_they_are(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ledger", "query", "--kind", "checkpoint", "--ledger", ledger_url]) == 2
    assert capsys.readouterr() == (
        "",
        "assay ledger: error: --kind: checkpoints are not entries, so no entry has kind "
        'checkpoint; `assay ledger export` lists the checkpoints (its {"checkpoint": ...} '
        "lines, after the entries) and `assay ledger verify` checks them. --kind takes commit, "
        "escalation, fire, park, refusal, resume, settlement or verdict\n",
    )


@pytest.mark.parametrize("after", ["-5", "-1", "five"])
def test_query_after_a_seq_that_is_none_is_refused_as_http_refuses_it(
    ledger_url: str, after: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["ledger", "query", "--after", after, "--ledger", ledger_url])
    assert exited.value.code == 2
    assert (
        "assay ledger query: error: argument --after: expected an entry's seq, or 0 to start "
        f"from the first entry; got '{after}'\n"
    ) in capsys.readouterr().err
    assert main(["ledger", "query", "--after", "0", "--ledger", ledger_url]) == 0
    assert [json.loads(line)["seq"] for line in capsys.readouterr().out.splitlines()] == [
        1,
        2,
        3,
        4,
        5,
    ]


# Keys


def test_a_public_key_that_cannot_be_loaded_is_named_by_its_file(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junk, private = tmp_path / "junk.pub", tmp_path / "signing.pem"
    junk.write_text("not a key\n")
    SigningKey.generate().save(private)
    assert main(["ledger", "verify", "--public-key", str(junk), "--ledger", ledger_url]) == 2
    assert capsys.readouterr().err.startswith(
        f"assay ledger: error: {junk}: expected a PEM Ed25519 public key; it could not be loaded ("
    )
    assert main(["ledger", "verify", "--public-key", str(private), "--ledger", ledger_url]) == 2
    assert capsys.readouterr().err == (
        f"assay ledger: error: {private} holds a private key; --public-key takes its public "
        f"key, which `assay ledger keygen` writes beside it as {private}.pub\n"
    )


def test_an_encrypted_signing_key_is_refused_saying_what_to_do(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    encrypted = tmp_path / "encrypted.pem"
    encrypted.write_bytes(
        Ed25519PrivateKey.generate().private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
    )
    arguments = ["ledger", "checkpoint", "--signing-key", str(encrypted), "--ledger", ledger_url]
    assert main(arguments) == 2
    assert capsys.readouterr() == (
        "",
        f"assay ledger: error: {encrypted} is an encrypted private key, and checkpoint takes "
        "an unencrypted one (as assay ledger keygen writes it); decrypt a copy that only you "
        f"can read (umask 077; openssl pkey -in {encrypted} -out PLAIN.pem) and give that, or "
        "make a new key with assay ledger keygen FILE\n",
    )
    with open_ledger(ledger_url) as ledger:
        assert ledger.checkpoints() == []


def test_checkpoint_of_a_ledger_that_fails_its_checks_exits_1_signing_nothing(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = tmp_path / "signing.pem"
    SigningKey.generate().save(key)
    _tamper(ledger_url, 3, None)
    assert main(["ledger", "checkpoint", "--signing-key", str(key), "--ledger", ledger_url]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    failed, signed = err.splitlines()
    assert failed.startswith("assay ledger checkpoint: FAILED: entry 3")
    assert failed.endswith(
        f"the ledger fails its checks (`assay ledger verify --ledger {ledger_url}` finds "
        "everything that is wrong)"
    )
    assert signed == "assay ledger checkpoint: nothing was signed"
    with open_ledger(ledger_url) as ledger:
        assert ledger.checkpoints() == []
