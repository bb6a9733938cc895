"""A daemon killed mid-fire (SIGKILL) leaves no fire open for good (issue #31).

A real ``assay serve`` fires a press that never settles (``stuck_app``), is killed once the
fire's entry is durable (its answer went out), and is started again on the same SQLite ledger:
the new daemon closes the fire, once, as unobservable, saying why, and answers it over HTTP
and MCP though the session is gone. On PostgreSQL, two daemons share one ledger: the second
leaves the first's live fire alone, and closes it, naming the first, once the first is
killed and its lease has expired by the server's clock.

Leases here are 1-2 s of real time, so that waiting for one to expire takes that long; each
wait is a bounded loop on a condition.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
from mcp import Client

from assay.graph.answers import FROM_EVIDENCE
from assay.host import Host
from assay.ledger import Entry, Ledger, open_ledger
from assay.mcp import build_server
from http_daemon import Spawned, spawn_daemon
from stuck_app import APPLICATION as STUCK

TESTS = str(Path(__file__).resolve().parent)
PRESS = "desk.press#1"
STOPPED = "the daemon that fired it stopped (it was killed or crashed) before the fire settled"
UNCHECKED = "its effect was never checked, and nothing more of it will be observed"


@contextlib.contextmanager
def _daemon(ledger_url: str, lease_s: float) -> Iterator[Spawned]:
    arguments = ["--app", "stuck_app:APPLICATION", "--ledger", ledger_url, "--no-access-log"]
    with spawn_daemon(
        [*arguments, "--lease-s", str(lease_s)], environ={"PYTHONPATH": TESTS}
    ) as daemon:
        yield daemon


def _press(daemon: Spawned, session: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"action": "desk.press", "wait_ms": 0}
    if session is not None:
        body["session"] = session
    response = httpx.post(f"{daemon.url}/v1/actions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    assert (answer["answer"], answer["transition_id"]) == ("pending", PRESS)
    return answer


def _kill(daemon: Spawned) -> None:
    daemon.process.send_signal(signal.SIGKILL)
    daemon.process.wait(30)


def _asked(daemon: Spawned, session: str) -> httpx.Response:
    return httpx.get(
        f"{daemon.url}/v1/transitions/{PRESS.replace('#', '%23')}",
        params={"session": session},
        timeout=30,
    )


def _eventually(read: Callable[[], list[Entry]], timeout: float = 30) -> list[Entry]:
    """``read()`` once it gives anything, within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (found := read()):
        assert time.monotonic() < deadline, "nothing came within the time allowed"
        time.sleep(0.1)
    return found


def _settlements(ledger_url: str, session: str) -> list[Entry]:
    with open_ledger(ledger_url) as ledger:
        return ledger.query(session=session, transition=PRESS, kind="settlement")


def _fire(ledger_url: str, session: str) -> Entry:
    with open_ledger(ledger_url) as ledger:
        (fire,) = ledger.query(session=session, transition=PRESS, kind="fire")
    return fire


def test_a_daemon_killed_mid_fire_has_the_fire_closed_when_it_starts_again(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with _daemon(url, lease_s=2) as first:
        session = _press(first)["session"]  # answered: the fire's entry is durable
        _kill(first)
    owner = _fire(url, session).body["owner"]
    assert _settlements(url, session) == []  # killed: nothing settled it

    with _daemon(url, lease_s=2) as second:
        (closed,) = _eventually(lambda: _settlements(url, session))
        error = closed.body["error"]
        with open_ledger(url) as ledger:
            closer = _owner_of_closing(ledger, closed)
        assert closer != owner
        assert error.startswith(f"{STOPPED}: the lease of daemon {owner}, which fired it, ")
        assert " expired unrenewed at " in error
        assert error.endswith(f", and daemon {closer} closed it; {UNCHECKED}")
        assert (closed.body["answer"], closed.body["effect"]) == ("unobservable", "unobservable")

        answered = _asked(second, session)  # 404 before: the session died with its daemon
        assert answered.status_code == 200, answered.text
        answer = answered.json()
        assert (answer["session"], answer["answer"], answer["error"]) == (
            session,
            "unobservable",
            error,
        )
        assert answer["why"] == error + FROM_EVIDENCE
        waited = httpx.get(
            f"{second.url}/v1/transitions/{PRESS.replace('#', '%23')}",
            params={"session": session, "wait_ms": 10_000},
            timeout=30,
        )
        assert waited.json() == answer  # at once: nothing will come
        unknown = _asked(second, "desk-000000000000")
        assert unknown.status_code == 404
        assert "no session is called 'desk-000000000000'" in unknown.json()["detail"]

        structured = anyio.run(_did_it_work_over_mcp, url, session)
        assert (structured["answer"], structured["error"], structured["why"]) == (
            "unobservable",
            error,
            answer["why"],
        )
    assert len(_settlements(url, session)) == 1
    verified = subprocess.run(
        [sys.executable, "-m", "assay", "ledger", "verify", "--ledger", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


async def _did_it_work_over_mcp(ledger_url: str, session: str) -> dict[str, Any]:
    """The MCP tool's answer, from a host of its own on the same ledger."""
    with open_ledger(ledger_url) as ledger:
        async with Host(STUCK, ledger) as host, Client(build_server(host)) as client:
            result = await client.call_tool(
                "did_it_work", {"transition_id": PRESS, "session": session}
            )
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


def test_a_daemon_closes_another_daemons_fire_only_once_its_lease_expired(
    postgres_url: str,
) -> None:
    url = f"{postgres_url}?schema=t_{uuid.uuid4().hex[:12]}"
    with _daemon(url, lease_s=1) as first:
        session = _press(first, httpx.post(f"{first.url}/v1/sessions").json()["id"])["session"]
        owner = _fire(url, session).body["owner"]
        with _daemon(url, lease_s=1) as second:
            # The first renews its lease: the second, which looks at start and every third of
            # a second, leaves its fire open for three of the first one's leases.
            deadline = time.monotonic() + 3
            while time.monotonic() < deadline:
                assert _settlements(url, session) == []
                time.sleep(0.2)
            pending = _asked(second, session).json()
            assert pending["answer"] == "pending"
            assert pending["waiting_on"] == (
                f"its settlement by daemon {owner}, which fired it and holds its session"
            )

            _kill(first)
            (closed,) = _eventually(lambda: _settlements(url, session))
            error = closed.body["error"]
            with open_ledger(url) as ledger:
                second_owner = _owner_of_closing(ledger, closed)
            assert error.startswith(f"{STOPPED}: the lease of daemon {owner}, which fired it, ")
            assert error.endswith(f", and daemon {second_owner} closed it; {UNCHECKED}")
            answer = _asked(second, session).json()
            assert (answer["answer"], answer["why"]) == ("unobservable", error + FROM_EVIDENCE)
    with open_ledger(url) as ledger:
        assert len(ledger.query(session=session, kind="settlement")) == 1
        report = ledger.verify()
        assert report.problem is None


def _owner_of_closing(ledger: Ledger, closed: Entry) -> str:
    """The daemon that closed the fire: the one whose lease is left (the killed one's went
    with its fire)."""
    (lease,) = ledger.backend.leases()
    assert lease.owner in closed.body["error"]
    return lease.owner
