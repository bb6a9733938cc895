"""verify_ledger and verify_jsonl check each checkpoint against the public key it names."""

from __future__ import annotations

import io

import pytest

from assay.ledger import SigningKey, export_jsonl, verify_jsonl, verify_ledger
from assay.ledger.backends.memory import MemoryBackend
from assay.ledger.url import open_ledger


@pytest.fixture
def keys() -> tuple[SigningKey, SigningKey]:
    return SigningKey.generate(), SigningKey.generate()


def _signed_by_each(keys: tuple[SigningKey, SigningKey]) -> MemoryBackend:
    ledger = open_ledger("memory:")
    for key in keys:
        ledger.append("fire", {"signed by": key.key_id})
        ledger.checkpoint(key)
    backend = ledger.backend
    assert isinstance(backend, MemoryBackend)
    return backend


def test_each_checkpoint_is_checked_against_the_key_it_names(
    keys: tuple[SigningKey, SigningKey],
) -> None:
    backend = _signed_by_each(keys)
    exported = io.StringIO()
    export_jsonl(backend, exported)
    lines = exported.getvalue().splitlines(keepends=True)
    first, second = keys
    given = [
        [first.public_key, second.public_key],
        (second.public_key_pem(), first.public_key_pem().encode()),  # any order, any form
        iter([first.public_key, second.public_key, first.public_key]),
    ]
    for public_keys in given:
        report = verify_ledger(backend, public_keys)
        assert (report.ok, report.checkpoints, report.signatures) == (True, 2, 2)
    assert verify_jsonl(lines, [first.public_key, second.public_key]).signatures == 2
    # One key, as before: the checkpoint the other signed names the key it needs.
    problem = verify_ledger(backend, first.public_key).problem
    assert problem is not None
    assert (problem.checkpoint, problem.field, problem.reason) == (
        2,
        "key_id",
        f"the checkpoint names signing key {second.key_id}, but the public key given is "
        f"{first.key_id}; verify with the key that signed it",
    )
    # No keys, as no key: signatures are not checked.
    unsigned = verify_ledger(backend, [])
    assert (unsigned.ok, unsigned.signatures) == (True, 0)


def test_a_checkpoint_naming_none_of_the_keys_names_its_key_and_the_keys_given(
    keys: tuple[SigningKey, SigningKey],
) -> None:
    backend = _signed_by_each(keys)
    first, second = keys
    stranger = SigningKey.generate()
    report = verify_ledger(backend, [first.public_key, stranger.public_key])
    assert report.problem is not None
    assert (report.checkpoints, report.signatures) == (1, 1)
    assert str(report.problem) == (
        f"checkpoint 2: the checkpoint names signing key {second.key_id}, but none of the "
        f"public keys given is it ({first.key_id}, {stranger.key_id}); give the key that "
        "signed it as well"
    )


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ('{"checkpoint":', "line 3 is not JSON (Expecting value: line 1 column 15 (char 14))"),
        ('{"checkpoint": {"size": 1,', "line 3 is not JSON (Expecting property name enclosed "
         "in double quotes: line 1 column 27 (char 26))"),
        ('{"checkpoint":' + "[" * 100_000, "line 3 nests too deeply to read"),
        ('{"checkpoint": 5}', "line 3 holds a number where a checkpoint's fields belong"),
        ('{"checkpoint": null}', "line 3 holds null where a checkpoint's fields belong"),
        ('{"checkpoint": {}, "x": 1, "a": 2}',
         "line 3 holds 'a', 'x' beside \"checkpoint\"; a checkpoint line holds only it"),
    ],
)  # fmt: skip
def test_an_export_line_that_holds_no_checkpoint_says_what_it_holds(line: str, reason: str) -> None:
    ledger = open_ledger("memory:")
    ledger.append("fire", {"n": 1})
    ledger.append("fire", {"n": 2})
    exported = io.StringIO()
    export_jsonl(ledger.backend, exported)
    report = verify_jsonl([*exported.getvalue().splitlines(keepends=True), line + "\n"])
    assert report.problem is not None
    assert (report.size, report.checkpoints) == (2, 0)
    assert (report.problem.checkpoint, report.problem.field) == (1, "checkpoint")
    assert str(report.problem) == f"checkpoint 1: {reason}"
