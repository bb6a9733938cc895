"""The timeline page and its head over a real uvicorn server: what it says of the ledger's
verification, and when that was checked."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette

from assay.clock import VirtualClock
from assay.host.loopback import LoopbackServer
from assay.ledger import Ledger, SQLiteBackend
from assay.timeline import LedgerCheck, timeline_routes
from test_timeline_check import alter

pytestmark = pytest.mark.anyio


@dataclass
class Page:
    http: httpx.AsyncClient
    ledger: Ledger
    path: Path
    clock: VirtualClock


@pytest.fixture
async def page(tmp_path: Path) -> AsyncIterator[Page]:
    path = tmp_path / "ledger.db"
    ledger = Ledger(SQLiteBackend(path))
    for n in range(4):
        ledger.append("verdict", {"subject": "verify", "outcome": {"passed": True, "n": n}})
    clock = VirtualClock()
    check = LedgerCheck(ledger, clock=clock, wait_s=30)
    app = Starlette(routes=timeline_routes(ledger, app="outpost", check=check))
    try:
        async with (
            LoopbackServer(app, name="timeline") as server,
            httpx.AsyncClient(base_url=server.url, timeout=30) as http,
        ):
            yield Page(http, ledger, path, clock)
    finally:
        ledger.close()


async def test_the_page_says_when_it_verified_and_finds_an_entry_altered_since(
    page: Page,
) -> None:
    first = (await page.http.get("/")).text
    assert 'data-verified="yes"' in first
    assert 'data-checked-at="2026-01-01T00:00:00Z"' in first
    assert (
        '<span class="status verified">verified</span>\n'
        '    <span class="covered" title="2026-01-01T00:00:00Z">at 00:00:00 UTC, 4 entries</span>'
    ) in first
    assert "checked at 00:00:00 UTC: sqlite:///" in first
    alter(page.path, 2, "replace(entry, 'true', 'false')")
    await page.clock.advance(LedgerCheck.RECHECK_S)
    head = (await page.http.get("/timeline/head")).json()  # starts the check, or finds it done
    assert head["size"] == 4
    later = (await page.http.get("/")).text  # waits for it
    assert 'data-verified="no"' in later
    assert "does not verify</span>" in later
    assert '<span class="covered" title="2026-01-01T00:00:10Z">(checked at 00:00:10 UTC)' in later
    assert ": entry 2: hash " in later
    head = (await page.http.get("/timeline/head")).json()
    assert (head["checked"], head["checked_at"]) == (4, "2026-01-01T00:00:10Z")


async def test_a_missing_entry_is_named_and_the_page_shows_the_rest(page: Page) -> None:
    with sqlite3.connect(page.path) as raw:
        raw.execute("DROP TRIGGER ledger_entries_no_delete")
        raw.execute("DELETE FROM ledger_entries WHERE seq = 2")
    fresh = Ledger(SQLiteBackend(page.path))  # its tree is built from what is stored now
    try:
        app = Starlette(routes=timeline_routes(fresh, app="outpost"))
        async with (
            LoopbackServer(app, name="timeline") as server,
            httpx.AsyncClient(base_url=server.url, timeout=30) as http,
        ):
            shown = await http.get("/")
            head = (await http.get("/timeline/head")).json()
    finally:
        fresh.close()
    assert shown.status_code == 200
    assert (head["size"], head["root"]) == (4, None)
    assert "(entry 2 cannot be read)</span>" in shown.text
    assert "· no Merkle root: an entry is missing" in shown.text
    assert f'<li class="fault">entry 2 is missing from sqlite:///{page.path}; ' in shown.text
    assert shown.text.count('class="verdict"') == 3
    assert shown.text.count("is missing from") == 1
