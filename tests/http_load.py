"""Load on the daemon, and the ledger check after it: what ``bench/load.py`` runs at full size
(1,000 sessions for 60 s) and ``test_server_load`` runs small.

Each simulated agent opens its own session with ``POST /v1/sessions`` and fires
``inbox.send`` with a unique message id and a wait, again and again until the time is up.
Afterwards the ledger must hold exactly one fire per accepted answer, and exactly one
settlement per fire: nothing lost, nothing doubled.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from assay.ledger.url import open_ledger


@dataclass
class LoadFigures:
    """What the clients saw."""

    sessions: int = 0
    seconds: float = 0.0
    accepted: set[tuple[str, str]] = field(default_factory=set)
    statuses: Counter[int] = field(default_factory=Counter)
    answers: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)

    def percentile(self, share: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(len(ordered) * share))] * 1000 if ordered else 0.0


@dataclass
class LedgerFigures:
    """What the ledger holds after the run."""

    entries: int
    fires: int
    settlements: int
    unsettled: list[tuple[str, str]]
    settled_twice: list[tuple[str, str]]
    lost: list[tuple[str, str]]
    unanswered: list[tuple[str, str]]
    gapless: bool
    verified: bool


async def drive(
    url: str, sessions: int, seconds: float, wait_ms: int = 10_000, *, close: bool = False
) -> LoadFigures:
    """Run ``sessions`` agents against the daemon at ``url`` for ``seconds``; ``close``: each
    closes its session (``DELETE /v1/sessions/{id}``) once its time is up.

    Each agent has a client (one connection) of its own, as separate agents would: one
    client's pool of a thousand connections costs more to manage per request than the
    daemon spends answering it, and the load would measure the pool.
    """
    figures = LoadFigures(sessions=sessions)
    tls = ssl.create_default_context()  # made once: the URL is plain http, nothing uses it
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                httpx.AsyncClient(base_url=url, verify=tls, timeout=120)
            )
            for _ in range(sessions)
        ]
        opened = await asyncio.gather(*(client.post("/v1/sessions") for client in clients))
        ids = [response.json()["id"] for response in opened]
        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(
            *(
                _agent(client, session, deadline, wait_ms, figures)
                for client, session in zip(clients, ids, strict=True)
            )
        )
        figures.seconds = time.perf_counter() - started
        if close:
            await asyncio.gather(
                *(
                    client.delete(f"/v1/sessions/{session}")
                    for client, session in zip(clients, ids, strict=True)
                )
            )
    return figures


async def _agent(
    client: httpx.AsyncClient, session: str, deadline: float, wait_ms: int, figures: LoadFigures
) -> None:
    index = 0
    while time.perf_counter() < deadline:
        index += 1
        body: dict[str, Any] = {
            "action": "inbox.send",
            "args": {"message_id": f"{session[-12:]}-{index}", "to": "ops"},
            "session": session,
            "wait_ms": wait_ms,
        }
        sent = time.perf_counter()
        try:
            response = await client.post("/v1/actions", json=body)
        except httpx.HTTPError as error:
            figures.failures[type(error).__name__] += 1
            continue
        figures.latencies.append(time.perf_counter() - sent)
        figures.statuses[response.status_code] += 1
        answer = response.json()
        if answer.get("refusal"):
            figures.refusals[answer["refusal"]] += 1
        if answer.get("ok") and answer.get("transition_id"):
            figures.accepted.add((session, answer["transition_id"]))
            figures.answers[answer["answer"]] += 1


def check_ledger(ledger_url: str, figures: LoadFigures) -> LedgerFigures:
    """Match the ledger's fires and settlements against the answers the clients accepted."""
    with open_ledger(ledger_url) as ledger:
        entries = list(ledger.iterate())
        report = ledger.verify()
    fires = Counter((e.session, e.transition) for e in entries if e.kind == "fire")
    settlements = Counter((e.session, e.transition) for e in entries if e.kind == "settlement")
    fired = {key for key in fires if key[0] != "default"}
    return LedgerFigures(
        entries=len(entries),
        fires=sum(fires.values()),
        settlements=sum(settlements.values()),
        unsettled=sorted(key for key in fires if settlements[key] == 0),
        settled_twice=sorted(key for key, n in settlements.items() if n > 1),
        lost=sorted(figures.accepted - fired),
        unanswered=sorted(fired - figures.accepted),
        gapless=[e.seq for e in entries] == list(range(1, len(entries) + 1)),
        verified=report.problem is None,
    )


def describe(load: LoadFigures, ledger: LedgerFigures) -> str:
    """The figures, for people."""
    fired = len(load.accepted)
    return "\n".join(
        [
            f"sessions {load.sessions}, {load.seconds:.1f} s: {sum(load.statuses.values())} "
            f"answers ({fired / load.seconds:,.0f} accepted fires/s), statuses "
            f"{dict(load.statuses)}, answers {dict(load.answers)}, refusals "
            f"{dict(load.refusals)}, client failures "
            f"{dict(load.failures) or 0}",
            f"latency p50 {load.percentile(0.5):.0f} ms, p99 {load.percentile(0.99):.0f} ms",
            f"ledger: {ledger.entries} entries, {ledger.fires} fires, {ledger.settlements} "
            f"settlements; accepted fires {fired}; fires without settlement "
            f"{len(ledger.unsettled)}; settled twice {len(ledger.settled_twice)}; accepted but "
            f"not in the ledger {len(ledger.lost)}; in the ledger but never answered "
            f"{len(ledger.unanswered)}; gapless {ledger.gapless}; verifies {ledger.verified}",
        ]
    )
