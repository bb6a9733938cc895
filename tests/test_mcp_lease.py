"""``assay mcp --lease-s``: the server holds its lease on the ledger for as long as it says,
and a duration that is not a positive number of seconds is a usage error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.ledger import open_ledger

ASSAY = str(Path(sys.executable).parent / "assay")

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "lease-test", "version": "0"},
    },
}


def test_the_server_holds_its_lease_for_the_duration_given(tmp_path: Path) -> None:
    ledger_url = f"sqlite:///{tmp_path / 'evidence.db'}"
    with subprocess.Popen(
        [ASSAY, "mcp", "--ledger", ledger_url, "--lease-s", "900"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as server:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        server.stdin.flush()
        answer = json.loads(server.stdout.readline())
        assert answer["id"] == 1 and "result" in answer  # the host, and its lease, are up
        with open_ledger(ledger_url) as ledger:
            (lease,) = ledger.backend.leases()
        server.stdin.close()  # the client is done: the server exits
        assert server.wait(timeout=60) == 0
    assert lease.live
    assert (lease.expires_at - lease.renewed_at).total_seconds() == pytest.approx(900)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_a_lease_that_is_not_a_positive_number_of_seconds_is_exit_2(
    value: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "evidence.db"
    done = subprocess.run(
        [ASSAY, "mcp", "--ledger", f"sqlite:///{ledger}", f"--lease-s={value}"],
        input=b"",
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"--lease-s must be a positive number of seconds" in done.stderr
    assert not ledger.exists()  # refused before anything was opened
