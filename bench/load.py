"""Load: 1,000 sessions firing concurrently for 60 s against ``assay serve`` on loopback.

Each session is opened with ``POST /v1/sessions`` and fires ``inbox.send`` (the outpost
delivers after 0.4 s) with a unique message id and a 10 s wait, again and again. When the
time is up the clients stop, the daemon is given time to settle what is still pending,
then it is stopped (SIGINT) and its SQLite ledger is checked: one fire per accepted
answer, exactly one settlement per fire, a gapless chain that verifies.

    python bench/load.py [--sessions 1000] [--seconds 60]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from http_daemon import spawn_daemon
from http_load import check_ledger, describe, drive

DRAIN_S = 60.0


async def _drain(url: str) -> int:
    """Wait until no session has a pending transition (or ``DRAIN_S``); answer how many are."""
    deadline = time.monotonic() + DRAIN_S
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        while True:
            pending = sum(s["pending"] for s in (await client.get("/v1/sessions")).json())
            if pending == 0 or time.monotonic() > deadline:
                return int(pending)
            await asyncio.sleep(0.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=60.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        ledger_url = f"sqlite:///{folder}/load.db"
        arguments = ["--ledger", ledger_url, "--no-access-log", "--log-level", "warning"]
        with spawn_daemon(arguments) as daemon:
            print(f"{options.sessions} sessions for {options.seconds:g} s against {daemon.url}")
            load = asyncio.run(drive(daemon.url, options.sessions, options.seconds))
            still_pending = asyncio.run(_drain(daemon.url))
        ledger = check_ledger(ledger_url, load)
    print(describe(load, ledger))
    print(f"pending when the daemon was stopped: {still_pending}; daemon exit code "
          f"{daemon.process.returncode}")  # fmt: skip
    problems = [
        ledger.fires != len(load.accepted),
        ledger.settlements != ledger.fires,
        bool(ledger.unsettled or ledger.settled_twice or ledger.lost or ledger.unanswered),
        not (ledger.gapless and ledger.verified),
    ]
    print("nothing lost, one settlement per fire" if not any(problems) else "PROBLEMS (above)")
    return 1 if any(problems) else 0


if __name__ == "__main__":
    sys.exit(main())
