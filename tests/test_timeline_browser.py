"""The timeline page in headless Chromium: what a person sees change without reloading."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright
from starlette.applications import Starlette

from assay.clock import VirtualClock
from assay.host.loopback import LoopbackServer
from assay.ledger import Ledger, SQLiteBackend
from assay.timeline import LedgerCheck, timeline_routes
from test_timeline_check import alter

pytestmark = pytest.mark.anyio

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    assert Path(CHROMIUM).exists(), "Chromium is missing: run `make browser` (Debian chromium)"
    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            await launched.close()


async def test_an_open_page_turns_to_does_not_verify_when_an_entry_is_altered(
    browser: Browser, tmp_path: Path
) -> None:
    path = tmp_path / "ledger.db"
    ledger = Ledger(SQLiteBackend(path))
    for n in range(3):
        ledger.append("verdict", {"subject": "verify", "outcome": {"passed": True, "n": n}})
    clock = VirtualClock()
    check = LedgerCheck(ledger, clock=clock, wait_s=30)
    app = Starlette(routes=timeline_routes(ledger, app="outpost", check=check))
    try:
        async with LoopbackServer(app, name="timeline") as server:
            page = await browser.new_page()
            await page.goto(server.url + "/")
            status = page.locator("#ledger-status")
            assert await status.get_attribute("data-verified") == "yes"
            assert await status.inner_text() == (
                "ledger: 3 entries · VERIFIED at 00:00:00 UTC, 3 entries · root "
                f"{ledger.root()[:16]}…"
            )
            alter(path, 2, "replace(entry, 'true', 'false')")
            await clock.advance(LedgerCheck.RECHECK_S)  # the page's poll starts the check
            await page.wait_for_selector('#ledger-status[data-verified="no"]', timeout=15_000)
            shown = await status.inner_text()
            evidence = await page.inner_text("main p.evidence")
    finally:
        ledger.close()
    assert shown.startswith("ledger: 3 entries · DOES NOT VERIFY (checked at 00:00:10 UTC)")
    assert evidence.startswith("checked at 00:00:10 UTC: sqlite:///")
    assert ": entry 2: hash " in evidence
