"""Where a ledger keeps its entries: the small interface every storage backend implements.

A backend stores sealed entries in one gapless order and never changes or drops one. It
assigns ``seq`` and ``prev_hash`` and computes the hash inside ``append``, atomically with
storing, so concurrent appenders (threads here, processes too where the store allows) get
one chain. ``append`` returns only once the entries are durable. The same conformance suite
(``tests/test_ledger_conformance.py``) runs against every backend.

Reads come in two forms: ``read``/``iterate``/``query`` give entries as stored, trusting
them; ``stored_rows``/``stored_checkpoints`` give every row exactly as the store holds it, for
``verify_ledger`` to check without trusting anything.

Beside the entries a backend keeps the hosts' leases (``assay.ledger.lease``): operational
state, never evidence, which ``close_fires`` consults and changes atomically with its append.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from types import TracebackType
from typing import Any, Final, Self

from pydantic import ValidationError

from assay.errors import CheckpointError, LedgerEntryError
from assay.ledger import credentials
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.entry import (
    Entry,
    EntryDraft,
    entry_from_canonical,
    format_timestamp,
    instant_problem,
    kind_problem,
)
from assay.ledger.lease import Closing, Lease

BATCH: Final = 1000
"""How many rows a backend reads per round trip when iterating."""

MAX_SEQ: Final = 2**63 - 1
"""The largest seq a database backend can hold: SQLite's INTEGER and PostgreSQL's bigint are
64-bit. A bound beyond it is read as if at it, which selects the same entries."""

COLUMNS: Final = ("timestamp", "kind", "session", "run", "transition", "prev_hash", "hash")
"""The entry fields a database backend also keeps in columns of their own, beside ``seq``."""

CHECKPOINT_FIELDS: Final = ("size", "root", "timestamp", "key_id", "signature")


QueryFields = tuple[int, str, str, str | None, str | None, str | None]
"""An entry's seq, timestamp, kind, session, run and transition: what a query filters on."""


def query_fields(entry: Entry) -> QueryFields:
    """``entry``'s ``QueryFields``: ``seq`` and the first five ``COLUMNS``, in that order."""
    return (entry.seq, entry.timestamp, entry.kind, entry.session, entry.run, entry.transition)


def entry_row(entry: Entry) -> tuple[object, ...]:
    """What a database backend stores for ``entry``: ``seq``, the ``COLUMNS`` in order, and
    the entry's canonical JSON as text."""
    return (*query_fields(entry), entry.prev_hash, entry.hash, entry.canonical.decode())


@dataclass(frozen=True, slots=True)
class StoredRow:
    """One stored entry exactly as the store holds it, for verification.

    ``seq`` is the row's key, ``entry`` its canonical JSON bytes, ``columns`` the other
    fields it keeps in columns of their own (empty when it keeps only the JSON). A tampered
    store may hold anything in them, so nothing here is trusted.
    """

    seq: int
    entry: bytes
    columns: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    """One stored signed tree head exactly as the store holds it; ``number`` counts from 1."""

    number: int
    fields: Mapping[str, object]

    def checkpoint(self) -> Checkpoint:
        """The checkpoint, validated; ``CheckpointError`` names the malformed field."""
        try:
            return Checkpoint.model_validate(dict(self.fields))
        except ValidationError as error:
            first = error.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else "checkpoint"
            raise CheckpointError(
                f"checkpoint {self.number}: field {field!r} is malformed: {first['msg']}",
                field=field,
            ) from None


def stored_checkpoints_of(rows: Iterable[Sequence[Any]]) -> list[StoredCheckpoint]:
    """Rows of ``(number, *CHECKPOINT_FIELDS)``, as a store reads them, as checkpoints."""
    return [
        StoredCheckpoint(number, dict(zip(CHECKPOINT_FIELDS, fields, strict=True)))
        for number, *fields in rows
    ]


def checkpoint_fields(checkpoint: Checkpoint) -> tuple[object, ...]:
    """A checkpoint's fields in ``CHECKPOINT_FIELDS`` order, for storing in columns."""
    return tuple(getattr(checkpoint, name) for name in CHECKPOINT_FIELDS)


@dataclass(frozen=True, slots=True)
class EntryFilter:
    """Which entries a query wants: every given criterion holds; times as stored text.

    ``since`` is inclusive and ``until`` exclusive; ``after`` skips entries up to that seq,
    for following the tail; ``limit`` keeps the first that many, in seq order.
    """

    session: str | None = None
    transition: str | None = None
    run: str | None = None
    kind: str | None = None
    since: str | None = None
    until: str | None = None
    after: int = 0
    limit: int | None = None

    @classmethod
    def of(
        cls,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
        kind: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> EntryFilter:
        """A filter from the caller's values, checked; times may be aware datetimes or text."""
        problem = None if kind is None else kind_problem(kind)
        if problem is not None:
            raise LedgerEntryError(problem, field="kind")
        if limit is not None and limit < 0:
            raise LedgerEntryError(f"limit must be 0 or more, not {limit}", field="limit")
        return cls(
            session,
            transition,
            run,
            kind,
            _moment(since, "since"),
            _moment(until, "until"),
            after,
            limit,
        )

    def within_64_bits(self) -> EntryFilter | None:
        """This filter with ``after`` and ``limit`` as a database can compare them (see
        ``MAX_SEQ``), selecting the same entries; ``None`` when it can select none."""
        if self.after >= MAX_SEQ or self.limit == 0:
            return None
        limit = None if self.limit is None else min(self.limit, MAX_SEQ)
        return replace(self, after=max(self.after, 0), limit=limit)

    def matches(self, fields: QueryFields) -> bool:
        """True when the entry with these ``fields`` meets every criterion but ``limit``."""
        seq, timestamp, kind, session, run, transition = fields
        return (
            seq > self.after
            and (self.session is None or session == self.session)
            and (self.transition is None or transition == self.transition)
            and (self.run is None or run == self.run)
            and (self.kind is None or kind == self.kind)
            and (self.since is None or timestamp >= self.since)
            and (self.until is None or timestamp < self.until)
        )


hide_password: Final = credentials.hide_password
"""``credentials.hide_password``, here too for those who import it from here."""


def seq_span(start: int, stop: int) -> tuple[int, int] | None:
    """``start <= seq < stop`` as inclusive bounds ``(first, last)`` within ``1..MAX_SEQ``, the
    seqs a store can hold; ``None`` when no such seq lies between them."""
    first, last = max(start, 1), min(stop - 1, MAX_SEQ)
    return (first, last) if first <= last else None


def _moment(value: datetime | str | None, name: str) -> str | None:
    if value is None:
        return None
    moment = _rfc3339(value, name) if isinstance(value, str) else value
    if moment.tzinfo is None:
        raise LedgerEntryError(
            f"{name} must say its time zone (2026-01-01T00:00:00Z or +00:00), not "
            f"{value if isinstance(value, str) else value.isoformat()!r}",
            field=name,
        )
    try:
        return format_timestamp(moment)
    except OverflowError:  # within datetime's years 1 to 9999 locally, but not in UTC
        edge = "before 0001-01-01T00:00:00Z" if moment.year == 1 else "after 9999-12-31T23:59:59Z"
        raise LedgerEntryError(
            f"{name} is {edge} in UTC, beyond the times a ledger can hold; "
            f"give a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, not {str(value)!r}",
            field=name,
        ) from None


_RFC3339: Final = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))?"
)
"""RFC 3339's date-time (section 5.6), the zone left optional to say that it is missing."""


def _rfc3339(text: str, name: str) -> datetime:
    """``text``, an RFC 3339 date-time, as a datetime (naive if it gave no zone); a fraction
    finer than a microsecond is rounded up, which selects the same entries either side."""
    found = _RFC3339.fullmatch(text)
    if found is None:
        raise LedgerEntryError(
            f"{name} must be an RFC 3339 time like 2026-01-01T00:00:00Z, not {text!r}",
            field=name,
        )
    year, month, day, hour, minute, second = (int(part) for part in found.groups()[:6])
    fraction, utc, sign, zone_hours, zone_minutes = found.groups()[6:]
    problem = instant_problem(text[:19])
    if problem is not None:
        raise LedgerEntryError(
            f"{name} {text!r} {problem}; give an RFC 3339 time like 2026-01-01T00:00:00Z",
            field=name,
        )
    zone: tzinfo | None = None
    try:
        if utc is not None:
            zone = UTC
        elif sign is not None:
            if int(zone_hours) > 23 or int(zone_minutes) > 59:
                raise ValueError("the offset must be -23:59 to +23:59")
            offset = timedelta(hours=int(zone_hours), minutes=int(zone_minutes))
            zone = timezone(-offset if sign == "-" else offset)
        fraction = fraction or ""
        micro = int(fraction[:6].ljust(6, "0"))
        moment = datetime(year, month, day, hour, minute, second, micro, tzinfo=zone)
        if fraction[6:].strip("0"):
            moment += timedelta(microseconds=1)
    except (ValueError, OverflowError) as error:
        raise LedgerEntryError(
            f"{name} must be an RFC 3339 time like 2026-01-01T00:00:00Z, not {text!r} ({error})",
            field=name,
        ) from None
    return moment


class LedgerBackend(ABC):
    """Storage for one ledger. Thread-safe; ``close`` releases it (also on ``with`` exit)."""

    appends_wait: bool = True
    """Whether ``append`` waits on a disk or a server (a sync, a round trip). Where it does
    not (memory), an event loop may append itself instead of handing entries to a thread."""

    @property
    @abstractmethod
    def url(self) -> str:
        """Where the ledger lives, as an ``open_ledger`` URL, any password hidden."""

    @abstractmethod
    def append(self, drafts: Sequence[EntryDraft]) -> list[Entry]:
        """Seal and store ``drafts`` consecutively, in order; return them once durable."""

    @abstractmethod
    def read_canonical(self, start: int, stop: int) -> list[tuple[int, bytes]]:
        """``(seq, canonical JSON)`` of the entries with ``start <= seq < stop``, in order,
        as stored: what ``read`` parses, and all a Merkle leaf covers."""

    def read(self, start: int, stop: int) -> list[Entry]:
        """The entries with ``start <= seq < stop``, in order."""
        return [entry_from_canonical(text, seq) for seq, text in self.read_canonical(start, stop)]

    @abstractmethod
    def size(self) -> int:
        """How many entries there are: the seq of the last one, 0 when empty."""

    @abstractmethod
    def select(self, where: EntryFilter) -> list[Entry]:
        """The entries ``where`` matches, in seq order, at most ``where.limit`` of them."""

    @abstractmethod
    def stored_rows(self) -> Iterator[StoredRow]:
        """Every stored entry row as it is, in the store's seq order, trusting nothing."""

    @abstractmethod
    def add_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Store a signed tree head, durably."""

    @abstractmethod
    def stored_checkpoints(self) -> list[StoredCheckpoint]:
        """Every stored checkpoint as it is, in the order they were added."""

    @abstractmethod
    def open_fires(self) -> list[Entry]:
        """The fires left open: for each (session, transition), its latest fire entry when
        no settlement or refusal of the same pair follows it; in seq order. One pass over
        the fires, settlements and refusals, reading the bodies of the open fires only."""

    @abstractmethod
    def take_lease(self, owner: str, duration_s: float, *, now: datetime | None = None) -> Lease:
        """Hold ``owner``'s lease from now until ``duration_s`` later, making it if there is
        none; durable on return. ``now`` stands in for the store's clock (see
        ``assay.ledger.lease``)."""

    @abstractmethod
    def renew_lease(
        self, owner: str, duration_s: float, *, now: datetime | None = None
    ) -> Lease | None:
        """``take_lease`` for a lease ``owner`` still holds, expired or not; ``None``, and
        nothing made, when it holds none: it released it, or another host closed its fires
        and dropped it (``close_fires``)."""

    @abstractmethod
    def release_lease(self, owner: str) -> None:
        """Drop ``owner``'s lease, if it holds one."""

    @abstractmethod
    def leases(self, *, now: datetime | None = None) -> list[Lease]:
        """Every lease held, by owner, each saying whether it is live now."""

    @abstractmethod
    def close_fires(
        self, closings: Sequence[Closing], *, by: str, now: datetime | None = None
    ) -> list[Entry]:
        """Append the settlement of each closing host ``by`` may make (``closeable``: its
        fire still open, its owner's lease expired or gone), in order, as one durable
        commit, and drop the leases of the owners whose fires it closed; answer the entries
        stored. Checked and done under the lock every append takes, so that two hosts
        closing one fire store one settlement, and none for an owner that renewed first."""

    @abstractmethod
    def close(self) -> None:
        """Wait for appends in progress, then release connections; safe to call twice."""

    def add_commit_listener(self, listener: Callable[[list[Entry]], None]) -> None:
        """Ask to be handed every batch of entries this process commits, in order, before
        their appenders are answered; a backend that cannot may ignore it (the default)."""
        del listener

    def iterate(self, start: int = 1) -> Iterator[Entry]:
        """Every entry from ``start`` on, in order, read a batch at a time."""
        while True:
            batch = self.read(start, start + BATCH)
            yield from batch
            if len(batch) < BATCH:
                return
            start += BATCH

    def query(
        self,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
        kind: str | None = None,
        since: datetime | str | None = None,
        until: datetime | str | None = None,
        after: int = 0,
        limit: int | None = None,
    ) -> list[Entry]:
        """The entries matching every criterion given, in seq order (see ``EntryFilter``)."""
        return self.select(
            EntryFilter.of(
                session=session,
                transition=transition,
                run=run,
                kind=kind,
                since=since,
                until=until,
                after=after,
                limit=limit,
            )
        )

    def head(self) -> Entry | None:
        """The last entry, or ``None`` when the ledger is empty."""
        size = self.size()
        if size == 0:
            return None
        entries = self.read(size, size + 1)
        return entries[0] if entries else None

    def checkpoints(self) -> list[Checkpoint]:
        """The stored checkpoints, validated; ``CheckpointError`` if one is malformed."""
        return [stored.checkpoint() for stored in self.stored_checkpoints()]

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
