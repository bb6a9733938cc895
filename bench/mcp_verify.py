"""Benchmark the MCP port: ``verify`` round trips over stdio against the SDK's trivial echo tool.

    .venv/bin/python bench/mcp_verify.py [--quick] [--calls N] [--profile]

Every server runs as a subprocess driven by the SDK's own client over stdio, in the same run,
in alternating rounds of sequential calls: ``assay mcp`` hosting the built-in example with a
SQLite ledger in a temporary folder (every verify records a verdict and answers only once it
is durable, as shipped), the same with a ``memory:`` ledger (no disk), and an ``MCPServer``
with one ``echo`` tool (this file, run with ``--echo-server``), with the collector settings
``assay mcp`` uses (``prepare_to_serve``), twice: over the SDK's stdio transport (the peer
the target names) and over assay's (``assay.mcp.stdio``, which ``assay mcp`` serves with),
so that the transport's share and assay's own cost can be told apart. Each call is timed
from the client's send to its parsed result.

The target (issue 7) is assay, as shipped, at >= 0.8x the SDK echo tool's calls per second.
Then the same calls are made in this process without a transport, to show where a round
trip's time goes; ``--profile`` adds a cProfile of the verify tool. Informational: the exit
status is 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from _timing import gc_paused, ratio

HERE = Path(__file__).resolve().parent
VENV_BIN = Path(sys.executable).parent
TARGET = 0.8
PYTHON = sys.version.split()[0]
EXPRESSION = "inbox.unread === 3 && drone.payload === 'stowed'"


def echo_server(transport: str) -> None:
    """The SDK's trivial server: one tool that answers its argument, over the SDK's stdio
    transport (``sdk``) or assay's (``assay``)."""
    from mcp.server import MCPServer

    from assay.host.collector import prepare_to_serve
    from assay.mcp.stdio import serve_stdio

    server: Any = MCPServer("echo", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Answer ``text``."""
        return text

    prepare_to_serve()  # the collector settings assay mcp runs with
    if transport == "sdk":
        server.run("stdio")
    else:
        asyncio.run(serve_stdio(server))


def _percentile(samples: Sequence[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


class Peer:
    """One server subprocess and the SDK client talking to it over stdio."""

    def __init__(self, name: str, command: str, args: list[str], tool: str, arguments: Any):
        self.name = name
        self.command = command
        self.args = args
        self.tool = tool
        self.arguments = arguments
        self.samples: list[float] = []

    async def round(self, client: Any, calls: int, record: bool) -> None:
        for _ in range(calls):
            started = time.perf_counter()
            result = await client.call_tool(self.tool, self.arguments)
            elapsed = time.perf_counter() - started
            if result.is_error:
                raise RuntimeError(f"{self.name}: {result.content}")
            if record:
                self.samples.append(elapsed)


async def round_trips(calls: int, rounds: int, warmup: int, sqlite: str) -> dict[str, Peer]:
    """Alternating rounds of sequential calls, each peer in its own subprocess."""
    from mcp import Client, StdioServerParameters

    assay = str(VENV_BIN / "assay")
    verify = {"expression": EXPRESSION}
    echo = {"text": "hi"}
    python = sys.executable
    peers = [
        Peer("assay, SQLite", assay, ["mcp", "--ledger", sqlite], "verify", verify),
        Peer("assay, memory:", assay, ["mcp", "--ledger", "memory:"], "verify", verify),
        Peer("echo tool", python, [__file__, "--echo-server", "sdk"], "echo", echo),
        Peer("echo, assay stdio", python, [__file__, "--echo-server", "assay"], "echo", echo),
    ]
    async with AsyncExitStack() as stack:
        clients = []
        for peer in peers:
            server = StdioServerParameters(
                command=peer.command, args=peer.args, cwd=str(HERE.parent)
            )
            clients.append(await stack.enter_async_context(Client(server)))
        for peer, client in zip(peers, clients, strict=True):
            await peer.round(client, warmup, record=False)
        with gc_paused():
            for number in range(rounds):
                order = list(zip(peers, clients, strict=True))
                for peer, client in order if number % 2 == 0 else reversed(order):
                    await peer.round(client, calls, record=True)
    return {peer.name: peer for peer in peers}


async def in_process(calls: int, sqlite: str, profile: bool) -> dict[str, float]:
    """Median ms per call without a transport: the host's verify, and the MCP tool around it."""
    from assay.examples.outpost import APPLICATION
    from assay.host import Host
    from assay.host.wire import VerifyRequest
    from assay.ledger import open_ledger
    from assay.mcp import build_server

    request = VerifyRequest(expression=EXPRESSION)
    figures: dict[str, float] = {}
    for label, url in (("SQLite", sqlite), ("memory:", "memory:")):
        with open_ledger(url) as ledger:
            async with Host(APPLICATION, ledger) as host:
                server = build_server(host)
                arguments = {"expression": EXPRESSION}
                for _ in range(calls // 5):
                    await server.call_tool("verify", arguments)
                # Interleaved, one call each in turn, so that both see the same disk.
                host_times: list[float] = []
                tool_times: list[float] = []
                with gc_paused():
                    for _ in range(calls):
                        started = time.perf_counter()
                        await host.verify(request)
                        between = time.perf_counter()
                        await server.call_tool("verify", arguments)
                        host_times.append(between - started)
                        tool_times.append(time.perf_counter() - between)
                figures[f"host.verify, {label}"] = statistics.median(host_times)
                figures[f"verify tool, {label}"] = statistics.median(tool_times)
                if profile and url == sqlite:
                    profiler = cProfile.Profile()
                    profiler.enable()
                    for _ in range(calls):
                        await server.call_tool("verify", arguments)
                    profiler.disable()
                    print(f"\nthe verify tool in process ({label} ledger), by own time:")
                    stats = pstats.Stats(profiler)
                    stats.strip_dirs().sort_stats("tottime").print_stats(15)
    return {label: seconds * 1000 for label, seconds in figures.items()}


def report(peers: dict[str, Peer], local: dict[str, float], rounds: int, calls: int) -> None:
    """Print the figures, the ratio against the target and where the time goes."""
    print(f"{'stdio round trip':18} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs echo':>8}")
    rates = {name: len(p.samples) / sum(p.samples) for name, p in peers.items()}
    echo = rates["echo tool"]
    for name, peer in peers.items():
        p50 = _percentile(peer.samples, 0.5) * 1000
        p99 = _percentile(peer.samples, 0.99) * 1000
        print(f"{name:18} {rates[name]:9,.0f} {p50:8.2f} {p99:8.2f} {ratio(rates[name] / echo):>8}")
    relative = rates["assay, SQLite"] / echo
    verdict = "PASS" if relative >= TARGET else "MISS"
    print(
        f"assay verify (durable SQLite ledger) / echo tool: {ratio(relative)} calls/s "
        f"(target >= {TARGET}x: {verdict}); {rounds} alternating rounds of {calls} calls"
    )
    same = rates["assay, SQLite"] / rates["echo, assay stdio"]
    transport = rates["echo, assay stdio"] / echo
    print(
        f"transport aside: assay verify / the echo tool on assay's stdio transport: "
        f"{ratio(same)}; that transport / the SDK's, for the echo tool: {ratio(transport)}"
    )
    median = {name: _percentile(p.samples, 0.5) * 1000 for name, p in peers.items()}
    print("\nwhere a verify round trip's time goes (median ms per call):")
    rows = [
        ("evaluate + record the verdict, memory: ledger", local["host.verify, memory:"]),
        (
            "durable SQLite commit of the verdict",
            local["host.verify, SQLite"] - local["host.verify, memory:"],
        ),
        (
            "MCP tool layer (arguments, result, output validation)",
            local["verify tool, SQLite"] - local["host.verify, SQLite"],
        ),
        (
            "stdio, JSON-RPC and the SDK client",
            median["assay, SQLite"] - local["verify tool, SQLite"],
        ),
        ("= the round trip, SQLite ledger", median["assay, SQLite"]),
        ("the echo tool's whole round trip", median["echo tool"]),
        ("the same on assay's stdio transport", median["echo, assay stdio"]),
    ]
    for label, value in rows:
        print(f"  {label:56} {value:6.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--echo-server", choices=("sdk", "assay"), help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="fewer calls")
    parser.add_argument("--calls", type=int, default=500, help="calls per round and peer")
    parser.add_argument("--profile", action="store_true", help="profile the verify tool")
    args = parser.parse_args()
    if args.echo_server:
        echo_server(args.echo_server)
        return
    calls = 100 if args.quick else args.calls
    rounds = 2 if args.quick else 6
    with tempfile.TemporaryDirectory() as folder:
        sqlite = f"sqlite:///{Path(folder) / 'bench.db'}"
        local_sqlite = f"sqlite:///{Path(folder) / 'local.db'}"
        print(f"MCP verify round trips over stdio vs the SDK's echo tool, Python {PYTHON}")
        peers = asyncio.run(round_trips(calls, rounds, max(20, calls // 5), sqlite))
        local = asyncio.run(in_process(calls * 2, local_sqlite, args.profile))
        report(peers, local, rounds, calls)


if __name__ == "__main__":
    main()
