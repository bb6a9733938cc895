"""No acknowledged entry is lost when the writer is killed at any moment (SPEC §7).

A writer process (``ledger_writer.py``) appends from several threads and prints each entry's
seq and hash only once ``append`` has returned it. The test kills it with SIGKILL at random
moments (seeded, so a failure reproduces), starts it again each time, and after every kill
checks that every acknowledged seq is stored with the acknowledged hash, that the seqs have
no gap, and that the chain, the Merkle tree and an inclusion proof verify.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.ledger import Ledger, verify_ledger
from ledger_stores import Store

WRITER = Path(__file__).with_name("ledger_writer.py")
KILLS = 30
THREADS = 6
SEED = 20260723


@pytest.fixture(params=("sqlite", "postgres"))
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    postgres_url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    subject = Store(request.param, tmp_path, postgres_url)
    subject.open().close()  # create the schema before the first writer races to
    yield subject
    subject.close()


class _Writer:
    """One writer process, its stdout read as it comes so the pipe never stalls it."""

    def __init__(self, url: str, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER), url, str(THREADS)],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: list[str] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            if raw.endswith(b"\n"):
                line = raw.decode().strip()
                self.lines.append(line)
                if line.startswith("ready"):
                    self.ready.set()
        self.ready.set()

    def kill(self) -> tuple[dict[int, str], bytes]:
        """SIGKILL it; return the acknowledged ``seq -> hash`` and what it wrote to stderr."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._reader.join()
        assert self.process.stderr is not None
        stderr = self.process.stderr.read()
        self.process.stderr.close()
        assert self.process.stdout is not None
        self.process.stdout.close()
        acknowledged = {}
        for line in self.lines:
            if not line.startswith("ready"):
                seq, digest = line.split()
                acknowledged[int(seq)] = digest
        return acknowledged, stderr


def test_sigkill_never_loses_an_acknowledged_entry(database: Store, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    acknowledged: dict[int, str] = {}
    began = time.monotonic()
    for kill in range(1, KILLS + 1):
        writer = _Writer(database.url, tmp_path)
        # Most kills land under load; every fifth at any moment from the start, opening included.
        if kill % 5:
            assert writer.ready.wait(30), "the writer did not open the ledger within 30 s"
        time.sleep(rng.uniform(0.02, 0.2))
        acked, stderr = writer.kill()
        assert writer.process.returncode == -signal.SIGKILL, stderr.decode()
        assert not stderr, stderr.decode()
        assert acked.keys().isdisjoint(acknowledged), "a seq was acknowledged twice"
        acknowledged.update(acked)

        backend = database.open()
        report = verify_ledger(backend)
        assert report.ok, f"after kill {kill}: {report.describe()}"
        stored = {entry.seq: entry.hash for entry in backend.iterate()}
        assert sorted(stored) == list(range(1, report.size + 1))
        lost = {seq: digest for seq, digest in acknowledged.items() if stored.get(seq) != digest}
        assert not lost, f"after kill {kill}: acknowledged entries lost or changed: {lost}"
        ledger = Ledger(backend)
        assert ledger.root() == report.root
        if acknowledged:
            seq = rng.choice(sorted(acknowledged))
            proof = ledger.prove(seq)
            proof.verify(ledger.entry(seq))
        backend.close()
    elapsed = time.monotonic() - began
    print(
        f"\n{database.kind}: {KILLS} kills, {len(acknowledged)} acknowledged entries all "
        f"present, {report.size} stored, chain and tree verified after each kill, "
        f"{elapsed:.1f} s"
    )
    assert len(acknowledged) > KILLS
