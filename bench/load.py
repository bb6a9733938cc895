"""Load: fires through ``assay serve`` at 1, 64 and 200 concurrent agents, beside a bare peer.

Each agent opens its own session with ``POST /v1/sessions`` and fires ``inbox.send`` with a
unique message id and a 10 s wait, again and again, from this process (one httpx client
per agent, the same generator for every server). Three servers, each in a process of its
own, fresh for each number of agents:

- ``instant``: ``assay serve --app instant_app:APPLICATION``, the outpost's graph over an
  inbox whose send lands as the handler returns (``bench/instant_app.py``). A fire's cost is
  then the daemon's own: its request, the fire, the verification, the outcome (with every
  change other sessions made between its fire and its check), two durable ledger entries.
- ``peer``: a bare Starlette endpoint under the same uvicorn settings that does the same
  durable ledger writes, a fire and a settlement per request, through assay's own append
  path (``DurableEvidence`` on an SQLite ``Ledger``, as the daemon's), and answers a small
  constant. Target: ``instant`` at 0.5x the peer's fires/s or better.
- ``outpost``: ``assay serve`` over the built-in outpost, whose ``inbox.send`` is
  delivered 0.4 s after it was accepted (3 s contract): what an agent meets; shown without
  a ratio, since most of its latency is the application's delay.

Beside fires/s, each server's own CPU time per accepted fire (its process's user and system
time while the agents fire): the ratio of the two moves less than fires/s when other work
shares the machine. After each ``assay serve`` run the daemon is given time to settle what
is still pending, stopped (SIGINT), and its SQLite ledger checked: one fire per accepted
answer, exactly one settlement per fire, a gapless chain that verifies.

    python bench/load.py [--clients 1,64,200] [--seconds 10] [--servers instant,peer,outpost]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _timing import ratio
from http_daemon import spawn_daemon
from http_load import LoadFigures, check_ledger, describe, drive

HERE = Path(__file__).resolve().parent
TARGET = 0.5
DRAIN_S = 60.0


@dataclass
class Run:
    """One server at one number of agents: what the agents saw, and whether the ledger held."""

    load: LoadFigures
    sound: bool
    cpu_s: float  # the server process's CPU time while the agents fired

    @property
    def cpu_ms_per_fire(self) -> float:
        return self.cpu_s * 1000 / max(1, len(self.load.accepted))

    @property
    def rate(self) -> float:
        return len(self.load.accepted) / self.load.seconds


def serve_peer(ledger_url: str) -> None:
    """The bare peer: Starlette, two durable ledger entries a request, a constant answer."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from assay.host import DurableEvidence
    from assay.host.collector import prepare_to_serve
    from assay.ledger.url import open_ledger

    ledger = open_ledger(ledger_url)
    evidence = DurableEvidence(ledger)
    fired = iter(range(1, 1 << 62))

    async def open_session(request: Request) -> JSONResponse:
        return JSONResponse({"id": f"peer-{uuid.uuid4().hex[:12]}"})

    async def act(request: Request) -> JSONResponse:
        body = await request.json()
        transition = f"{body['action']}#{next(fired)}"
        session = body["session"]
        evidence.append("fire", {"action": body["action"], "args": body["args"]},
                        session=session, transition=transition)  # fmt: skip
        evidence.append("settlement", {"phase": "worked", "effect": "observed"},
                        session=session, transition=transition)  # fmt: skip
        await evidence.durable()
        return JSONResponse({"ok": True, "transition_id": transition, "answer": "worked"})

    app = Starlette(
        routes=[
            Route("/v1/sessions", open_session, methods=["POST"]),
            Route("/v1/actions", act, methods=["POST"]),
        ]
    )

    async def main() -> None:
        prepare_to_serve()  # as assay serve does
        config = uvicorn.Config(app, host="127.0.0.1", port=0, workers=1, lifespan="off",
                                access_log=False, log_level="warning")  # fmt: skip
        server = uvicorn.Server(config)
        task = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        print(f"http://127.0.0.1:{port}", flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):  # SIGINT: uvicorn stopped, then re-raised
        asyncio.run(main())
    evidence.close()


def _cpu_s(pid: int) -> float:
    """User and system CPU time of process ``pid`` so far, in seconds (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measured(pid: int, url: str, clients: int, seconds: float) -> tuple[LoadFigures, float]:
    started = _cpu_s(pid)
    load = asyncio.run(drive(url, clients, seconds))
    return load, _cpu_s(pid) - started


@contextlib.contextmanager
def _peer(ledger_url: str) -> Iterator[tuple[str, int]]:
    process = subprocess.Popen(
        [sys.executable, __file__, "--serve-peer", ledger_url], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    try:
        yield process.stdout.readline().strip(), process.pid
    finally:
        process.send_signal(2)
        process.wait(30)


async def _drain(url: str) -> int:
    """Wait until no session has a pending transition (or ``DRAIN_S``); answer how many are."""
    deadline = time.monotonic() + DRAIN_S
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        while True:
            pending = sum(s["pending"] for s in (await client.get("/v1/sessions")).json())
            if pending == 0 or time.monotonic() > deadline:
                return int(pending)
            await asyncio.sleep(0.5)


def _run(server: str, clients: int, seconds: float, folder: str) -> Run:
    ledger_url = f"sqlite:///{folder}/{server}-{clients}.db"
    if server == "peer":
        with _peer(ledger_url) as (url, pid):
            load, cpu_s = _measured(pid, url, clients, seconds)
            return Run(load, sound=True, cpu_s=cpu_s)
    arguments = ["--ledger", ledger_url, "--no-access-log", "--log-level", "warning"]
    environ = {}
    if server == "instant":
        arguments += ["--app", "instant_app:APPLICATION"]
        environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(HERE), os.environ.get("PYTHONPATH")])
        )
    with spawn_daemon(arguments, environ=environ) as daemon:
        load, cpu_s = _measured(daemon.process.pid, daemon.url, clients, seconds)
        still_pending = asyncio.run(_drain(daemon.url))
    ledger = check_ledger(ledger_url, load)
    problems = [
        ledger.fires != len(load.accepted),
        ledger.settlements != ledger.fires,
        bool(ledger.unsettled or ledger.settled_twice or ledger.lost or ledger.unanswered),
        not (ledger.gapless and ledger.verified),
        still_pending != 0,
        daemon.process.returncode != 0,
    ]
    if any(problems):
        print(f"PROBLEMS with {server} at {clients} agents:\n{describe(load, ledger)}")
    return Run(load, sound=not any(problems), cpu_s=cpu_s)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="1,64,200")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--servers", default="instant,peer,outpost")
    parser.add_argument("--serve-peer", metavar="LEDGER_URL", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve_peer:
        serve_peer(options.serve_peer)
        return 0
    counts = [int(count) for count in options.clients.split(",")]
    servers = options.servers.split(",")
    runs: dict[tuple[str, int], Run] = {}
    with tempfile.TemporaryDirectory() as folder:
        for clients in counts:
            for server in servers:
                runs[server, clients] = run = _run(server, clients, options.seconds, folder)
                answers = json.dumps(dict(run.load.answers), sort_keys=True)
                print(f"{server:>8} x{clients:<4} {run.rate:8.0f} fires/s  p50 "
                      f"{run.load.percentile(0.5):6.0f} ms  p99 {run.load.percentile(0.99):6.0f}"
                      f" ms  answers {answers}  ledger {'ok' if run.sound else 'PROBLEMS'}",
                      flush=True)  # fmt: skip
    print()
    print(f"{'agents':>6} | {'server':>8} | {'fires/s':>8} | {'p50 ms':>7} | {'p99 ms':>7} | "
          f"vs peer | CPU ms/fire | vs peer")  # fmt: skip
    for clients in counts:
        for server in servers:
            run = runs[server, clients]
            peer = runs.get(("peer", clients))
            compared = peer is not None and server == "instant"
            versus = ratio(run.rate / peer.rate) if compared and peer else ""
            cpu = ratio(peer.cpu_ms_per_fire / run.cpu_ms_per_fire) if compared and peer else ""
            print(f"{clients:>6} | {server:>8} | {run.rate:>8.0f} | "
                  f"{run.load.percentile(0.5):>7.1f} | {run.load.percentile(0.99):>7.1f} | "
                  f"{versus:>7} | {run.cpu_ms_per_fire:>11.2f} | {cpu}")  # fmt: skip
    print(f"target: instant at {TARGET}x the peer's fires/s or better (CPU ms/fire: the "
          "server's own CPU time per accepted fire, the peer's over assay's: steadier than "
          "fires/s when other work shares the machine)")  # fmt: skip
    sound = all(run.sound for run in runs.values())
    print("ledgers: nothing lost, one settlement per fire" if sound else "ledgers: PROBLEMS")
    return 0 if sound else 1


if __name__ == "__main__":
    sys.exit(main())
