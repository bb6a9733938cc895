"""Soak: rounds of load against one ``assay serve``, its memory and throughput per round.

Each round, 100 agents (by default) each open a session with ``POST /v1/sessions``, fire
``inbox.send`` (the outpost delivers after 0.4 s; a 3 s contract) with a unique message id
and a 10 s wait, again and again for the round's seconds, and close their session with
``DELETE /v1/sessions/{id}``. After each round the daemon's resident memory (``VmRSS`` of
its process) and the round's accepted fires/s are printed. A daemon that holds nothing past
the sessions that closed keeps its memory level after the first rounds (warm-up: caches,
the allocator's arenas) and its fires/s steady. Targets: RSS after the last round at most
1.25x that after round 2, fires/s in the last round at least 0.8x round 2's. The ledger is
checked at the end as ``bench/load.py`` checks it.

    python bench/soak.py [--rounds 8] [--seconds 15] [--sessions 100]
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
from http_load import LoadFigures, check_ledger, drive

RSS_TARGET = 1.25
RATE_TARGET = 0.8
SETTLE_S = 30.0


def rss_mb(pid: int) -> float:
    """The resident memory of process ``pid``, in MB (``VmRSS``, Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


async def _settled(url: str) -> None:
    """Wait until no open session has a pending transition (or ``SETTLE_S``)."""
    deadline = time.monotonic() + SETTLE_S
    async with httpx.AsyncClient(base_url=url, timeout=60) as client:
        while time.monotonic() < deadline:
            sessions = (await client.get("/v1/sessions")).json()
            if sum(s["pending"] for s in sessions) == 0:
                return
            await asyncio.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--sessions", type=int, default=100)
    options = parser.parse_args()
    rows: list[tuple[int, float, float, LoadFigures]] = []
    total = LoadFigures(sessions=options.sessions)
    with tempfile.TemporaryDirectory() as folder:
        ledger_url = f"sqlite:///{folder}/soak.db"
        arguments = ["--ledger", ledger_url, "--no-access-log", "--log-level", "warning"]
        with spawn_daemon(arguments) as daemon:
            pid = daemon.process.pid
            print(
                f"{options.rounds} rounds of {options.sessions} sessions for "
                f"{options.seconds:g} s against {daemon.url}; RSS at start {rss_mb(pid):.0f} MB"
            )
            print(f"{'round':>5} {'RSS MB':>8} {'fires/s':>8} {'p50 ms':>7} {'p99 ms':>7}  answers")
            for number in range(1, options.rounds + 1):
                load = asyncio.run(drive(daemon.url, options.sessions, options.seconds, close=True))
                asyncio.run(_settled(daemon.url))
                memory = rss_mb(pid)
                rate = len(load.accepted) / load.seconds
                rows.append((number, memory, rate, load))
                total.accepted |= load.accepted
                print(
                    f"{number:>5} {memory:>8.0f} {rate:>8.0f} {load.percentile(0.5):>7.0f} "
                    f"{load.percentile(0.99):>7.0f}  {dict(load.answers)}",
                    flush=True,
                )
        ledger = check_ledger(ledger_url, total)
    problems = [
        ledger.fires != len(total.accepted),
        ledger.settlements != ledger.fires,
        bool(ledger.unsettled or ledger.settled_twice or ledger.lost or ledger.unanswered),
        not (ledger.gapless and ledger.verified),
    ]
    print(
        f"ledger: {ledger.entries} entries, {ledger.fires} fires, {ledger.settlements} "
        f"settlements, gapless {ledger.gapless}, verifies {ledger.verified}: "
        + ("nothing lost, one settlement per fire" if not any(problems) else "PROBLEMS")
    )
    if len(rows) >= 3:
        _, base_rss, base_rate, _ = rows[1]
        last, last_rss, last_rate, _ = rows[-1]
        grew, kept = last_rss / base_rss, last_rate / base_rate
        print(
            f"round {last} against round 2: RSS {grew:.2f}x (target <= {RSS_TARGET}x), "
            f"fires/s {kept:.2f}x (target >= {RATE_TARGET}x)"
        )
    return 1 if any(problems) else 0


if __name__ == "__main__":
    sys.exit(main())
