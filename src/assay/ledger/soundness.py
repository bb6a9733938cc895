"""What a ledger checks before it signs a tree head: that no checkpoint vouches for a ledger
that fails its checks.

``sound_head`` gives the head ``Ledger.checkpoint`` signs. Every stored checkpoint must be well
formed, cover no more entries than are stored, and be extended by the tree to be signed. The
first time a key signs this ledger, all of it is verified (``verify_ledger``); after that the
check starts from the latest checkpoint that key signed, whose signature and root must hold,
and each entry stored since must parse strictly and link into the chain and the tree. When
anything is wrong, the whole ledger is verified to name the first bad entry or checkpoint,
``LedgerIntegrityError`` says what it is, and nothing is signed.
"""

from __future__ import annotations

from assay.errors import CheckpointError, LedgerIntegrityError, ProofError
from assay.ledger.backends.protocol import BATCH
from assay.ledger.backends.stored import StoredCheckpoint
from assay.ledger.checkpoint import Checkpoint, SigningKey, verify_checkpoint
from assay.ledger.entry import GENESIS_HASH, VERIFY_THE_LEDGER, parse_entry
from assay.ledger.merkle import EMPTY_ROOT, leaf_hash
from assay.ledger.proof import ConsistencyProof, TreeHead
from assay.ledger.tree import LedgerTree
from assay.ledger.verification import TOO_DEEP, LedgerProblem, LedgerReport, verify_ledger


class _UnsoundError(Exception):
    def __init__(self, problem: LedgerProblem) -> None:
        self.problem = problem


def sound_head(tree: LedgerTree, signing_key: SigningKey) -> TreeHead:
    """The head of the ledger ``tree`` covers, to sign with ``signing_key``, checked as the
    module says; ``LedgerIntegrityError`` naming the first thing wrong instead."""
    # Checkpoints before the entries: each covers entries already stored.
    stored = tree.backend.stored_checkpoints()
    head: TreeHead | None = None
    try:
        head = tree.refresh()
        start = _checked_checkpoints(tree, stored, head, signing_key)
        if start is not None:
            _check_entries(tree, start, head)
            return head
        found = None
    except _UnsoundError as unsound:
        found = unsound.problem
    except LedgerIntegrityError as error:  # the tree found an entry missing
        found = LedgerProblem(error.seq, error.field, f"entry {error.seq} is missing")
    report = verify_ledger(tree.backend)
    problem = report.problem or found or _tree_problem(tree, report, head)
    if problem is not None:
        raise LedgerIntegrityError(
            f"{tree.backend.url}: {problem}; nothing was signed: {VERIFY_THE_LEDGER}",
            seq=problem.seq,
            reason=problem.reason,
            field=problem.field,
            checkpoint=problem.checkpoint,
        )
    return TreeHead(report.size, report.root)


def _checked_checkpoints(
    tree: LedgerTree, stored: list[StoredCheckpoint], head: TreeHead, signing_key: SigningKey
) -> int | None:
    """Check that each stored checkpoint is well formed and that ``head`` extends it, and the
    signature of the latest one ``signing_key`` signed; the size that one covers, or ``None``
    when the key has signed none."""
    latest: tuple[int, Checkpoint] | None = None
    for each in stored:
        number = each.number
        try:
            checkpoint = each.checkpoint()
        except CheckpointError as error:
            reason = str(error).removeprefix(f"checkpoint {number}: ")
            raise _UnsoundError(LedgerProblem(None, error.field, reason, number)) from None
        if checkpoint.size > head.size:
            missing = head.size + 1
            reason = (
                f"entry {missing} is missing: checkpoint {number} covers {checkpoint.size} "
                f"entries, but only {head.size} are stored"
            )
            raise _UnsoundError(LedgerProblem(missing, "seq", reason, number))
        if not _extends(tree, checkpoint, head):
            reason = (
                f"checkpoint {number}'s root for {checkpoint.size} entries is "
                f"{checkpoint.root}, but the stored entries give {tree.root(checkpoint.size)}"
            )
            raise _UnsoundError(LedgerProblem(None, "root", reason, number))
        if checkpoint.key_id == signing_key.key_id:
            latest = (number, checkpoint)
    if latest is None:
        return None
    number, checkpoint = latest
    try:
        verify_checkpoint(checkpoint, signing_key.public_key)
    except CheckpointError as error:
        raise _UnsoundError(LedgerProblem(None, error.field, str(error), number)) from None
    return checkpoint.size


def _extends(tree: LedgerTree, checkpoint: Checkpoint, head: TreeHead) -> bool:
    """Whether the tree of ``head`` extends the one ``checkpoint`` signed: by RFC 9162's
    consistency proof from its root, or, from the empty tree, which has no proof, its root."""
    if checkpoint.size == 0:
        return checkpoint.root == EMPTY_ROOT.hex()
    path = tree.consistency(checkpoint.size, head.size).path
    proof = ConsistencyProof(checkpoint.size, checkpoint.root, head.size, head.root, path)
    try:
        proof.verify()
    except ProofError:
        return False
    return True


def _check_entries(tree: LedgerTree, start: int, head: TreeHead) -> None:
    """Check the entries after ``start`` up to ``head``, and entry ``start`` itself (whose
    hash the next links to): each parses strictly, takes its place, links to the one before
    and is the leaf the tree holds."""
    previous = GENESIS_HASH
    first = max(start, 1)
    for batch in range(first, head.size + 1, BATCH):
        stop = min(batch + BATCH, head.size + 1)
        rows = tree.backend.read_canonical(batch, stop)
        leaves = tree.leaf_hashes(batch, stop)
        for seq, held in zip(range(batch, stop), leaves, strict=True):
            row = rows[seq - batch] if seq - batch < len(rows) else None
            if row is None or row[0] != seq:
                shown = "none" if row is None else f"seq {row[0]}"
                reason = f"entry {seq} is missing: the next stored entry has {shown}"
                raise _UnsoundError(LedgerProblem(seq, "seq", reason))
            text = row[1]
            try:
                entry = parse_entry(text, seq)
            except LedgerIntegrityError as error:
                raise _UnsoundError(LedgerProblem(seq, error.field, error.reason)) from None
            except RecursionError:
                raise _UnsoundError(LedgerProblem(seq, "entry", TOO_DEEP)) from None
            if entry.seq != seq:
                reason = f"stored as entry {seq} but says seq {entry.seq}"
                raise _UnsoundError(LedgerProblem(seq, "seq", reason))
            if seq > start and entry.prev_hash != previous:
                reason = (
                    f"prev_hash {entry.prev_hash} does not link to entry {seq - 1}, whose hash "
                    f"is {previous}"
                )
                raise _UnsoundError(LedgerProblem(seq, "prev_hash", reason))
            if leaf_hash(text) != held:
                raise _UnsoundError(LedgerProblem(seq, "entry", _changed(seq, text, held)))
            previous = entry.hash


def _tree_problem(
    tree: LedgerTree, report: LedgerReport, head: TreeHead | None
) -> LedgerProblem | None:
    """What keeps ``tree`` from being the one the verified entries give."""
    if head is not None and report.size < head.size:
        missing = report.size + 1
        reason = (
            f"entry {missing} is missing: the ledger's tree holds {head.size} entries, but only "
            f"{report.size} are stored"
        )
        return LedgerProblem(missing, "seq", reason)
    if tree.root(report.size) == report.root:
        return None
    for batch in range(1, report.size + 1, BATCH):
        stop = min(batch + BATCH, report.size + 1)
        rows = tree.backend.read_canonical(batch, stop)  # verified: gapless
        for (seq, text), leaf in zip(rows, tree.leaf_hashes(batch, stop), strict=False):
            if leaf_hash(text) != leaf:
                return LedgerProblem(seq, "entry", _changed(seq, text, leaf))
    reason = (
        f"the stored entries give root {report.root} for {report.size} entries, but the "
        f"ledger's tree holds {tree.root(report.size)}"
    )
    return LedgerProblem(None, "root", reason)


def _changed(seq: int, text: bytes, held: bytes) -> str:
    return (
        f"entry {seq} as stored now has leaf hash {leaf_hash(text).hex()}, but the ledger's "
        f"tree took it in as {held.hex()}: it was changed after it was stored"
    )
