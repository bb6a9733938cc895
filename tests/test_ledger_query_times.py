"""``since`` and ``until`` are RFC 3339 date-times, exactly: the Python API, and the CLI's flags."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from assay.cli.main import main
from assay.errors import LedgerEntryError
from assay.ledger import Ledger
from assay.ledger.backends.memory import MemoryBackend
from assay.ledger.url import open_ledger
from ledger_stores import draft

EARLIEST = "0001-01-01T00:00:00+01:00"
LATEST = "9999-12-31T23:59:59-01:00"
BEYOND = (
    "{name} is {edge} in UTC, beyond the times a ledger can hold; give a time from "
    "0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z, not {value!r}"
)
NOT_RFC_3339 = "{name} must be an RFC 3339 time like 2026-01-01T00:00:00Z, not {value!r}"


@pytest.fixture
def ledger() -> Ledger:
    ledger = Ledger(MemoryBackend())
    for second in range(6):
        ledger.backend.append([draft("fire", second=second)])
    return ledger


def _seqs(ledger: Ledger, **criteria: object) -> list[int]:
    return [entry.seq for entry in ledger.query(**criteria)]  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize(
    ("value", "edge"),
    [(EARLIEST, "before 0001-01-01T00:00:00Z"), (LATEST, "after 9999-12-31T23:59:59Z")],
)
def test_a_time_beyond_the_utc_range_is_a_ledger_entry_error_naming_it(
    ledger: Ledger, name: str, value: str, edge: str
) -> None:
    with pytest.raises(LedgerEntryError) as caught:
        ledger.query(**{name: value})  # type: ignore[arg-type]
    assert str(caught.value) == BEYOND.format(name=name, edge=edge, value=value)
    assert caught.value.field == name
    moment = datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    with pytest.raises(LedgerEntryError) as caught:
        ledger.query(**{name: moment})  # type: ignore[arg-type]
    assert caught.value.field == name


def test_rfc_3339_is_read_whatever_the_case_of_its_separators(ledger: Ledger) -> None:
    assert _seqs(ledger, since="2026-01-01t00:00:03z") == [4, 5, 6]
    assert _seqs(ledger, until="2026-01-01t01:00:02+01:00") == [1, 2]
    assert _seqs(ledger, since="2026-01-01T00:00:02.5Z") == [4, 5, 6]
    # Finer than the ledger's microseconds: rounded up, which selects the same entries.
    assert _seqs(ledger, since="2026-01-01T00:00:02.0000001Z") == [4, 5, 6]
    assert _seqs(ledger, until="2026-01-01T00:00:02.0000001Z") == [1, 2, 3]
    assert _seqs(ledger, since="2026-01-01T00:00:00-00:00") == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize(
    "value",
    [
        "2026-W01-1T00:00:00Z",  # ISO 8601 week date
        "20260101T000000Z",  # ISO 8601 basic form
        "2026-01-01T00:00Z",  # no seconds
        "2026-01-01 00:00:00Z",  # a space for the T
        "2026-01-01T00:00:00+0100",  # an offset without its colon
        "2026-01-01",  # a date alone
        "٢٠٢٦-01-01T00:00:00Z",  # digits that are not ASCII
    ],
)
def test_other_iso_8601_forms_are_refused_showing_the_expected_one(
    ledger: Ledger, value: str
) -> None:
    with pytest.raises(LedgerEntryError) as caught:
        ledger.query(since=value)
    assert str(caught.value) == NOT_RFC_3339.format(name="since", value=value)


def test_a_leap_second_and_impossible_fields_are_refused_saying_why(ledger: Ledger) -> None:
    with pytest.raises(LedgerEntryError) as caught:
        ledger.query(until="2016-12-31T23:59:60Z")
    assert str(caught.value) == (
        "until '2016-12-31T23:59:60Z' is a leap second, which assay never writes: a ledger "
        "time's seconds run 00 to 59; give an RFC 3339 time like 2026-01-01T00:00:00Z"
    )
    with pytest.raises(LedgerEntryError) as caught:
        ledger.query(since="2026-02-30T00:00:00Z")
    assert str(caught.value) == (
        "since '2026-02-30T00:00:00Z' is not a real date and time (day is out of range for "
        "month): a ledger time has a calendar date, hours 00 to 23, and minutes and seconds 00 "
        "to 59; give an RFC 3339 time like 2026-01-01T00:00:00Z"
    )
    with pytest.raises(LedgerEntryError) as caught:
        ledger.query(since="2026-01-01T00:00:00+24:00")
    assert str(caught.value).endswith("(the offset must be -23:59 to +23:59)")


@pytest.mark.parametrize("flag", ["--since", "--until"])
def test_the_cli_exits_2_naming_the_flag_for_a_time_beyond_the_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    url = f"sqlite:///{tmp_path / 'evidence.db'}"
    open_ledger(url).close()
    assert main(["ledger", "query", "--ledger", url, flag, EARLIEST]) == 2
    name = flag.removeprefix("--")
    edge = "before 0001-01-01T00:00:00Z"
    assert capsys.readouterr().err == (
        f"assay ledger: error: {flag}: {BEYOND.format(name=name, edge=edge, value=EARLIEST)}\n"
    )
    assert main(["ledger", "query", "--ledger", url, flag, "20260101T000000Z"]) == 2
    assert capsys.readouterr().err == (
        f"assay ledger: error: {flag}: {NOT_RFC_3339.format(name=name, value='20260101T000000Z')}\n"
    )
