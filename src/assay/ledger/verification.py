"""Re-checking a ledger from what is stored, trusting nothing: ``assay ledger verify``.

``verify_ledger`` checks every stored row and checkpoint: gapless seqs, each entry the
canonical JSON of a well-formed entry whose hash recomputes, columns that agree with it, the
hash chain, and checkpoints that hold the Merkle root of the entries they cover and (given
public keys) a valid signature; the report names the first thing wrong. Given a ``trusted``
tree head, the stored entries must also extend it. ``export_jsonl`` writes a ledger as JSON
lines and ``verify_jsonl`` checks such a file offline; ``read_entries`` reads entries to show.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Final

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from assay.errors import CheckpointError, LedgerIntegrityError
from assay.json.path import json_type_name
from assay.ledger.backends.protocol import BATCH, LedgerBackend
from assay.ledger.backends.stored import StoredCheckpoint, StoredRow
from assay.ledger.checkpoint import Checkpoint, key_id, load_public_key, verify_checkpoint
from assay.ledger.entry import (
    GENESIS_HASH,
    Entry,
    _field_problem,
    entry_from_canonical,
    parse_entry,
)
from assay.ledger.merkle import MerkleTree
from assay.ledger.proof import TreeHead, checked_head

PublicKey = Ed25519PublicKey | bytes | str
"""An Ed25519 public key, or its PEM text."""

PublicKeys = PublicKey | Iterable[PublicKey]
"""One public key, or several: a ledger whose signing key was replaced holds checkpoints
signed by each, and each checkpoint is checked against the key its ``key_id`` names."""


@dataclass(frozen=True, slots=True)
class LedgerProblem:
    """The first thing found wrong: entry ``seq`` and/or checkpoint number ``checkpoint``,
    the ``field`` at fault, and ``reason``, what was wrong."""

    seq: int | None
    field: str | None
    reason: str
    checkpoint: int | None = None

    def __str__(self) -> str:
        if self.checkpoint is not None and self.seq is None:
            subject = f"checkpoint {self.checkpoint}"
        elif self.seq is not None:
            subject = f"entry {self.seq}"
        else:
            return self.reason
        if self.reason.startswith((f"{subject} ", f"{subject}'", f"{subject}:")):
            return self.reason  # it names its subject itself
        return f"{subject}: {self.reason}"


@dataclass(frozen=True, slots=True)
class LedgerReport:
    """What ``verify_ledger`` found in the ledger at ``source``.

    ``size`` entries and ``checkpoints`` checkpoints verified before the first ``problem``
    (``None`` when all did); ``root`` is the Merkle root of those entries, ``signatures``
    how many checkpoint signatures were checked (none without a public key).
    """

    source: str
    size: int
    root: str
    checkpoints: int
    signatures: int
    problem: LedgerProblem | None

    @property
    def ok(self) -> bool:
        """True when nothing was wrong."""
        return self.problem is None

    def describe(self) -> str:
        """One line for a person."""
        if self.problem is not None:
            return f"{self.source}: {self.problem} (the {self.size} entries before it verify)"
        signed = (
            f"{self.signatures} signatures valid"
            if self.signatures
            else "signatures not checked: no public key given"
        )
        return (
            f"{self.source}: {self.size} entries verify: seq gapless, hashes and chain intact, "
            f"Merkle root {self.root}; {self.checkpoints} checkpoints match ({signed})"
        )

    def check(self) -> None:
        """Raise ``LedgerIntegrityError`` describing the problem, if there is one."""
        if self.problem is not None:
            raise LedgerIntegrityError(
                self.describe(),
                seq=self.problem.seq,
                reason=self.problem.reason,
                field=self.problem.field,
                checkpoint=self.problem.checkpoint,
            )


Progress = Callable[[int], None]
"""Told how many entries are done so far, every ``PROGRESS_EVERY`` entries."""

PROGRESS_EVERY = 1024


def verify_ledger(
    backend: LedgerBackend,
    public_key: PublicKeys | None = None,
    *,
    trusted: TreeHead | None = None,
    progress: Progress | None = None,
) -> LedgerReport:
    """Re-read and re-check everything ``backend`` stores; see the module's docstring.
    ``public_key`` is a key or several; without one, signatures are not checked. A
    ``trusted`` head that is not one as ``TreeHead.parse`` makes it is a ``ProofError``."""
    return _verify(
        backend.url,
        backend.stored_rows(),
        backend.stored_checkpoints,
        _keys(public_key),
        trusted=trusted,
        progress=progress,
    )


TOO_DEEP: Final = "the stored entry nests too deeply to be read as JSON"
"""Why an entry whose JSON nests beyond Python's recursion limit is refused: assay writes none
(a body is refused when it nests too deeply to encode), so such an entry was not written by it."""


def read_entries(
    backend: LedgerBackend, start: int = 1, stop: int | None = None
) -> Iterator[Entry]:
    """The stored entries from ``start`` up to (not including) ``stop``, in order, each checked
    to be readable as the entry at its place: JSON, an object with an entry's fields, each of
    its type, and its seq its place. Hashes and the chain are not checked (``verify_ledger``
    checks them). ``LedgerIntegrityError`` names the first entry that cannot be read."""
    while stop is None or start < stop:
        end = start + BATCH if stop is None else min(stop, start + BATCH)
        for seq, text in backend.read_canonical(start, end):
            if seq != start:
                reason = f"entry {start} is missing: the next stored entry has seq {seq}"
                raise _unreadable(start, "seq", reason)
            yield readable_entry(text, seq)
            start += 1
        if start < end:  # fewer than asked for: the last entry was read
            return


def readable_entry(text: bytes, seq: int) -> Entry:
    """The entry stored as ``text`` at ``seq``, checked as ``read_entries`` checks it."""
    try:
        entry = entry_from_canonical(text, seq)
    except RecursionError:
        raise _unreadable(seq, "entry", TOO_DEEP) from None
    except LedgerIntegrityError as error:
        raise _unreadable(seq, error.field, error.reason) from None
    return checked_entry(entry, seq)


def checked_entry(entry: Entry, seq: int | None) -> Entry:
    """``entry`` if its fields are of their types and its seq is ``seq`` (when given);
    ``LedgerIntegrityError`` naming the field otherwise."""
    problem = _field_problem(entry.to_dict())
    if problem is not None:
        raise _unreadable(seq, problem[0], problem[1])
    if seq is not None and entry.seq != seq:
        raise _unreadable(seq, "seq", f"stored as entry {seq} but says seq {entry.seq}")
    return entry


def _unreadable(seq: int | None, field: str | None, reason: str) -> LedgerIntegrityError:
    subject = "an entry" if seq is None else f"entry {seq}"
    return LedgerIntegrityError(
        f"{subject}: {reason}; verify the ledger to find everything that is wrong",
        seq=seq,
        reason=reason,
        field=field,
    )


def export_jsonl(backend: LedgerBackend, file: IO[str], *, progress: Progress | None = None) -> int:
    """Write every entry's canonical JSON, one per line, then each checkpoint as a line
    ``{"checkpoint": {...}}``; return how many entries were written.

    ``LedgerIntegrityError`` (from ``read_entries``) at the first entry that cannot be read,
    with the entries before it written.
    """
    count = 0
    for entry in read_entries(backend):
        file.write(entry.canonical.decode())
        file.write("\n")
        count += 1
        if progress is not None and count % PROGRESS_EVERY == 0:
            progress(count)
    for checkpoint in backend.checkpoints():
        line = rfc8785.dumps({"checkpoint": checkpoint.model_dump()})
        file.write(line.decode())
        file.write("\n")
    return count


def verify_jsonl(
    lines: Iterable[str],
    public_key: PublicKeys | None = None,
    *,
    source: str = "export",
    trusted: TreeHead | None = None,
    progress: Progress | None = None,
) -> LedgerReport:
    """Check an ``export_jsonl`` file (any iterable of its lines) as ``verify_ledger`` does.

    Each entry line must be exactly the entry's canonical JSON, at the line position of its
    seq among the entry lines.
    """
    rows: list[StoredRow] = []
    checkpoints: list[StoredCheckpoint] = []
    for number, line in enumerate(lines, start=1):
        text = line.removesuffix("\n")
        if text.startswith(_CHECKPOINT_LINE):
            checkpoints.append(_checkpoint_line(text, len(checkpoints) + 1, number))
        elif text.strip(_JSON_WHITESPACE):
            rows.append(StoredRow(len(rows) + 1, text.encode("utf-8", "surrogateescape"), {}))
    return _verify(
        source, rows, lambda: checkpoints, _keys(public_key), trusted=trusted, progress=progress
    )


_JSON_WHITESPACE: Final = " \t\r\n"
"""What ``verify_jsonl`` skips as a blank line when a line holds only these."""


_CHECKPOINT_LINE: Final = '{"checkpoint":'
"""How a checkpoint line of an export begins: ``{"checkpoint": {...}}``."""


@dataclass(frozen=True, slots=True)
class _UnreadableCheckpoint(StoredCheckpoint):
    """A checkpoint line that holds no checkpoint's fields to check: ``reason`` says why."""

    reason: str = ""

    def checkpoint(self) -> Checkpoint:
        raise CheckpointError(f"checkpoint {self.number}: {self.reason}", field="checkpoint")


def _checkpoint_line(text: str, number: int, line: int) -> StoredCheckpoint:
    """Checkpoint ``number`` of an export, read from its line ``line``."""
    try:
        data = json.loads(text)
    except RecursionError:
        return _UnreadableCheckpoint(number, {}, f"line {line} nests too deeply to read")
    except ValueError as error:
        return _UnreadableCheckpoint(number, {}, f"line {line} is not JSON ({error})")
    if set(data) != {"checkpoint"}:  # it begins '{"checkpoint":', so it is an object
        others = ", ".join(repr(key) for key in sorted(data) if key != "checkpoint")
        reason = f'line {line} holds {others} beside "checkpoint"; a checkpoint line holds only it'
        return _UnreadableCheckpoint(number, {}, reason)
    fields = data["checkpoint"]
    if not isinstance(fields, dict):
        kind = json_type_name(fields)
        reason = f"line {line} holds {kind} where a checkpoint's fields belong"
        return _UnreadableCheckpoint(number, {}, reason)
    return StoredCheckpoint(number, fields)


def _keys(public_key: PublicKeys | None) -> dict[str, Ed25519PublicKey]:
    """The keys given, by key id."""
    if public_key is None:
        return {}
    given = [public_key] if isinstance(public_key, Ed25519PublicKey | bytes | str) else public_key
    keys = [key if isinstance(key, Ed25519PublicKey) else load_public_key(key) for key in given]
    return {key_id(key): key for key in keys}


class _FirstProblemError(Exception):
    def __init__(self, problem: LedgerProblem) -> None:
        self.problem = problem


def _verify(
    source: str,
    rows: Iterable[StoredRow],
    stored_checkpoints: Callable[[], Iterable[StoredCheckpoint]],
    public_keys: dict[str, Ed25519PublicKey],
    *,
    trusted: TreeHead | None,
    progress: Progress | None,
) -> LedgerReport:
    if trusted is not None:
        checked_head(trusted, "trusted")
    # Checkpoints first: one stored while the rows are read would cover entries not read.
    checkpoints = list(stored_checkpoints())
    tree = MerkleTree()
    checked = signatures = 0
    try:
        _check_entries(rows, tree, progress)
        for stored in checkpoints:
            signatures += _check_checkpoint(stored, tree, public_keys)
            checked += 1
        if trusted is not None:
            _check_extends(trusted, tree)
        problem = None
    except _FirstProblemError as found:
        problem = found.problem
    return LedgerReport(source, tree.size, tree.root().hex(), checked, signatures, problem)


def _check_entries(
    rows: Iterable[StoredRow], tree: MerkleTree, progress: Progress | None = None
) -> None:
    previous = GENESIS_HASH
    for expected, row in enumerate(rows, start=1):
        if row.seq != expected:
            raise _FirstProblemError(
                LedgerProblem(
                    expected,
                    "seq",
                    f"entry {expected} is missing: the next stored entry has seq {row.seq!r}",
                )
            )
        try:
            entry = parse_entry(row.entry, expected)
        except LedgerIntegrityError as error:
            raise _FirstProblemError(LedgerProblem(expected, error.field, error.reason)) from None
        except RecursionError:
            raise _FirstProblemError(LedgerProblem(expected, "entry", TOO_DEEP)) from None
        if entry.seq != expected:
            raise _FirstProblemError(
                LedgerProblem(
                    expected, "seq", f"stored as entry {expected} but says seq {entry.seq}"
                )
            )
        for column, stored in row.columns.items():
            if stored != getattr(entry, column):
                raise _FirstProblemError(
                    LedgerProblem(
                        expected,
                        column,
                        f"the {column} column holds {stored!r}, but the entry says "
                        f"{getattr(entry, column)!r}",
                    )
                )
        if entry.prev_hash != previous:
            raise _FirstProblemError(
                LedgerProblem(
                    expected,
                    "prev_hash",
                    f"prev_hash {entry.prev_hash} does not link to entry {expected - 1}, "
                    f"whose hash is {previous}",
                )
            )
        tree.append(entry.leaf_hash)
        previous = entry.hash
        if progress is not None and expected % PROGRESS_EVERY == 0:
            progress(expected)


def _check_extends(trusted: TreeHead, tree: MerkleTree) -> None:
    """Check that the verified entries extend the ``trusted`` head."""
    _check_head(
        trusted,
        tree,
        name="the trusted head",
        missing_hint=" (entries were removed, or this is an older copy)",
        differs_hint=": they are not the entries it was taken from",
    )


def _check_head(
    head: TreeHead,
    tree: MerkleTree,
    *,
    name: str,
    checkpoint: int | None = None,
    missing_hint: str = "",
    differs_hint: str = "",
) -> None:
    """Check that the verified entries extend ``head``, which ``name`` names in the problem:
    at least as many of them, whose root at its size is its root."""
    if head.size > tree.size:
        missing = tree.size + 1
        raise _FirstProblemError(
            LedgerProblem(
                missing,
                "seq",
                f"entry {missing} is missing: {name} covers {head.size} entries, but only "
                f"{tree.size} are stored{missing_hint}",
                checkpoint,
            )
        )
    root = tree.root(head.size).hex()
    if root != head.root:
        raise _FirstProblemError(
            LedgerProblem(
                None,
                "root",
                f"{name}'s root for {head.size} entries is {head.root}, but the stored entries "
                f"give {root}{differs_hint}",
                checkpoint,
            )
        )


def _check_checkpoint(
    stored: StoredCheckpoint, tree: MerkleTree, public_keys: dict[str, Ed25519PublicKey]
) -> int:
    """Check one checkpoint against the verified tree, and its signature against the key it
    names when keys are given; 1 when its signature was checked."""
    number = stored.number
    try:
        checkpoint = stored.checkpoint()
    except CheckpointError as error:
        reason = str(error).removeprefix(f"checkpoint {number}: ")
        raise _FirstProblemError(LedgerProblem(None, error.field, reason, number)) from None
    head = TreeHead(checkpoint.size, checkpoint.root)
    _check_head(head, tree, name=f"checkpoint {number}", checkpoint=number)
    if not public_keys:
        return 0
    public_key = public_keys.get(checkpoint.key_id)
    if public_key is None and len(public_keys) > 1:
        reason = (
            f"the checkpoint names signing key {checkpoint.key_id}, but none of the public keys "
            f"given is it ({', '.join(public_keys)}); give the key that signed it as well"
        )
        raise _FirstProblemError(LedgerProblem(None, "key_id", reason, number))
    try:
        # With one key that is not the one named, verify_checkpoint says which was given.
        verify_checkpoint(checkpoint, public_key or next(iter(public_keys.values())))
    except CheckpointError as error:
        raise _FirstProblemError(LedgerProblem(None, error.field, str(error), number)) from None
    return 1
