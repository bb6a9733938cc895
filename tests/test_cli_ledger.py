"""``assay ledger ...`` and ``assay example --ledger``, run as real subprocesses."""

from __future__ import annotations

import json
import os
import pty
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.ledger import SigningKey, open_ledger


def run(
    *args: str, cwd: Path | None = None, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "assay", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


@pytest.fixture
def ledger_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'evidence.db'}"
    result = run("example", "already-true", "--ledger", url)
    assert result.returncode == 0, result.stderr
    return url


def test_the_example_writes_fires_and_settlements_that_verify(ledger_url: str) -> None:
    result = run("ledger", "verify", "--ledger", ledger_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"OK {ledger_url}: 6 entries, chain and Merkle tree verified")
    exported = run("ledger", "export", "--ledger", ledger_url)
    entries = [json.loads(line) for line in exported.stdout.splitlines()]
    assert [(e["seq"], e["kind"], e["transition"]) for e in entries] == [
        (1, "fire", "workspace.open-billing#1"),
        (2, "settlement", "workspace.open-billing#1"),
        (3, "fire", "workspace.open-billing#1"),
        (4, "settlement", "workspace.open-billing#1"),
        (5, "fire", "workspace.open-billing-writes-only#1"),
        (6, "settlement", "workspace.open-billing-writes-only#1"),
    ]
    assert entries[0]["body"]["already_true"][0]["key"] == "view.domain"
    assert entries[1]["body"]["answer"] == "unobservable"
    assert entries[3]["body"]["answer"] == "worked"
    # The third press was still pending when the example ended: its session's close says so.
    assert entries[5]["body"]["answer"] == "unobservable"
    assert entries[5]["body"]["error"].startswith(
        "the session was closed while it waited on a state report writing view.domain ("
    )
    assert exported.stderr == "exported 6 entries\n"


def test_verify_names_the_first_bad_entry_after_tampering(ledger_url: str) -> None:
    path = ledger_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as connection:
        triggers = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger'"
        ).fetchall()
        for (name,) in triggers:
            connection.execute(f'DROP TRIGGER "{name}"')
        columns = [row[1] for row in connection.execute("PRAGMA table_info(ledger_entries)")]
        assert "kind" in columns
        connection.execute("UPDATE ledger_entries SET kind = 'commit' WHERE seq = 3")
    result = run("ledger", "verify", "--ledger", ledger_url)
    assert result.returncode == 1
    assert result.stdout.startswith(f"FAILED {ledger_url}: entry 3: ")
    assert "2 entries verified before it" in result.stdout


def test_verify_checks_an_export_and_names_a_line_that_is_not_utf_8(
    ledger_url: str, tmp_path: Path
) -> None:
    export = tmp_path / "ledger.jsonl"
    export.write_text(run("ledger", "export", "--ledger", ledger_url).stdout)
    checked = run("ledger", "verify", "--export", str(export))
    assert (checked.returncode, checked.stderr) == (0, "")
    assert checked.stdout.startswith(f"OK {export}: 6 entries, chain and Merkle tree verified")
    lines = export.read_bytes().splitlines(keepends=True)
    lines[3] = lines[3].replace(b"settlement", b"settl\xffment")
    export.write_bytes(b"".join(lines))
    tampered = run("ledger", "verify", "--export", str(export))
    assert tampered.returncode == 1, tampered.stderr
    assert tampered.stdout.startswith(f"FAILED {export}: entry 4: the stored entry is not JSON")
    assert "3 entries verified before it" in tampered.stdout


def test_a_trusted_head_catches_a_ledger_that_lost_its_last_entries(
    ledger_url: str, tmp_path: Path
) -> None:
    verified = run("ledger", "verify", "--ledger", ledger_url)
    with open_ledger(ledger_url) as ledger:
        whole = ledger.tree_head()
        prefix = f"3:{ledger.root(3)}"
    assert f"(head {whole.size}:{whole.root});" in verified.stdout
    export = run("ledger", "export", "--ledger", ledger_url).stdout
    lines = export.splitlines(keepends=True)
    assert len(lines) == 6
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:4]))  # the last two entries lost
    head = f"{whole.size}:{whole.root}"
    unanchored = run("ledger", "verify", "--export", str(cut))
    assert unanchored.returncode == 0  # every prefix of a ledger verifies on its own
    anchored = run("ledger", "verify", "--export", str(cut), "--trusted-head", head)
    assert anchored.returncode == 1
    assert anchored.stdout == (
        f"FAILED {cut}: entry 5 is missing: the trusted head covers 6 entries, but only 4 are "
        "stored (entries were removed, or this is an older copy)\n  4 entries verified before it\n"
    )
    # From stdin, and the live ledger against its own head and an earlier one.
    piped = subprocess.run(
        [
            sys.executable,
            "-m",
            "assay",
            "ledger",
            "verify",
            "--export",
            "-",
            "--trusted-head",
            head,
        ],
        input=export,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.startswith("OK stdin: 6 entries")
    assert piped.stdout.endswith(f"; it extends the trusted head {head}\n")
    assert run("ledger", "verify", "--ledger", ledger_url, "--trusted-head", prefix).returncode == 0
    other = f"6:{'0' * 64}"
    differs = run("ledger", "verify", "--ledger", ledger_url, "--trusted-head", other)
    assert differs.returncode == 1
    assert (
        f"the trusted head's root for 6 entries is {'0' * 64}, but the stored entries give "
        f"{whole.root}: they are not the entries it was taken from" in differs.stdout
    )
    malformed = run("ledger", "verify", "--ledger", ledger_url, "--trusted-head", "6-abc")
    assert malformed.returncode == 2
    assert malformed.stderr.startswith("assay ledger: error: --trusted-head: a tree head is ")


def test_long_work_shows_progress_on_a_terminal_and_erases_it(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'big.db'}"
    with open_ledger(url) as ledger:
        for start in range(0, 3000, 500):
            ledger.store([ledger.draft("verdict", {"n": n}) for n in range(start, start + 500)])
    for command in (("verify",), ("export",)):
        terminal, attached = pty.openpty()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "assay", "ledger", *command, "--ledger", url],
                stdout=subprocess.PIPE,
                stderr=attached,
                timeout=120,
                check=False,
            )
            os.close(attached)
            shown = _read_all(terminal)
        finally:
            os.close(terminal)
        assert done.returncode == 0, shown
        doing = "verified" if command == ("verify",) else "exported"
        assert shown.startswith(f"\r{doing} 1,024 of 3,000 entries…\x1b[K"), shown
        assert "\r\x1b[K" in shown  # erased before anything else is said
        assert b"entries\xe2\x80\xa6" not in done.stdout  # stdout holds the answer alone
    verified = run("ledger", "verify", "--ledger", url)
    assert verified.stderr == ""  # not a terminal: nothing shown


def _read_all(terminal: int) -> str:
    """Everything written to the pseudo-terminal whose other end is closed."""
    chunks = []
    while True:
        try:
            chunk = os.read(terminal, 65536)
        except OSError:  # EIO: the other end is closed and all was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks).decode()


def test_show_prove_and_tail(ledger_url: str) -> None:
    shown = run("ledger", "show", "2", "--ledger", ledger_url)
    assert shown.returncode == 0
    assert json.loads(shown.stdout)["kind"] == "settlement"
    proof = json.loads(run("ledger", "prove", "2", "--ledger", ledger_url).stdout)
    assert (proof["seq"], proof["size"]) == (2, 6)
    assert len(proof["path"]) == 3
    tail = run("ledger", "tail", "-n", "2", "--ledger", ledger_url)
    assert [json.loads(line)["seq"] for line in tail.stdout.splitlines()] == [5, 6]


def test_query_filters_by_kind_transition_time_and_position(ledger_url: str) -> None:
    def seqs(*filters: str) -> list[int]:
        result = run("ledger", "query", "--ledger", ledger_url, *filters)
        assert result.returncode == 0, result.stderr
        found = [json.loads(line) for line in result.stdout.splitlines()]
        assert result.stderr == f"{len(found)} {'entry' if len(found) == 1 else 'entries'}\n"
        return [entry["seq"] for entry in found]

    assert seqs("--kind", "fire") == [1, 3, 5]
    assert seqs("--transition", "workspace.open-billing#1", "--kind", "settlement") == [2, 4]
    assert seqs("--after", "2", "--limit", "2") == [3, 4]
    assert seqs("--after", "5", "--limit", "1") == [6]  # "1 entry", not "1 entries"
    assert seqs("--session", "nobody") == []
    assert seqs("--run", "no-run") == []
    exported = run("ledger", "export", "--ledger", ledger_url).stdout.splitlines()
    stamps = [(e["seq"], e["timestamp"]) for e in map(json.loads, exported)]
    third = stamps[2][1]
    assert seqs("--since", third) == [seq for seq, stamp in stamps if stamp >= third]
    assert seqs("--until", third) == [seq for seq, stamp in stamps if stamp < third]
    assert 3 in seqs("--since", third)
    assert seqs("--until", "2000-01-01T00:00:00Z") == []
    assert seqs("--since", "2000-01-01T00:00:00+00:00") == [1, 2, 3, 4, 5, 6]
    naive = run("ledger", "query", "--ledger", ledger_url, "--since", "2026-01-01T00:00:00")
    assert naive.returncode == 2
    assert naive.stderr.startswith("assay ledger: error: --since: since must say its time zone")
    kind = run("ledger", "query", "--ledger", ledger_url, "--kind", "gossip")
    assert kind.returncode == 2
    assert kind.stderr.startswith("assay ledger: error: --kind: kind must be one of")


def test_missing_entry_and_bad_url_exit_2(ledger_url: str) -> None:
    missing = run("ledger", "show", "99", "--ledger", ledger_url)
    assert missing.returncode == 2
    assert missing.stderr == (
        f"assay ledger: error: there is no entry 99; the ledger {ledger_url} holds entries 1 to 6\n"
    )
    unknown = run("ledger", "show", "1", "--nope", "--ledger", ledger_url)
    assert (unknown.returncode, unknown.stderr.splitlines()[-2:]) == (
        2,
        [
            "assay ledger show: error: unrecognized arguments: --nope",
            "(run 'assay ledger show --help' for usage)",
        ],
    )
    bad = run("ledger", "verify", "--ledger", "ftp://example/ledger")
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr
    assert bad.stderr.startswith("assay ledger: error: ")


def test_signed_checkpoints_verify_with_the_public_key(ledger_url: str, tmp_path: Path) -> None:
    from assay.ledger import SigningKey

    signing = tmp_path / "signing.pem"
    made_key = run("ledger", "keygen", str(signing))
    assert made_key.returncode == 0, made_key.stderr
    key = SigningKey.from_file(signing)
    assert made_key.stdout.splitlines()[0] == (
        f"key {key.key_id}: private key in {signing} (keep it secret), public key in {signing}.pub"
    )
    assert signing.stat().st_mode & 0o777 == 0o600
    again = run("ledger", "keygen", str(signing))
    assert (again.returncode, again.stderr) == (
        2,
        f"assay ledger: error: {signing} exists; keygen never overwrites a key, so name a new "
        "file\n",
    )
    assert SigningKey.from_file(signing).key_id == key.key_id
    made = run("ledger", "checkpoint", "--signing-key", str(signing),
               "--ledger", ledger_url)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["size"] == 6
    checked = run("ledger", "verify", "--public-key", f"{signing}.pub",
                  "--ledger", ledger_url)  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.rstrip().endswith("1 checkpoint, 1 signature checked")
    other = SigningKey.generate()
    (tmp_path / "other.pem").write_text(other.public_key_pem())
    wrong = run("ledger", "verify", "--public-key", str(tmp_path / "other.pem"),
                "--ledger", ledger_url)  # fmt: skip
    assert wrong.returncode == 1
    assert wrong.stdout.startswith(f"FAILED {ledger_url}: checkpoint 1: ")


def test_verify_can_record_its_verdict(tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    state.write_text('{"a": 1}')
    url = f"sqlite:///{tmp_path / 'verdicts.db'}"
    result = run("verify", "a === 1", "--state", str(state), "--ledger", url)
    assert result.returncode == 0, result.stderr
    entries = [
        json.loads(line) for line in run("ledger", "export", "--ledger", url).stdout.splitlines()
    ]
    assert [(e["kind"], e["body"]["passed"]) for e in entries] == [("verdict", True)]


@pytest.mark.parametrize(
    "action", [["verify"], ["export"], ["show", "1"], ["tail"], ["prove", "1"]]
)
def test_reading_where_there_is_no_ledger_fails_and_creates_nothing(
    tmp_path: Path, action: list[str]
) -> None:
    missing = tmp_path / "typo.db"
    result = run("ledger", *action, "--ledger", f"sqlite:///{missing}")
    assert result.returncode == 2
    assert result.stderr == (
        f"assay ledger: error: there is no ledger at sqlite:///{missing}: {missing} does not "
        "exist; check the path (reading a ledger never creates one)\n"
    )
    assert list(tmp_path.iterdir()) == []
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    connection.close()
    before = other.read_bytes()
    result = run("ledger", *action, "--ledger", f"sqlite:///{other}")
    assert result.returncode == 2
    assert "is a SQLite database without assay's ledger_entries table" in result.stderr
    assert other.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["other.db"]


def test_a_seq_beyond_64_bits_is_no_entry_and_negative_counts_are_usage_errors(
    ledger_url: str,
) -> None:
    huge = str(2**70)
    shown = run("ledger", "show", huge, "--ledger", ledger_url)
    assert (shown.returncode, shown.stderr) == (
        2,
        f"assay ledger: error: there is no entry {huge}; the ledger {ledger_url} holds entries "
        "1 to 6\n",
    )
    found = run("ledger", "query", "--after", huge, "--ledger", ledger_url)
    assert (found.returncode, found.stdout, found.stderr) == (0, "", "0 entries\n")
    for arguments, message in [
        (["tail", "-n", "-1"], "argument -n: expected zero or more entries, got -1"),
        (["tail", "-f", "--interval-ms", "0"], "expected 1 or more milliseconds, got 0"),
        (["query", "--limit", "-2"], "argument --limit: expected zero or more entries, got -2"),
    ]:
        refused = run("ledger", *arguments, "--ledger", ledger_url)
        assert refused.returncode == 2
        assert message in refused.stderr


# Root ignores file modes, so as root the reader runs as nobody; as anyone else, as itself.
AS_ANOTHER_USER: tuple[str, ...] = (
    ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups") if os.geteuid() == 0 else ()
)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory the reader's user can enter (pytest's own are private to this user)."""
    path = Path(tempfile.mkdtemp(prefix="assay-read-only-"))
    path.chmod(0o755)
    probe = subprocess.run(
        [*AS_ANOTHER_USER, sys.executable, "-c", "import assay"], capture_output=True, check=False
    )
    if probe.returncode != 0:
        shutil.rmtree(path)
        pytest.skip(f"this interpreter cannot run as another user: {probe.stderr[-300:]!r}")
    yield path
    path.chmod(0o755)
    shutil.rmtree(path)


def test_a_ledger_on_storage_the_reader_cannot_write_is_read_verified_and_left_alone(
    shared_dir: Path,
) -> None:
    path = shared_dir / "evidence.db"
    url = f"sqlite:///{path}"
    with open_ledger(url) as ledger:
        for number in range(3):
            ledger.append("verdict", {"number": number})
    path.chmod(0o444)
    shared_dir.chmod(0o555)  # no -wal or -shm can be made beside it
    before = path.read_bytes()

    verified = run("ledger", "verify", "--ledger", url, prefix=AS_ANOTHER_USER)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith(f"OK {url}: 3 entries, chain and Merkle tree verified")
    exported = run("ledger", "export", "--ledger", url, prefix=AS_ANOTHER_USER)
    assert [json.loads(line)["body"] for line in exported.stdout.splitlines()] == [
        {"number": 0},
        {"number": 1},
        {"number": 2},
    ]
    shown = run("ledger", "show", "2", "--ledger", url, prefix=AS_ANOTHER_USER)
    assert json.loads(shown.stdout)["body"] == {"number": 1}
    key_file = shared_dir.parent / f"{shared_dir.name}.pem"  # not in the read-only directory
    SigningKey.generate().save(key_file)
    try:
        key_file.chmod(0o644)
        signed = run("ledger", "checkpoint", "--ledger", url, "--signing-key", str(key_file),
                     prefix=AS_ANOTHER_USER)  # fmt: skip
    finally:
        key_file.unlink()
    assert signed.returncode == 2
    assert signed.stderr == (
        f"assay ledger: error: cannot store a checkpoint in the SQLite ledger {url}: attempt to "
        "write a readonly database; check that this user may write the file and its directory\n"
    )

    assert path.read_bytes() == before
    assert [child.name for child in shared_dir.iterdir()] == ["evidence.db"]


def test_a_ledger_another_user_is_writing_is_read_with_its_newest_entries(
    shared_dir: Path,
) -> None:
    url = f"sqlite:///{shared_dir / 'evidence.db'}"
    with open_ledger(url) as ledger:
        ledger.append("verdict", {"number": 0})
        ledger.append("verdict", {"number": 1})
        # The writer still has the file open, so both entries are in its -wal file only.
        verified = run("ledger", "verify", "--ledger", url, prefix=AS_ANOTHER_USER)
        assert verified.returncode == 0, verified.stderr
        assert verified.stdout.startswith(f"OK {url}: 2 entries")
        ledger.append("verdict", {"number": 2})
        tail = run("ledger", "tail", "-n", "1", "--ledger", url, prefix=AS_ANOTHER_USER)
        assert json.loads(tail.stdout)["body"] == {"number": 2}


def test_a_ledger_signed_with_two_keys_verifies_given_both(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'evidence.db'}"
    first, second, stranger = SigningKey.generate(), SigningKey.generate(), SigningKey.generate()
    for name, key in (("first", first), ("second", second), ("stranger", stranger)):
        (tmp_path / f"{name}.pem.pub").write_text(key.public_key_pem())
    with open_ledger(url) as ledger:
        ledger.append("fire", {"n": 1})
        ledger.checkpoint(first)
        ledger.append("fire", {"n": 2})
        ledger.checkpoint(second)  # the signing key was replaced
    (tmp_path / "ledger.jsonl").write_text(run("ledger", "export", "--ledger", url).stdout)

    def verify(*names: str, export: bool = False) -> subprocess.CompletedProcess[str]:
        keys = [arg for name in names for arg in ("--public-key", str(tmp_path / name))]
        source = ["--export", str(tmp_path / "ledger.jsonl")] if export else ["--ledger", url]
        return run("ledger", "verify", *keys, *source)

    for export in (False, True):
        both = verify("first.pem.pub", "second.pem.pub", export=export)
        assert both.returncode == 0, both.stderr
        assert both.stdout.rstrip().endswith("2 checkpoints, 2 signatures checked")
    only_first = verify("first.pem.pub")
    assert (only_first.returncode, only_first.stdout.splitlines()[0]) == (
        1,
        f"FAILED {url}: checkpoint 2: the checkpoint names signing key {second.key_id}, but the "
        f"public key given is {first.key_id}; verify with the key that signed it",
    )
    only_second = verify("second.pem.pub")
    assert only_second.returncode == 1
    assert only_second.stdout.startswith(f"FAILED {url}: checkpoint 1: ")
    wrong = verify("first.pem.pub", "stranger.pem.pub")
    assert (wrong.returncode, wrong.stdout.splitlines()[0]) == (
        1,
        f"FAILED {url}: checkpoint 2: the checkpoint names signing key {second.key_id}, but none "
        f"of the public keys given is it ({first.key_id}, {stranger.key_id}); give the key "
        "that signed it as well",
    )
