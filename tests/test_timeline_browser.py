"""The timeline page in real headless Chromium: what it shows is what the ledger holds.

Chromium comes from Debian's package (``make browser`` installs it); Playwright drives it
through its executable path. The screenshot is saved under ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright
from starlette.applications import Starlette

from assay.examples.outpost import APPLICATION, Outpost, outpost_connector
from assay.host import Application, Host
from assay.host.loopback import LoopbackServer
from assay.host.wire import ActionRequest, VerifyRequest
from assay.ledger.url import open_ledger
from assay.timeline import timeline_routes

pytestmark = pytest.mark.anyio

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
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


async def _populate(url: str) -> None:
    outpost = Outpost(delivery_delay=0.1, mode_delay=0.05, mode="GUIDED")
    application = Application(APPLICATION.graph, start="inbox", connect=outpost_connector(outpost))
    async with Host(application, open_ledger(url)) as host:
        await host.fire(
            ActionRequest(action="inbox.send", args={"message_id": "m1", "to": "ops"}, wait_ms=3000)
        )
        await host.fire(ActionRequest(action="inbox.mark-all-read", wait_ms=3000))
        await host.fire(ActionRequest(action="inbox.open-drone", wait_ms=1000))
        await host.fire(
            ActionRequest(action="drone.set-mode", args={"mode": "GUIDED"}, wait_ms=1000)
        )
        await host.verify(VerifyRequest(expression="inbox.sent_count >= 15"))


async def test_the_timeline_shows_the_ledgers_transitions_and_verdicts(tmp_path: Path) -> None:
    assert Path(CHROMIUM).exists(), "Chromium is missing: run `make browser` (Debian chromium)"
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    await _populate(url)
    ledger = open_ledger(url)
    expected = _expected(ledger)
    app = Starlette(routes=timeline_routes(ledger, app="outpost"))
    async with LoopbackServer(app, name="timeline") as server, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        await page.goto(server.url + "/")
        rows = await page.eval_on_selector_all(
            "tr.transition",
            "rows => rows.map(r => [r.dataset.transition, r.dataset.status])",
        )
        verdicts = await page.eval_on_selector_all(
            "tr.verdict", "rows => rows.map(r => [Number(r.dataset.seq), r.dataset.passed])"
        )
        status = await page.get_attribute("#ledger-status", "data-verified")
        size = await page.get_attribute("#ledger-status", "data-size")
        silent = await page.inner_text('tr[data-transition="inbox.mark-all-read#1"]')
        already = await page.inner_text('tr[data-transition="drone.set-mode#1"]')
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "timeline.png"), full_page=True)
        await browser.close()
    assert [tuple(row) for row in rows] == expected["transitions"]
    assert [tuple(v) for v in verdicts] == expected["verdicts"]
    assert (status, size) == ("yes", str(ledger.size))
    assert "inbox.unread remained 3" in silent
    assert "no declared key changed" in silent
    assert "already true at fire time" in already


def _expected(ledger: Any) -> dict[str, list[tuple[Any, ...]]]:
    """The transitions (id, final answer) and verify verdicts, read from the entries."""
    answers: dict[str, str] = {}
    order: list[str] = []
    verdicts: list[tuple[Any, ...]] = []
    for entry in ledger.iterate():
        if entry.kind == "fire":
            order.append(entry.transition)
            answers[entry.transition] = "pending"
        elif entry.kind == "settlement":
            answers[entry.transition] = entry.body["answer"]
        elif entry.kind == "verdict" and entry.run is None:
            verdicts.append((entry.seq, str(entry.body["outcome"]["passed"])))
    return {"transitions": [(t, answers[t]) for t in order], "verdicts": verdicts}
