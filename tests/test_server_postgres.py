"""Two daemons, two processes, one PostgreSQL ledger: one gapless, verifiable order."""

from __future__ import annotations

import asyncio
import contextlib
import uuid

import httpx

from assay.ledger.url import open_ledger
from http_daemon import spawn_daemon

FIRES_PER_DAEMON = 40


def test_two_daemons_share_one_gapless_ledger(postgres_url: str) -> None:
    url = f"{postgres_url}?schema=t_{uuid.uuid4().hex[:12]}"
    with contextlib.ExitStack() as stack:
        daemons = [
            stack.enter_context(spawn_daemon(["--ledger", url, "--no-access-log"]))
            for _ in range(2)
        ]
        answers = asyncio.run(_fire_through_both([d.url for d in daemons]))
        heads = [httpx.get(f"{d.url}/v1/ledger/head").json() for d in daemons]
    assert [a["answer"] for a in answers] == ["worked"] * (2 * FIRES_PER_DAEMON)
    with open_ledger(url) as ledger:
        entries = list(ledger.iterate())
        assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
        fires = [e for e in entries if e.kind == "fire"]
        settlements = [e for e in entries if e.kind == "settlement"]
        assert len(fires) == len(settlements) == 2 * FIRES_PER_DAEMON
        fired = {(e.session, e.transition) for e in fires}
        assert fired == {(e.session, e.transition) for e in settlements}
        assert fired == {(a["session"], a["transition_id"]) for a in answers}
        report = ledger.verify()
        assert (report.problem, report.size) == (None, len(entries))
        # Each daemon's tree head takes in the other's entries: both name the same tree.
        assert heads[0] == heads[1] == {"size": len(entries), "root": ledger.tree_head().root}


async def _fire_through_both(urls: list[str]) -> list[dict[str, object]]:
    async with httpx.AsyncClient(timeout=30) as client:

        async def fire(url: str, session: str, index: int) -> dict[str, object]:
            body = {
                "action": "inbox.send",
                "args": {"message_id": f"{session[-12:]}-{index}", "to": "ops"},
                "session": session,
                "wait_ms": 10_000,
            }
            response = await client.post(f"{url}/v1/actions", json=body)
            assert response.status_code == 200, response.text
            answer: dict[str, object] = response.json()
            return answer

        sessions = [(await client.post(f"{url}/v1/sessions")).json()["id"] for url in urls]
        return list(
            await asyncio.gather(
                *(
                    fire(url, session, index)
                    for url, session in zip(urls, sessions, strict=True)
                    for index in range(FIRES_PER_DAEMON)
                )
            )
        )
