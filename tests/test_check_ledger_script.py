"""examples/check_ledger.py checks an exported ledger with nothing of assay's code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


def _assay(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "assay", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, Path, str]:
    """An export with a checkpoint line and a proof for entry 16 of 16, both written by the
    CLI as a user would write them; and the ledger's root."""
    ledger = _ledger(tmp_path, 16)
    head = ledger.root()
    url = ledger.url
    ledger.close()
    key = tmp_path / "key.pem"
    _assay("ledger", "keygen", str(key))
    _assay("ledger", "checkpoint", "--signing-key", str(key), "--ledger", url)
    jsonl = tmp_path / "ledger.jsonl"
    jsonl.write_text(_assay("ledger", "export", "--ledger", url), encoding="utf-8")
    proof = tmp_path / "proof.json"
    proof.write_text(_assay("ledger", "prove", "16", "--ledger", url), encoding="utf-8")
    return jsonl, proof, head


def test_the_script_checks_an_export_with_a_checkpoint_and_a_proof_the_cli_made(
    exported: tuple[Path, Path, str],
) -> None:
    jsonl, proof, head = exported
    assert jsonl.read_text(encoding="utf-8").splitlines()[-1].startswith('{"checkpoint":')
    result = _run(jsonl, proof)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"16 entries: chain and hashes intact; root {head}",
        "1 checkpoint: size and root match the entries (signatures not checked)",
        "entry 16 is included in the tree of 16 entries",
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # Index -1 would read the last leaf, whose proof this is: RFC 9162's index check.
        ({"seq": 0}, "proof: entry 0 is not in a tree of 16 entries"),
        ({"seq": -3}, "proof: entry -3 is not in a tree of 16 entries"),
        ({"seq": 17}, "proof: entry 17 is not in a tree of 16 entries"),
        ({"seq": 1000}, "proof: entry 1000 is not in a tree of 16 entries"),
        ({"seq": 17, "size": 17}, "proof: it is for a tree of 17 entries, but the export holds 16"),
        ({"seq": 15}, "proof: leaf hash differs from entry 15's"),
        ({"seq": "16"}, "proof: 'seq' is '16', not a whole number"),
        ({"seq": True}, "proof: 'seq' is True, not a whole number"),
        ({"size": None}, "proof: 'size' is None, not a whole number"),
        ({"root": "00"}, "proof: 'root' is '00', not 64 lowercase hex digits"),
        ({"path": ["zz"]}, "proof: 'path' is not a list of hashes of 64 lowercase hex digits"),
        ({"path": []}, "proof: the path does not lead to the root"),
    ],
)
def test_the_script_refuses_a_forged_or_malformed_proof(
    exported: tuple[Path, Path, str], change: dict[str, object], message: str
) -> None:
    jsonl, proof, _ = exported
    proof.write_text(json.dumps({**json.loads(proof.read_text()), **change}))
    result = _run(jsonl, proof)
    assert (result.returncode, result.stderr) == (1, message + "\n")
    assert "included" not in result.stdout


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"checkpoint":', "line 18: not JSON (Expecting value: line 1 column 15 (char 14))"),
        ('{"checkpoint": 5}', "line 18: the checkpoint is not a JSON object"),
        (
            '{"checkpoint": {"size": 17, "root": "' + "0" * 64 + '"}}',
            "checkpoint 2: it covers 17 entries, but the export holds 16",
        ),
        (
            '{"checkpoint": {"size": 3, "root": "' + "0" * 64 + '"}}',
            "checkpoint 2: its root is not the root of the first 3 entries",
        ),
        ('{"checkpoint": {"root": "x"}}', "checkpoint 2: its size None is not a whole number"),
        ("[1, 2]", "line 18: not an entry or a checkpoint: not a JSON object"),
        ('{"kind": "fire"}', "line 18: not an entry or a checkpoint: it has no 'seq'"),
        ('{"seq": 17, "seq": 17}', "line 18: not JSON (the key 'seq' is given twice)"),
    ],
)
def test_the_script_refuses_a_line_it_cannot_check_naming_it(
    exported: tuple[Path, Path, str], line: str, message: str
) -> None:
    jsonl, proof, _ = exported
    with jsonl.open("a", encoding="utf-8") as out:
        out.write(line + "\n")
    result = _run(jsonl, proof)
    assert (result.returncode, result.stderr) == (1, message + "\n")


def test_the_script_refuses_a_file_it_cannot_read_or_arguments_it_does_not_take(
    tmp_path: Path,
) -> None:
    missing = _run(tmp_path / "nope.jsonl")
    assert (missing.returncode, missing.stderr) == (
        2,
        f"cannot read {tmp_path / 'nope.jsonl'}: No such file or directory\n",
    )
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b"\xe9\n")
    undecodable = _run(latin)
    assert (undecodable.returncode, undecodable.stderr) == (
        1,
        f"{latin}: not UTF-8 text (byte 0)\n",
    )
    usage = _run()
    assert (usage.returncode, usage.stderr) == (
        2,
        "usage: check_ledger.py LEDGER.jsonl [PROOF.json]\n",
    )
