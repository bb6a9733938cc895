"""An entry's timestamp is a real UTC instant, not only text of the right form: drafts, stored
entries, exports and checkpoints refuse a date off the calendar, an hour past 23, a minute or
second past 59, and a leap second, which assay never writes."""

from __future__ import annotations

import calendar
import hashlib
import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from assay.errors import CheckpointError, LedgerEntryError, LedgerIntegrityError
from assay.ledger import EntryDraft, SigningKey, export_jsonl, verify_jsonl
from assay.ledger.entry import GENESIS_HASH, format_timestamp, parse_entry, seal
from assay.ledger.url import open_ledger

REAL = "a ledger time has a calendar date, hours 00 to 23, and minutes and seconds 00 to 59"
LEAP = "is a leap second, which assay never writes: a ledger time's seconds run 00 to 59"
DRAFT_ADVICE = "; write it as format_timestamp does from an aware datetime"


def _unreal(why: str) -> str:
    return f"is not a real date and time ({why}): {REAL}"


IMPOSSIBLE = [
    ("2026-13-45T25:61:61.000000Z", _unreal("month must be in 1..12")),
    ("2026-00-01T00:00:00.000000Z", _unreal("month must be in 1..12")),
    ("2026-02-29T00:00:00.000000Z", _unreal("day is out of range for month")),
    ("2026-04-31T00:00:00.000000Z", _unreal("day is out of range for month")),
    ("2026-01-00T00:00:00.000000Z", _unreal("day is out of range for month")),
    ("2026-01-01T24:00:00.000000Z", _unreal("hour must be in 0..23")),
    ("2026-01-01T23:60:00.000000Z", _unreal("minute must be in 0..59")),
    ("2026-01-01T23:59:61.000000Z", _unreal("second must be in 0..59")),
    ("0000-01-01T00:00:00.000000Z", _unreal("year 0 is out of range")),
    ("2016-12-31T23:59:60.000000Z", LEAP),
    # A :60 on a day that is not real is that day's fault first.
    ("2026-02-30T23:59:60.000000Z", _unreal("day is out of range for month")),
]


def _resealed(text: str, **changes: Any) -> str:
    """The stored entry ``text`` rewritten whole with ``changes``, its hash made to match."""
    fields = {**json.loads(text), **changes}
    del fields["hash"]
    digest = hashlib.sha256(rfc8785.dumps(fields)).hexdigest()
    return rfc8785.dumps({**fields, "hash": digest}).decode()


@pytest.mark.parametrize(("timestamp", "problem"), IMPOSSIBLE, ids=[at for at, _ in IMPOSSIBLE])
def test_a_draft_whose_timestamp_is_no_real_instant_is_refused_saying_why(
    timestamp: str, problem: str
) -> None:
    """2026-13-45T25:61:61.000000Z matched the form, so it was drafted and stored."""
    with pytest.raises(LedgerEntryError) as caught:
        EntryDraft("fire", timestamp, {})
    assert (caught.value.field, str(caught.value)) == (
        "timestamp",
        f"timestamp {timestamp!r} {problem}{DRAFT_ADVICE}",
    )


@pytest.mark.parametrize(("timestamp", "problem"), IMPOSSIBLE, ids=[at for at, _ in IMPOSSIBLE])
def test_a_stored_entry_whose_timestamp_is_no_real_instant_fails_verification(
    timestamp: str, problem: str
) -> None:
    """parse_entry, which ``assay ledger verify`` runs, took any timestamp of the right form."""
    ledger = open_ledger("memory:")
    for n in range(3):
        ledger.append("fire", {"n": n})
    exported = io.StringIO()
    export_jsonl(ledger.backend, exported)
    lines = exported.getvalue().splitlines()
    # Entry 2 rewritten whole, hash and the next entry's prev_hash made to match.
    lines[1] = _resealed(lines[1], timestamp=timestamp)
    lines[2] = _resealed(lines[2], prev_hash=json.loads(lines[1])["hash"])
    reason = f"timestamp {timestamp!r} {problem}"
    with pytest.raises(LedgerIntegrityError) as caught:
        parse_entry(lines[1].encode(), 2)
    assert (caught.value.seq, caught.value.field, caught.value.reason) == (2, "timestamp", reason)
    assert str(caught.value) == f"entry 2: {reason}"
    report = verify_jsonl(lines)
    assert report.problem is not None
    assert (report.size, report.problem.seq, report.problem.field) == (1, 2, "timestamp")
    assert str(report.problem) == f"entry 2: {reason}"


@pytest.mark.parametrize(("timestamp", "problem"), IMPOSSIBLE, ids=[at for at, _ in IMPOSSIBLE])
def test_a_checkpoint_whose_timestamp_is_no_real_instant_is_refused(
    timestamp: str, problem: str
) -> None:
    with pytest.raises(CheckpointError) as caught:
        SigningKey.generate().sign(1, "ab" * 32, timestamp)
    assert (caught.value.field, str(caught.value)) == (
        "timestamp",
        f"checkpoint field 'timestamp' is malformed: Value error, the time {problem}; "
        f"got {timestamp!r}",
    )


FIELDS = st.tuples(*(st.integers(0, top) for top in (9999, 99, 99, 99, 99, 99)))
"""Year, month, day, hour, minute and second, each any number its digits can hold."""


@given(FIELDS, st.integers(0, 999_999))
def test_a_draft_takes_exactly_the_timestamps_of_real_instants(
    fields: tuple[int, ...], micro: int
) -> None:
    """Judged apart from datetime: calendar's month lengths, 24 hours, 60 minutes and seconds."""
    year, month, day, hour, minute, second = fields
    timestamp = (
        f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}.{micro:06d}Z"
    )
    real = (
        year >= 1
        and 1 <= month <= 12
        and 1 <= day <= calendar.monthrange(year, month)[1]
        and hour <= 23
        and minute <= 59
        and second <= 59
    )
    try:
        EntryDraft("fire", timestamp, {})
    except LedgerEntryError as error:
        assert not real, str(error)
        assert error.field == "timestamp"
    else:
        assert real, f"{timestamp} was drafted"


@given(st.datetimes(timezones=st.just(UTC)))
def test_every_time_format_timestamp_writes_is_drafted_and_verifies(moment: datetime) -> None:
    timestamp = format_timestamp(moment)
    entry = seal(EntryDraft("fire", timestamp, {}), 1, GENESIS_HASH)
    assert parse_entry(entry.canonical, 1).timestamp == timestamp


def test_the_edges_of_the_calendar_and_the_day_are_real() -> None:
    for timestamp in (
        "2028-02-29T00:00:00.000000Z",  # a leap year's 29 February
        "2000-02-29T12:00:00.000000Z",  # divisible by 400
        "2026-12-31T23:59:59.999999Z",
        "0001-01-01T00:00:00.000000Z",
        "9999-12-31T23:59:59.999999Z",
    ):
        entry = seal(EntryDraft("fire", timestamp, {}), 1, GENESIS_HASH)
        assert parse_entry(entry.canonical, 1).timestamp == timestamp
        assert SigningKey.generate().sign(1, "ab" * 32, timestamp).timestamp == timestamp
    with pytest.raises(LedgerEntryError, match="day is out of range for month"):
        EntryDraft("fire", "1900-02-29T00:00:00.000000Z", {})  # divisible by 100, not 400
