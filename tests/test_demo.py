"""``assay demo`` for real, then its ledger on the timeline page in headless Chromium.

The demo runs once per module as a subprocess, exactly as ``make demo`` runs it; the tests
check what it printed against what its ledger holds, and that the page a person would open
shows the same transitions and verdicts. The screenshot is saved under ``test-artifacts/``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright
from starlette.applications import Starlette

from assay.host.loopback import LoopbackServer
from assay.ledger import Ledger
from assay.ledger.url import open_ledger
from assay.timeline import timeline_routes

ASSAY = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "assay"
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
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


@dataclass(frozen=True)
class DemoRun:
    url: str
    output: str
    code: int


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    folder = tmp_path_factory.mktemp("demo")
    url = f"sqlite:///{folder / 'assay.db'}"
    result = _run_demo(url, folder)
    return DemoRun(url, result.stdout + result.stderr, result.returncode)


def _run_demo(url: str, folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ASSAY), "demo", "--ledger", url],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )


def _transitions(ledger: Ledger) -> list[tuple[str, str, dict[str, Any]]]:
    """(transition, final answer, settlement or refusal body) in firing order."""
    order: list[str] = []
    final: dict[str, tuple[str, dict[str, Any]]] = {}
    for entry in ledger.iterate():
        if entry.kind == "fire":
            order.append(entry.transition)
            final[entry.transition] = ("pending", entry.body)
        elif entry.kind == "refusal":
            order.append(entry.transition)
            final[entry.transition] = ("refused", entry.body)
        elif entry.kind == "settlement":
            final[entry.transition] = (entry.body["answer"], entry.body)
    return [(t, *final[t]) for t in order]


def test_the_demo_shows_every_case_and_its_ledger_verifies(demo: DemoRun) -> None:
    assert demo.code == 0, demo.output
    ledger = open_ledger(demo.url)
    assert ledger.verify().ok
    rows = _transitions(ledger)
    assert [(t, answer) for t, answer, _ in rows] == [
        ("inbox.send#1", "worked"),
        ("inbox.mark-all-read#1", "failed"),
        ("inbox.open-drone#1", "unobservable"),
        ("drone.set-mode#1", "worked"),
        ("drone.set-mode#2", "unobservable"),
        ("drone.release-payload#1", "refused"),
        ("drone.release-payload#2", "worked"),
    ]
    bodies = {t: body for t, _, body in rows}
    assert bodies["inbox.mark-all-read#1"]["outcome"]["changed_fields"] == []
    assert bodies["drone.release-payload#1"]["refusal"] == "low_confidence"
    figures = bodies["drone.release-payload#1"]["figures"]
    assert figures["confidence"] < figures["threshold"] == 0.95
    fires = {e.transition: e.body for e in ledger.query(kind="fire")}
    assert fires["drone.set-mode#2"]["already_true"][0]["key"] == "drone.mode"
    verdicts = [e.body["verdict"]["passed"] for e in ledger.query(kind="verdict") if e.run]
    assert verdicts == [False, True]
    # inbox.sent gained a key: it is not listed as removed (it said "{} → (absent)").
    assert "changed: inbox.sent: {}" not in demo.output
    assert '.status: (absent) → "sent"' in demo.output
    for line in (
        "inbox.unread remained 3",
        "changed_fields: [] (nothing observable changed)",
        "changed: inbox.sent_count: 14 → 15",
        "The handler finished, and no change to the declared keys was observed.",  # unverified
        'already true at fire time: drone.mode eq "GUIDED"',
        "refused (low_confidence): confidence",
        "critique → planner:",
        f"See it on the timeline: assay serve --ledger {demo.url}, then open",
    ):
        assert line in demo.output
    # Its verify block is what the command prints, head and all, word for word.
    verified = subprocess.run(
        [str(ASSAY), "ledger", "verify", "--ledger", demo.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    said = verified.stdout.splitlines()
    assert re.fullmatch(
        rf"OK {re.escape(demo.url)}: (\d+) entries, chain and Merkle tree verified "
        r"\(head \1:[0-9a-f]{64}\); 0 checkpoints, 0 signatures checked",
        said[0],
    )
    lines = demo.output.splitlines()
    block = lines.index(next(line for line in lines if " assay ledger verify " in line))
    assert lines[block + 1 : block + 1 + len(said)] == said


def test_a_demo_on_a_memory_ledger_does_not_send_anyone_to_a_timeline_of_it(
    tmp_path: Path,
) -> None:
    result = _run_demo("memory:", tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "See it on the timeline" not in result.stdout  # a new process's memory is empty
    assert (
        "The ledger memory: lived in this process and is gone with it; run with --ledger "
        "sqlite:///assay.db to keep it and see it on the timeline"
    ) in result.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.anyio
async def test_the_timeline_shows_the_demos_transitions_and_verdicts(demo: DemoRun) -> None:
    assert Path(CHROMIUM).exists(), "Chromium is missing: run `make browser` (Debian chromium)"
    assert demo.code == 0, demo.output
    ledger = open_ledger(demo.url)
    expected = [(t, answer) for t, answer, _ in _transitions(ledger)]
    run_verdicts = [
        (e.seq, e.body["verdict"]["passed"]) for e in ledger.query(kind="verdict") if e.run
    ]
    app = Starlette(routes=timeline_routes(ledger, app="outpost"))
    async with LoopbackServer(app, name="timeline") as server, async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        page = await browser.new_page(viewport={"width": 1280, "height": 1000})
        await page.goto(server.url + "/")
        rows = await page.eval_on_selector_all(
            "tr.transition", "rows => rows.map(r => [r.dataset.transition, r.dataset.status])"
        )
        events = await page.eval_on_selector_all(
            'tr.run-event[data-kind="verdict"]',
            "rows => rows.map(r => [Number(r.dataset.seq), r.dataset.passed === 'True'])",
        )
        critique = await page.inner_text("tr.run-event .critique")
        silent = await page.inner_text('tr[data-transition="inbox.mark-all-read#1"]')
        refused = await page.inner_text('tr[data-transition="drone.release-payload#1"]')
        verified = await page.get_attribute("#ledger-status", "data-verified")
        ARTIFACTS.mkdir(exist_ok=True)
        await page.screenshot(path=str(ARTIFACTS / "timeline.png"), full_page=True)
        # Live: a fire appended now shows up without a reload (the page polls the head).
        ledger.append(
            "fire",
            {"action": "inbox.send", "args": {}, "source": "test"},
            session="live-session",
            transition="inbox.send#1",
        )
        await page.wait_for_selector('section[data-session="live-session"]', timeout=15_000)
        live_size = await page.get_attribute("#ledger-status", "data-size")
        await browser.close()
    assert live_size == str(ledger.size)
    assert [tuple(row) for row in rows] == expected
    assert [tuple(event) for event in events] == run_verdicts
    assert critique.startswith("critique: output.hypotheses.every(")
    assert "inbox.unread remained 3" in silent and "no declared key changed" in silent
    assert "low_confidence" in refused
    assert verified == "yes"
