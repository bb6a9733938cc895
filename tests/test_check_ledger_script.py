"""examples/check_ledger.py checks an exported ledger with nothing of assay's code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from assay.ledger import Ledger
from assay.ledger.url import open_ledger
from assay.ledger.verification import export_jsonl

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "check_ledger.py"


def _ledger(tmp_path: Path, size: int) -> Ledger:
    ledger = open_ledger(f"sqlite:///{tmp_path / 'assay.db'}")
    for n in range(size):
        ledger.append("fire", {"n": n, "text": "é\u2028😀", "x": n / 3}, session="s")
    return ledger


def _run(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, paths)], check=False, capture_output=True, text=True
    )


def test_the_script_agrees_with_the_ledger_on_root_and_every_proof(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 37)
    jsonl = tmp_path / "ledger.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        export_jsonl(ledger.backend, out)
    for seq in (1, 2, 16, 17, 32, 37):
        proof = ledger.prove(seq)
        path = tmp_path / f"proof{seq}.json"
        path.write_text(
            json.dumps(
                {
                    "seq": proof.seq,
                    "size": proof.size,
                    "leaf_hash": proof.leaf_hash,
                    "root": proof.root,
                    "path": list(proof.path),
                }
            )
        )
        result = _run(jsonl, path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            f"37 entries: chain and hashes intact; root {ledger.root()}",
            f"entry {seq} is included in the tree of 37 entries",
        ]


def test_the_script_rejects_a_changed_entry(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 5)
    jsonl = tmp_path / "ledger.jsonl"
    with jsonl.open("w", encoding="utf-8") as out:
        export_jsonl(ledger.backend, out)
    lines = jsonl.read_text(encoding="utf-8").rstrip("\n").split("\n")
    lines[2] = lines[2].replace('"n":2', '"n":3')
    jsonl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = _run(jsonl)
    assert result.returncode == 1
    assert result.stderr.strip() == "entry 3: hash does not match its contents"
