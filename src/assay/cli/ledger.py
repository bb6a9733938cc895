"""``assay ledger verify | export | query | show | tail | prove``: read and check the Evidence
Ledger.

Exit 1 when the ledger fails its checks: ``verify`` finds a problem, ``checkpoint`` finds one
(and signs nothing), or an entry another command reads cannot be read as the entry at its
place (missing, not JSON, not an entry's fields and types, its seq not its place). Exit 2 on a
usage error, or a ledger that cannot be opened.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import shlex
import sys
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.cli.arguments import whole_number
from assay.cli.ledger_location import memory_refusal, sqlite_path_problem
from assay.cli.progress import TerminalProgress
from assay.defaults import DEFAULT_LEDGER_URL as DEFAULT_URL
from assay.errors import (
    AssayError,
    LedgerError,
    LedgerIntegrityError,
    ProofError,
    SigningKeyError,
)
from assay.output import answer

if TYPE_CHECKING:  # the ledger (and cryptography) load only when a command runs
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from assay.ledger import Ledger
    from assay.ledger.entry import Entry
    from assay.ledger.proof import TreeHead
    from assay.ledger.verification import LedgerReport

LEDGER_ENV = "ASSAY_LEDGER"


def add_ledger_option(parser: argparse.ArgumentParser) -> None:
    """``--ledger URL``, shared by every command that reads or writes evidence."""
    parser.add_argument(
        "--ledger",
        metavar="URL",
        default=os.environ.get(LEDGER_ENV, DEFAULT_URL),
        help=f"sqlite:///path.db, postgresql://..., or memory: (default ${LEDGER_ENV} or "
        f"{DEFAULT_URL})",
    )


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "ledger",
        help="verify, export, query, show, follow and prove the Evidence Ledger",
        description="Read and check the Evidence Ledger. Exit 0 on success, 1 when the "
        "ledger fails its checks (verify finds a problem, or an entry read cannot be read; "
        "the first bad entry named), 2 on a usage error.",
    )
    actions = parser.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    verify = actions.add_parser("verify", help="re-check the chain, the tree and checkpoints")
    add_ledger_option(verify)
    verify.add_argument(
        "--public-key",
        metavar="FILE",
        action="append",
        help="a PEM public key checkpoints are signed with; give it once for each key, and "
        "each checkpoint is checked against the key its key id names",
    )
    verify.add_argument(
        "--export", metavar="FILE", help="verify a JSONL export instead ('-' for stdin)"
    )
    verify.add_argument(
        "--trusted-head",
        metavar="SIZE:ROOT",
        help="a tree head noted earlier (GET /v1/ledger/head, an earlier verify): the entries "
        "must extend it, which a ledger that lost its last entries does not",
    )
    verify.set_defaults(run=run_verify)
    export = actions.add_parser("export", help="write every entry as JSONL to stdout")
    add_ledger_option(export)
    export.set_defaults(run=run_export)
    show = actions.add_parser("show", help="print one entry as JSON")
    add_ledger_option(show)
    show.add_argument("seq", type=int, metavar="SEQ")
    show.set_defaults(run=run_show)
    query = actions.add_parser(
        "query",
        help="print the entries that match every filter given, one JSON line each",
        description="Entries in seq order matching every filter given. Times are RFC 3339 "
        "with a zone (2026-01-01T00:00:00Z); --since is inclusive, --until exclusive.",
    )
    add_ledger_option(query)
    for name in ("session", "transition", "run"):
        # dest "run" is the command's handler (set_defaults), so ids take a dest of their own
        query.add_argument(
            f"--{name}", dest=f"{name}_id", metavar="ID", help=f"only this {name}'s entries"
        )
    query.add_argument(
        "--kind",
        metavar="KIND",
        help="fire, refusal, settlement, verdict, commit, escalation, park or resume "
        "(checkpoints are no entries: export lists them)",
    )
    query.add_argument("--since", metavar="TIME", help="only entries at or after TIME")
    query.add_argument("--until", metavar="TIME", help="only entries before TIME")
    query.add_argument(
        "--after",
        type=_seq_after,
        default=0,
        metavar="SEQ",
        help="only entries after entry SEQ (default 0: from the first)",
    )
    query.add_argument(
        "--limit", type=whole_number("entries"), metavar="N", help="at most N entries"
    )
    query.set_defaults(run=run_query)
    tail = actions.add_parser("tail", help="print the last entries; -f to follow")
    add_ledger_option(tail)
    tail.add_argument(
        "-n", type=whole_number("entries"), default=10, metavar="N", help="how many (default 10)"
    )
    tail.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="keep printing new entries until interrupted (exit 0)",
    )
    tail.add_argument(
        "--interval-ms",
        type=whole_number("milliseconds", at_least=1),
        default=500,
        help="how often to look (follow; default 500)",
    )
    tail.set_defaults(run=run_tail)
    checkpoint = actions.add_parser(
        "checkpoint", help="sign the current tree head with an Ed25519 key and store it"
    )
    add_ledger_option(checkpoint)
    checkpoint.add_argument(
        "--signing-key", metavar="FILE", required=True, help="PEM Ed25519 private key"
    )
    checkpoint.set_defaults(run=run_checkpoint)
    keygen = actions.add_parser(
        "keygen",
        help="make an Ed25519 key pair for checkpoint: FILE (private) and FILE.pub",
        description="Write a new Ed25519 private key to FILE (PEM, readable by its owner "
        "only) for `checkpoint --signing-key FILE`, and its public key to FILE.pub for "
        "`verify --public-key FILE.pub`. An existing file is never overwritten: a lost key "
        "can sign no more checkpoints.",
    )
    keygen.add_argument("file", metavar="FILE", help="where the private key goes")
    keygen.set_defaults(run=run_keygen)
    prove = actions.add_parser("prove", help="print an inclusion proof for one entry")
    add_ledger_option(prove)
    prove.add_argument("seq", type=int, metavar="SEQ")
    prove.set_defaults(run=run_prove)


def _seq_after(text: str) -> int:
    """An argparse ``type`` for ``--after``: a seq, or 0 for before the first entry."""
    try:
        seq = int(text)
    except ValueError:
        seq = -1
    if seq < 0:
        raise argparse.ArgumentTypeError(
            f"expected an entry's seq, or 0 to start from the first entry; got {text!r}"
        )
    return seq


def _open(args: argparse.Namespace) -> Ledger:
    """The ledger ``--ledger`` names, which must exist: these commands never create one, and
    a memory ledger, empty outside the process that wrote it, is refused."""
    from assay.ledger import open_ledger
    from assay.ledger.backends.memory import MemoryBackend

    problem = sqlite_path_problem(args.ledger)
    if problem is not None:
        raise LedgerError(f"there is no ledger at {args.ledger}: {problem}", url=args.ledger)
    ledger = open_ledger(args.ledger, create=False)
    if isinstance(ledger.backend, MemoryBackend):
        ledger.close()
        raise LedgerError(memory_refusal(f"assay ledger {args.ledger_command}"), url="memory:")
    return ledger


def _fail(message: str) -> int:
    print(f"assay ledger: error: {message}", file=sys.stderr)
    return 2


def _failed(error: AssayError, args: argparse.Namespace) -> int:
    """Exit 1 for a ledger that fails its checks, naming the entry and the command that finds
    everything wrong; exit 2 for any other error."""
    if not isinstance(error, LedgerIntegrityError):
        return _fail(str(error))
    subject = "an entry" if error.seq is None else f"entry {error.seq}"
    reason = "it is missing" if error.reason == "missing" else error.reason
    said = reason if reason.startswith(f"{subject} ") else f"{subject}: {reason}"
    from assay.ledger.credentials import hide_password

    command = f"assay ledger verify --ledger {shlex.quote(hide_password(args.ledger))}"
    print(
        f"assay ledger {args.ledger_command}: FAILED: {said}; the ledger fails its "
        f"checks (`{command}` finds everything that is wrong)",
        file=sys.stderr,
    )
    return 1


def _count(number: int, one: str, many: str | None = None) -> str:
    return f"{number} {one if number == 1 else many or f'{one}s'}"


def _too_deep(seq: int | None) -> LedgerIntegrityError:
    from assay.ledger.verification import TOO_DEEP

    return LedgerIntegrityError(TOO_DEEP, seq=seq, reason=TOO_DEEP, field="entry")


def _entry_json(entry: Entry) -> str:
    return entry.canonical.decode()


def run_verify(args: argparse.Namespace) -> int:
    from assay.ledger import verify_jsonl, verify_ledger
    from assay.ledger.proof import TreeHead

    keys: list[Ed25519PublicKey] = []
    trusted = None
    if args.trusted_head is not None:
        try:
            trusted = TreeHead.parse(args.trusted_head)
        except ProofError as error:
            return _fail(f"--trusted-head: {error}")
    for path in args.public_key or ():
        key = _public_key(path)
        if isinstance(key, str):
            return _fail(key)
        keys.append(key)
    try:
        if args.export == "-":
            lines = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
            with closing(TerminalProgress("verified", None)) as progress:
                report = verify_jsonl(
                    lines, keys, source="stdin", trusted=trusted, progress=progress
                )
        elif args.export is not None:
            with (
                open(args.export, encoding="utf-8", errors="surrogateescape") as handle,
                closing(TerminalProgress("verified", None)) as progress,
            ):
                report = verify_jsonl(
                    handle, keys, source=args.export, trusted=trusted, progress=progress
                )
        else:
            with (
                _open(args) as ledger,
                closing(TerminalProgress("verified", ledger.backend.size())) as progress,
            ):
                report = verify_ledger(ledger.backend, keys, trusted=trusted, progress=progress)
    except OSError as error:
        return _fail(f"cannot read {args.export!r}: {error.strerror}")
    except AssayError as error:
        return _fail(str(error))
    return answer(0 if report.ok else 1, *verify_answer(report, trusted))


def verify_answer(report: LedgerReport, trusted: TreeHead | None = None) -> list[str]:
    """What ``assay ledger verify`` prints for ``report`` (checked against the ``trusted``
    head, if one was given); the demo prints the same."""
    if report.problem is not None:
        return [
            f"FAILED {report.source}: {report.problem}",
            f"  {report.size} entries verified before it",
        ]
    if report.size == 0 and trusted is None:
        # Every prefix of a ledger verifies, the empty one too: say there was nothing to check.
        return [
            f"OK {report.source}: no entries to check: it holds no entries, so nothing was "
            f"verified (head 0:{report.root}); {_count(report.checkpoints, 'checkpoint')} "
            "checked; give --trusted-head SIZE:ROOT to require the entries a head covers"
        ]
    extends = f"; it extends the trusted head {trusted}" if trusted is not None else ""
    return [
        f"OK {report.source}: {_count(report.size, 'entry', 'entries')}, chain and Merkle tree "
        f"verified (head {report.size}:{report.root}); "
        f"{_count(report.checkpoints, 'checkpoint')}, "
        f"{_count(report.signatures, 'signature')} checked{extends}"
    ]


def run_export(args: argparse.Namespace) -> int:
    try:
        with (
            _open(args) as ledger,
            closing(TerminalProgress("exported", ledger.backend.size())) as progress,
        ):
            from assay.ledger import export_jsonl

            count = export_jsonl(ledger.backend, sys.stdout, progress=progress)
    except LedgerIntegrityError as error:
        sys.stdout.flush()
        code = _failed(error, args)
        if error.seq is not None:
            print(
                f"assay ledger export: the output is incomplete: it holds only the "
                f"{_count(error.seq - 1, 'entry', 'entries')} before entry {error.seq}",
                file=sys.stderr,
            )
        return code
    except AssayError as error:
        return _failed(error, args)
    sys.stdout.flush()  # the entries are out before the count says so
    print(f"exported {_count(count, 'entry', 'entries')}", file=sys.stderr)
    return 0


def run_query(args: argparse.Namespace) -> int:
    from assay.ledger.entry import DRAFTED_KINDS, EntryKind
    from assay.ledger.verification import checked_entry

    if args.kind == EntryKind.CHECKPOINT:
        kinds = sorted(DRAFTED_KINDS)
        return _fail(
            "--kind: checkpoints are not entries, so no entry has kind checkpoint; "
            '`assay ledger export` lists the checkpoints (its {"checkpoint": ...} lines, '
            "after the entries) and `assay ledger verify` checks them. --kind takes "
            f"{', '.join(kinds[:-1])} or {kinds[-1]}"
        )
    try:
        with _open(args) as ledger:
            found = ledger.query(
                session=args.session_id,
                transition=args.transition_id,
                run=args.run_id,
                kind=args.kind,
                since=args.since,
                until=args.until,
                after=args.after,
                limit=args.limit,
            )
            for entry in found:
                checked_entry(entry, None)
    except RecursionError:
        return _failed(_too_deep(None), args)
    except AssayError as error:
        flag = getattr(error, "field", None)
        if flag in ("since", "until", "kind") and not isinstance(error, LedgerIntegrityError):
            return _fail(f"--{flag}: {error}")  # name the flag given, as the CLI spells it
        return _failed(error, args)
    for entry in found:
        print(_entry_json(entry))
    sys.stdout.flush()  # the entries are out before the count says so
    print(_count(len(found), "entry", "entries"), file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    from assay.ledger.verification import read_entries

    try:
        with _open(args) as ledger:
            entry = next(read_entries(ledger.backend, args.seq, args.seq + 1), None)
            size, url = ledger.backend.size(), ledger.url
    except AssayError as error:
        return _failed(error, args)
    if entry is None and 1 <= args.seq <= size:
        # size is the last entry's seq: one below it was stored, and is gone.
        missing = f"entry {args.seq} is missing from {url}"
        gone = LedgerIntegrityError(missing, seq=args.seq, reason="missing", field="seq")
        return _failed(gone, args)
    if entry is None:
        held = f"entries 1 to {size}" if size > 1 else "entry 1" if size else "no entries"
        return _fail(f"there is no entry {args.seq}; the ledger {url} holds {held}")
    print(json.dumps(json.loads(_entry_json(entry)), indent=2, ensure_ascii=False))
    return 0


def run_tail(args: argparse.Namespace) -> int:
    import asyncio

    try:
        with _open(args) as ledger:
            size = ledger.backend.size()
            start = _print_from(ledger, max(1, size - args.n + 1))
            if args.follow:
                asyncio.run(_follow(ledger, start, args.interval_ms / 1000))
    except AssayError as error:
        return _failed(error, args)
    except KeyboardInterrupt:
        return 0
    return 0


def _print_from(ledger: Ledger, start: int) -> int:
    """Print every entry from ``start`` on; the seq after the last one printed."""
    from assay.ledger.verification import read_entries

    for entry in read_entries(ledger.backend, start):
        print(_entry_json(entry), flush=True)
        start += 1
    return start


async def _follow(ledger: Ledger, start: int, interval: float) -> None:
    from assay.clock import SYSTEM_CLOCK

    while True:
        await SYSTEM_CLOCK.sleep(interval)
        start = _print_from(ledger, start)


def run_prove(args: argparse.Namespace) -> int:
    from assay.ledger.verification import read_entries

    try:
        with _open(args) as ledger:
            # A proof that an entry nobody can read is included would vouch for nothing.
            for _entry in read_entries(ledger.backend, args.seq, args.seq + 1):
                pass
            proof = ledger.prove(args.seq)
    except AssayError as error:
        return _failed(error, args)
    print(json.dumps(dataclasses.asdict(proof), indent=2))
    return 0


def run_keygen(args: argparse.Namespace) -> int:
    from assay.ledger import SigningKey

    private, public = Path(args.file), Path(f"{args.file}.pub")
    for path in (private, public):
        if path.exists() or path.is_symlink():
            return _fail(f"{path} exists; keygen never overwrites a key, so name a new file")
    key = SigningKey.generate()
    try:
        key.save(private)
    except OSError as error:
        return _fail(f"cannot write the private key {str(private)!r}: {error.strerror}")
    try:
        with public.open("x", encoding="ascii") as file:
            file.write(key.public_key_pem())
    except OSError as error:
        private.unlink()  # nothing half-made: without its public half, the key is unusable
        return _fail(f"cannot write the public key {str(public)!r}: {error.strerror}")
    print(f"key {key.key_id}: private key in {private} (keep it secret), public key in {public}")
    print(f"sign:   assay ledger checkpoint --signing-key {shlex.quote(str(private))}")
    print(f"verify: assay ledger verify --public-key {shlex.quote(str(public))}")
    return 0


def _public_key(path: str) -> Ed25519PublicKey | str:
    """The public key in the file at ``path``, or what is wrong with it, naming the file."""
    from assay.ledger.checkpoint import load_public_key

    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return f"cannot read the public key {path!r}: {error.strerror}"
    try:
        return load_public_key(data, source=path)
    except SigningKeyError as error:
        if b"PRIVATE KEY-----" in data:
            return (
                f"{path} holds a private key; --public-key takes its public key, which "
                f"`assay ledger keygen` writes beside it as {path}.pub"
            )
        return str(error)


def run_checkpoint(args: argparse.Namespace) -> int:
    from assay.ledger import SigningKey

    path = args.signing_key
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return _fail(f"cannot read the signing key {path!r}: {error.strerror}")
    try:
        key = SigningKey.from_pem(data, source=path)
    except SigningKeyError as error:
        if b"ENCRYPTED" not in data:
            return _fail(str(error))
        return _fail(
            f"{path} is an encrypted private key, and checkpoint takes an unencrypted one (as "
            "assay ledger keygen writes it); decrypt a copy that only you can read "
            f"(umask 077; openssl pkey -in {shlex.quote(path)} -out PLAIN.pem) and give that, "
            "or make a new key with assay ledger keygen FILE"
        )
    try:
        with _open(args) as ledger:
            checkpoint = ledger.checkpoint(key)
    except LedgerIntegrityError as error:
        code = _failed(error, args)
        print("assay ledger checkpoint: nothing was signed", file=sys.stderr)
        return code
    except AssayError as error:
        return _fail(str(error))
    print(checkpoint.model_dump_json(indent=2))
    return 0
