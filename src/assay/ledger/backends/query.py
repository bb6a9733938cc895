"""Which entries a query wants (``EntryFilter``), and the seqs and times a store can hold."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Final

from assay.errors import LedgerEntryError
from assay.ledger.entry import Entry, format_timestamp, instant_problem, kind_problem

MAX_SEQ: Final = 2**63 - 1
"""The largest seq a database backend can hold: SQLite's INTEGER and PostgreSQL's bigint are
64-bit. A bound beyond it is read as if at it, which selects the same entries."""


QueryFields = tuple[int, str, str, str | None, str | None, str | None]
"""An entry's seq, timestamp, kind, session, run and transition: what a query filters on."""


def query_fields(entry: Entry) -> QueryFields:
    """``entry``'s ``QueryFields``: ``seq`` and the first five ``COLUMNS``, in that order."""
    return (entry.seq, entry.timestamp, entry.kind, entry.session, entry.run, entry.transition)


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
