"""The timeline page in headless Chromium: what a person sees change without reloading."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, async_playwright
from starlette.applications import Starlette

from assay.clock import VirtualClock
from assay.examples.outpost import APPLICATION, Outpost, outpost_connector
from assay.host import Application
from assay.host.loopback import LoopbackServer
from assay.ledger import Ledger, SQLiteBackend
from assay.timeline import LedgerCheck, timeline_routes
from http_daemon import TOKENS, bearer, serving
from test_demo import CHROMIUM, CHROMIUM_FLAGS
from test_timeline_check import alter

pytestmark = pytest.mark.anyio


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


async def test_with_tokens_a_browser_sending_the_header_sees_the_page_live(
    browser: Browser, tmp_path: Path
) -> None:
    # What docs/http.md gives for a daemon with tokens: a browser extension that adds the
    # header to every request to the daemon (here the browser context's own headers), or the
    # page saved with curl and opened as a file.
    outpost = Outpost(delivery_delay=0.05, mode_delay=0.05, release_delay=0.05)
    application = Application(APPLICATION.graph, start="inbox", connect=outpost_connector(outpost))
    async with (
        serving(application, tokens=TOKENS) as served,
        httpx.AsyncClient(base_url=served.url, headers=bearer("reader"), timeout=30) as http,
    ):
        await http.post("/v1/verify", json={"expression": "true", "timeout_ms": 0})
        bare = await browser.new_page()
        refused = await bare.goto(served.url + "/")
        assert refused is not None and refused.status == 401
        told = await bare.inner_text("#refused")
        assert "a browser extension that sets request headers can add" in told
        context = await browser.new_context(extra_http_headers=bearer("reader"))
        page = await context.new_page()
        await page.goto(served.url + "/")
        assert await page.locator("tr.verdict").count() == 1
        await http.post("/v1/verify", json={"expression": "false", "timeout_ms": 0})
        await page.wait_for_selector('tr.verdict[data-seq="2"]', timeout=15_000)  # live
        saved = tmp_path / "timeline.html"
        saved.write_text((await http.get("/")).text, encoding="utf-8")
        snapshot = await browser.new_page()
        await snapshot.goto(saved.as_uri())
        shown = await snapshot.eval_on_selector_all("tr.verdict", "rows => rows.length")
        size = await snapshot.get_attribute("#ledger-status", "data-size")
        await context.close()
    assert (shown, size) == (2, "2")
