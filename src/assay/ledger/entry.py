"""Ledger entries: the draft a caller hands in, and the sealed, hash-linked entry it becomes.

An entry's ``hash`` is the SHA-256 of the RFC 8785 canonical JSON of every other field; its
``canonical`` form is that JSON with the hash included, and its Merkle leaf is the leaf hash
of that. ``parse_entry`` is the strict reverse: it accepts only text that is exactly the
canonical form of a well-formed entry whose hash recomputes, and says what was wrong if not.
"""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from assay.clock import Clock, SystemClock
from assay.errors import LedgerEntryError, LedgerIntegrityError
from assay.json.path import json_type_name
from assay.ledger import compiled
from assay.ledger.canonical import canonical_copy, canonical_json, loads
from assay.ledger.merkle import leaf_hash


class EntryKind(StrEnum):
    """What an entry records (SPEC §7). ``checkpoint`` names signed tree heads, which are
    stored apart from the entries (``Ledger.checkpoint``): no entry is drafted with it."""

    FIRE = "fire"
    REFUSAL = "refusal"
    SETTLEMENT = "settlement"
    VERDICT = "verdict"
    COMMIT = "commit"
    ESCALATION = "escalation"
    PARK = "park"
    RESUME = "resume"
    CHECKPOINT = "checkpoint"


KINDS: Final = frozenset(kind.value for kind in EntryKind)
DRAFTED_KINDS: Final = KINDS - {EntryKind.CHECKPOINT.value}
"""The kinds an entry may be appended with."""

GENESIS_HASH: Final = "0" * 64
"""The ``prev_hash`` of entry 1."""

FIELDS: Final = (
    "seq",
    "timestamp",
    "kind",
    "session",
    "run",
    "transition",
    "body",
    "prev_hash",
    "hash",
)
"""An entry's fields, in the order they are shown and stored."""

_IDS: Final = ("session", "run", "transition")
_HEX: Final = re.compile(r"[0-9a-f]{64}")
# ASCII digits only: ``\d`` would also take other scripts' digits (２０２６, ٢٠٢٦).
_TIMESTAMP: Final = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
# In canonical JSON ``,"`` never occurs inside a string (the quote would be escaped), and the
# fields after ``body`` are all scalars, so the last match of this is the top-level member.
_HASH_MEMBER: Final = b',"hash":"'


def stamp(clock: Clock) -> str:
    """``format_timestamp(clock.wall())``; on the system clock, read as integer nanoseconds
    and formatted from the current second's cached text, about a quarter of the cost."""
    if type(clock) is not SystemClock:
        return format_timestamp(clock.wall())
    # Floored to the microsecond, as datetime.now is.
    second, fraction = divmod(time.time_ns() // 1000, 1_000_000)
    cached = _last_second[0]
    if cached[0] != second:
        cached = (second, datetime.fromtimestamp(second, UTC).isoformat()[:-6])  # no "+00:00"
        _last_second[0] = cached  # one tuple, replaced whole: safe across threads
    return f"{cached[1]}.{fraction:06d}Z"


_last_second: Final[list[tuple[int, str]]] = [(-1, "")]
"""The last second ``stamp`` formatted, as Unix seconds and text up to the fraction."""


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with microseconds, fixed width, so text order is time order."""
    if moment.tzinfo is None:
        raise LedgerEntryError(
            f"timestamp must be timezone-aware, not the naive {moment.isoformat()}; "
            "pass an aware datetime (the clock's wall() is one)",
            field="timestamp",
        )
    # isoformat is strftime("%Y-%m-%dT%H:%M:%S.%f") in C, a few times faster.
    if moment.tzinfo is UTC:
        return moment.isoformat(timespec="microseconds")[:-6] + "Z"  # drop its "+00:00"
    return moment.astimezone(UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def instant_problem(text: str) -> str | None:
    """Why ``text``, RFC 3339 whose form is checked (``YYYY-MM-DDTHH:MM:SS`` first), names no
    real instant, worded to follow it; ``None`` when it names one. Every draft runs it, so the
    check is ``datetime.fromisoformat``, in C: about half what matching the form costs."""
    try:
        datetime.fromisoformat(text)
    except ValueError as error:
        reason = str(error)
    else:
        return None
    if text[17:19] == "60" and instant_problem(f"{text[:17]}59{text[19:]}") is None:
        return "is a leap second, which assay never writes: a ledger time's seconds run 00 to 59"
    return (
        f"is not a real date and time ({reason}): a ledger time has a calendar date, hours "
        "00 to 23, and minutes and seconds 00 to 59"
    )


@dataclass(frozen=True, slots=True)
class EntryDraft:
    """An entry before the ledger gives it a place: everything but ``seq`` and the hashes.

    Validated on construction; ``body`` is replaced by a plain copy of its canonical JSON, so
    the draft never aliases the caller's value.
    """

    kind: str
    timestamp: str
    body: Any
    session: str | None = None
    run: str | None = None
    transition: str | None = None
    _head: bytes = field(init=False, repr=False, compare=False)
    _run: bytes = field(init=False, repr=False, compare=False)
    _rest: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kind = self.kind
        problem = kind_problem(kind)
        if problem is not None:
            raise LedgerEntryError(problem, field="kind")
        if type(kind) is not str:
            object.__setattr__(self, "kind", EntryKind(kind).value)  # a plain str
        timestamp = self.timestamp
        if type(timestamp) is not str or not _TIMESTAMP.fullmatch(timestamp):
            raise LedgerEntryError(
                "timestamp must be RFC 3339 UTC text like 2026-01-01T00:00:00.000000Z "
                f"(see format_timestamp), not {timestamp!r}",
                field="timestamp",
            )
        problem = instant_problem(timestamp)
        if problem is not None:
            raise LedgerEntryError(
                f"timestamp {timestamp!r} {problem}; write it as format_timestamp does from "
                "an aware datetime",
                field="timestamp",
            )
        session = _id_json("session", self.session)
        run = _id_json("run", self.run)
        transition = _id_json("transition", self.transition)
        try:
            body_json, body = canonical_copy(self.body)
        except (ValueError, TypeError, RecursionError) as exc:
            reason = "it nests too deeply" if isinstance(exc, RecursionError) else str(exc)
            raise LedgerEntryError(
                f"body cannot be written as RFC 8785 JSON: {reason}; use JSON values only "
                "(objects with string keys, arrays, strings, finite numbers, integers within "
                "±(2**53 - 1), booleans, null)",
                field="body",
            ) from None
        object.__setattr__(self, "body", body)
        # Pieces of the canonical JSON of the sealed entry, in RFC 8785 key order (body, hash,
        # kind, prev_hash, run, seq, session, timestamp, transition), so ``seal`` need not
        # encode the body again.
        object.__setattr__(self, "_head", b'{"body":' + body_json)
        object.__setattr__(self, "_run", run)
        object.__setattr__(
            self,
            "_rest",
            b',"session":%s,"timestamp":"%s","transition":%s}'
            % (session, timestamp.encode(), transition),
        )


def draft_now(
    clock: Clock,
    kind: str,
    body: Any,
    *,
    session: str | None = None,
    run: str | None = None,
    transition: str | None = None,
) -> EntryDraft:
    """``EntryDraft(kind, stamp(clock), body, session, run, transition)``.

    Plain fields (a drafted kind, ids that are ``str`` or ``None``, a plain JSON body) are
    made into the draft in C (``_canonical.stamped_draft``), a third of what the dataclass
    costs; anything else, or everything where the C module was not built, goes to
    ``EntryDraft``, which checks it and words what is wrong.
    """
    timestamp = stamp(clock)
    if type(kind) is str and kind in DRAFTED_KINDS:
        draft: EntryDraft | None = compiled.stamped_draft(
            EntryDraft, kind, timestamp, body, session, run, transition
        )
        if draft is not None:
            return draft
    return EntryDraft(kind, timestamp, body, session, run, transition)


def kind_problem(kind: object) -> str | None:
    """What is wrong with ``kind`` as an entry's kind (to append or to look for), if anything."""
    if isinstance(kind, str) and kind in DRAFTED_KINDS:
        return None
    kinds = ", ".join(sorted(DRAFTED_KINDS))
    if kind == EntryKind.CHECKPOINT:
        return (
            "kind 'checkpoint' is no entry's: a checkpoint is a signed tree head, made by "
            "Ledger.checkpoint (assay ledger checkpoint) and stored apart from the entries; "
            f"an entry's kind is one of {kinds}"
        )
    return f"kind must be one of {kinds}, not {kind!r}"


def _id_json(name: str, value: object) -> bytes:
    """The canonical JSON of an id field: a string or null; ``LedgerEntryError`` if not."""
    if value is None:
        return b"null"
    if not isinstance(value, str):
        raise LedgerEntryError(
            f"{name} must be a string or None, not {type(value).__name__}", field=name
        )
    try:
        return canonical_json(value)
    except ValueError:
        raise LedgerEntryError(
            f"{name} {value!r} is not valid Unicode text (it holds a lone surrogate)",
            field=name,
        ) from None


@dataclass(frozen=True, slots=True)
class Entry:
    """One sealed entry: its place ``seq``, its fields and the hash linking it to the last."""

    seq: int
    timestamp: str
    kind: str
    session: str | None
    run: str | None
    transition: str | None
    body: Any
    prev_hash: str
    hash: str
    canonical: bytes = field(repr=False, compare=False)
    """The RFC 8785 JSON of the whole entry, hash included: what the Merkle leaf covers."""
    _leaf: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def leaf_hash(self) -> bytes:
        """This entry's Merkle leaf hash (computed once)."""
        leaf = self._leaf
        if leaf is None:
            leaf = leaf_hash(self.canonical)
            object.__setattr__(self, "_leaf", leaf)
        return leaf

    def to_dict(self) -> dict[str, Any]:
        """The entry as a JSON object (the ``canonical`` bytes are its RFC 8785 form)."""
        return {name: getattr(self, name) for name in FIELDS}


def seal(draft: EntryDraft, seq: int, prev_hash: str) -> Entry:
    """Give ``draft`` its place after the entry whose hash is ``prev_hash``."""
    (entry,) = seal_all([draft], seq - 1, prev_hash)
    return entry


def seal_all(drafts: list[EntryDraft], head_seq: int, head_hash: str) -> list[Entry]:
    """Seal ``drafts`` in order after the head ``(head_seq, head_hash)``.

    The hash is the SHA-256 of the entry's canonical JSON without its ``hash`` member, built
    from the draft's pieces: ``_head`` (``{"body":...``), then ``,"kind":"K","prev_hash":"P",
    "run":R,"seq":N`` and ``_rest``; the canonical form puts ``,"hash":"H"`` after ``_head``.
    Done in C (``_seal``, or its twin ``_pyseal`` where it was not built), which also
    computes each Merkle leaf hash; ``parse_entry`` recomputes both with hashlib.
    """
    return compiled.seal_all(Entry, list(drafts), head_seq, head_hash)


VERIFY_THE_LEDGER: Final = (
    "verify the ledger (assay ledger verify, or verify_ledger) to find what else is wrong"
)
"""What a message about a ledger that fails its checks says to do, from a shell or Python."""


def entry_from_canonical(text: bytes, seq: int) -> Entry:
    """The entry stored at ``seq`` as ``text``, trusted as stored (``parse_entry`` checks it).

    Raise ``LedgerIntegrityError`` only when the text cannot be read as an entry at all, or
    its seq is not ``seq``, the place it was read from (it would be taken for another entry).
    """
    field = "entry"
    try:
        data = loads(text)
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        reason = f"the stored entry is not JSON ({exc})"
    else:
        if not isinstance(data, dict):
            reason = f"the stored entry is {json_type_name(data)}, not an object of fields"
        else:
            try:
                entry = _entry(data, text)
            except KeyError as exc:
                reason = f"the stored entry has no {exc.args[0]!r} field"
            else:
                said = entry.seq
                if type(said) is int and said == seq:
                    return entry
                field = "seq"
                if type(said) is not int or said < 1:  # worded as parse_entry words it
                    reason = f"seq is {said!r}, not a positive integer"
                else:
                    reason = f"stored as entry {seq} but says seq {said}"
    raise LedgerIntegrityError(
        f"entry {seq}: {reason}; {VERIFY_THE_LEDGER}",
        seq=seq,
        reason=reason,
        field=field,
    )


def parse_entry(text: bytes, seq: int) -> Entry:
    """The entry stored as ``text`` at position ``seq``, checked to the last byte.

    Raise ``LedgerIntegrityError`` naming ``seq`` and the field at fault when the text is not
    JSON, not canonical, not shaped like an entry, or its hash does not recompute.
    """

    def fault(reason: str, field: str | None = None) -> LedgerIntegrityError:
        return LedgerIntegrityError(f"entry {seq}: {reason}", seq=seq, reason=reason, field=field)

    try:
        data = loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise fault(f"the stored entry is not JSON ({exc})", "entry") from None
    if not isinstance(data, dict) or set(data) != set(FIELDS):
        shown = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise fault(f"the stored entry has fields {shown}, not {sorted(FIELDS)}", "entry")
    try:
        recanonical = canonical_json(data)
    except ValueError as exc:
        reason = f"the stored entry holds a value RFC 8785 cannot carry ({exc})"
        raise fault(reason, "entry") from None
    if recanonical != text:
        raise fault("the stored entry is not in RFC 8785 canonical form", "entry")
    problem = _field_problem(data)
    if problem is not None:
        raise fault(problem[1], problem[0])
    at = text.rindex(_HASH_MEMBER)
    hashless = text[:at] + text[at + len(_HASH_MEMBER) + 65 :]
    recomputed = hashlib.sha256(hashless).hexdigest()
    if recomputed != data["hash"]:
        raise fault(
            f"hash {data['hash']} does not match its fields, which hash to {recomputed}", "hash"
        )
    return _entry(data, text)


def _field_problem(data: dict[str, Any]) -> tuple[str, str] | None:
    seq = data["seq"]
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        return "seq", f"seq is {seq!r}, not a positive integer"
    timestamp = data["timestamp"]
    if not isinstance(timestamp, str) or not _TIMESTAMP.fullmatch(timestamp):
        return "timestamp", f"timestamp {timestamp!r} is not RFC 3339 UTC with microseconds"
    problem = instant_problem(timestamp)
    if problem is not None:
        return "timestamp", f"timestamp {timestamp!r} {problem}"
    if not isinstance(data["kind"], str) or data["kind"] not in KINDS:
        return "kind", f"kind {data['kind']!r} is not one of {', '.join(sorted(KINDS))}"
    for name in _IDS:
        if data[name] is not None and not isinstance(data[name], str):
            return name, f"{name} is {data[name]!r}, not a string or null"
    for name in ("prev_hash", "hash"):
        value = data[name]
        if not isinstance(value, str) or not _HEX.fullmatch(value):
            return name, f"{name} {value!r} is not 64 lowercase hex digits"
    return None


def _entry(data: dict[str, Any], text: bytes) -> Entry:
    return Entry(
        seq=data["seq"],
        timestamp=data["timestamp"],
        kind=data["kind"],
        session=data["session"],
        run=data["run"],
        transition=data["transition"],
        body=data["body"],
        prev_hash=data["prev_hash"],
        hash=data["hash"],
        canonical=bytes(text),
    )
