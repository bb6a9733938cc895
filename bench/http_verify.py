"""``POST /v1/verify`` through the daemon against a bare Starlette endpoint, side by side.

Both servers run in their own process under the same uvicorn settings (one worker, the
same loop and HTTP implementations, no access log) and the collector settings ``assay serve``
uses (``prepare_to_serve``: the bare endpoint gains nothing from them, its heap being small),
and face the same load generator: 64
keep-alive connections, each sending its next request as soon as the last answer arrives,
from a separate process that speaks HTTP/1.1 over raw asyncio sockets (so the generator
is not the bottleneck). The bare endpoint answers a constant JSON body; the daemon
evaluates the contract on the outpost's state and stores the verdict durably in its
ledger (SQLite by default, as ``assay serve`` does) before it answers. Target: the daemon
at 0.6x the bare endpoint's requests/s or better.

    python bench/http_verify.py [--seconds 8] [--rounds 5] [--concurrency 64] [--profile]
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _timing import ratio

HERE = Path(__file__).resolve().parent


TARGET = 0.6
EXPRESSION = "inbox.unread === 3 && drone.payload === 'stowed'"
BODY = json.dumps({"expression": EXPRESSION, "timeout_ms": 0}).encode()
CONSTANT = {
    "passed": True,
    "expression": EXPRESSION,
    "result": True,
    "narrative": "Expression evaluated to true after 1 poll cycle (0ms).",
    "elapsed_ms": 0,
    "poll_cycles": 1,
    "changed_fields": [],
}


def uvicorn_config(app: Any) -> Any:
    """The one set of server settings both servers run under."""
    import uvicorn

    return uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        loop="auto",
        http="auto",
        workers=1,
        lifespan="off",
        access_log=False,
        log_level="warning",
    )


async def _serve(app: Any) -> None:
    import uvicorn

    from assay.host.collector import prepare_to_serve

    prepare_to_serve()  # as assay serve does; both servers, though only the daemon gains

    server = uvicorn.Server(uvicorn_config(app))
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}", flush=True)
    await task


def serve_bare() -> None:
    """A bare Starlette endpoint answering a constant JSON body."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def verify(request: Request) -> JSONResponse:
        return JSONResponse(CONSTANT)

    asyncio.run(_serve(Starlette(routes=[Route("/v1/verify", verify, methods=["POST"])])))


def serve_fastapi() -> None:
    """Diagnostic: FastAPI parsing the same ``VerifyRequest`` body, answering the constant."""
    from fastapi import FastAPI, Response

    from assay.host.wire import VerifyRequest

    app = FastAPI()
    constant = json.dumps(CONSTANT).encode()

    @app.post("/v1/verify")
    async def verify(body: VerifyRequest) -> Response:
        return Response(constant, media_type="application/json")

    asyncio.run(_serve(app))


def serve_assay(ledger_url: str, profile: str | None) -> None:
    """The daemon's app over the outpost, as ``assay serve`` builds it."""
    from assay.examples.outpost import APPLICATION
    from assay.host import Host
    from assay.ledger.url import open_ledger
    from assay.server import create_app

    async def main() -> None:
        with open_ledger(ledger_url) as ledger:
            async with Host(APPLICATION, ledger) as host:
                await _serve(create_app(host))

    if profile is None:
        asyncio.run(main())
        return
    import cProfile
    import signal

    profiler = cProfile.Profile()

    def stop(number: int, frame: Any) -> None:
        profiler.disable()
        profiler.dump_stats(profile)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    profiler.enable()
    asyncio.run(main())


class _Connection(asyncio.Protocol):
    """One keep-alive connection sending the next request as soon as an answer is whole."""

    def __init__(self, request: bytes, latencies: list[float], done: asyncio.Future[None]) -> None:
        self.request = request
        self.latencies = latencies
        self.done = done
        self.buffer = b""
        self.sent = 0.0
        self.statuses: dict[int, int] = {}
        self.stopping = False
        self.answered = 0  # warm-up included
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # uvloop's transports are not asyncio.Transport instances
        self._send()

    def _send(self) -> None:
        self.sent = time.perf_counter()
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end]
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if len(self.buffer) < end + 4 + length:
                return
            status = int(head[9:12])
            self.statuses[status] = self.statuses.get(status, 0) + 1
            self.buffer = self.buffer[end + 4 + length :]
            self.latencies.append(time.perf_counter() - self.sent)
            self.answered += 1
            if self.stopping:
                self.transport.close()
                return
            self._send()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _load(url: str, seconds: float, warmup: float, concurrency: int) -> dict[str, Any]:
    host, port = url.removeprefix("http://").split(":")
    request = (
        f"POST /v1/verify HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(BODY)}\r\n\r\n"
    ).encode() + BODY
    loop = asyncio.get_running_loop()
    latencies: list[float] = []
    connections: list[_Connection] = []
    for _ in range(concurrency):
        done: asyncio.Future[None] = loop.create_future()
        _, protocol = await loop.create_connection(
            lambda done=done: _Connection(request, latencies, done), host, int(port)
        )
        connections.append(protocol)
    await asyncio.sleep(warmup)
    latencies.clear()
    for connection in connections:
        connection.statuses.clear()
    started = time.perf_counter()
    await asyncio.sleep(seconds)
    count = len(latencies)
    elapsed = time.perf_counter() - started
    measured = sorted(latencies[:count])
    for connection in connections:
        connection.stopping = True
    await asyncio.wait([c.done for c in connections], timeout=30)
    statuses: dict[int, int] = {}
    for connection in connections:
        for status, seen in connection.statuses.items():
            statuses[status] = statuses.get(status, 0) + seen
    return {
        "requests": count,
        "rps": count / elapsed,
        "p50_ms": measured[len(measured) // 2] * 1000,
        "p99_ms": measured[int(len(measured) * 0.99)] * 1000,
        "statuses": statuses,
        "answered": sum(connection.answered for connection in connections),
    }


def load(url: str, seconds: float, warmup: float, concurrency: int) -> None:
    """The load generator's process: prints its figures as JSON."""
    import uvloop

    print(json.dumps(uvloop.run(_load(url, seconds, warmup, concurrency))), flush=True)


def _spawn(*arguments: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, __file__, *arguments], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def _cpu_seconds(pid: int) -> float:
    """User and system CPU the process (all its threads) has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(name: str, arguments: list[str], options: argparse.Namespace) -> dict[str, Any]:
    server, url = _spawn("--serve", *arguments)
    try:
        cpu_before = _cpu_seconds(server.pid)
        generator = subprocess.run(
            [sys.executable, __file__, "--load", url, "--seconds", str(options.seconds),
             "--warmup", str(options.warmup), "--concurrency", str(options.concurrency)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        cpu = _cpu_seconds(server.pid) - cpu_before
    finally:
        server.terminate()
        server.wait(30)
    figures: dict[str, Any] = json.loads(generator.stdout)
    # The server's CPU per answer (warm-up included): steadier than req/s on a shared machine.
    figures["cpu_us"] = cpu / max(figures["answered"], 1) * 1e6
    print(
        f"  {name:<34} {figures['rps']:>9,.0f} req/s   p50 {figures['p50_ms']:6.2f} ms   "
        f"p99 {figures['p99_ms']:6.2f} ms   server CPU {figures['cpu_us']:4.0f} us/request   "
        f"statuses {figures['statuses']}"
    )
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of each")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--profile", action="store_true", help="cProfile the daemon's run")
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--load", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        kind, *rest = options.serve
        if kind == "bare":
            serve_bare()
        elif kind == "fastapi":
            serve_fastapi()
        else:
            serve_assay(rest[0], rest[1] if len(rest) > 1 else None)
        return 0
    if options.load:
        load(options.load, options.seconds, options.warmup, options.concurrency)
        return 0
    import uvicorn

    print(
        f"POST /v1/verify, {options.concurrency} concurrent keep-alive clients, "
        f"{options.seconds:g} s after {options.warmup:g} s warm-up, {options.rounds} alternating "
        f"rounds; uvicorn {uvicorn.__version__}, 1 worker, asyncio's own loop (as assay serve "
        f"runs) and httptools, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    rounds: list[dict[str, dict[str, Any]]] = []
    with tempfile.TemporaryDirectory() as folder:
        profile = str(Path(folder) / "assay.prof")
        for number in range(options.rounds):
            print(f"round {number + 1}")
            figures = {
                "bare": _measure("bare Starlette (constant JSON)", ["bare"], options),
                "fastapi": _measure("FastAPI + VerifyRequest (constant)", ["fastapi"], options),
                "sqlite": _measure(
                    "assay daemon (SQLite ledger)",
                    ["assay", f"sqlite:///{folder}/bench-{number}.db"]
                    + ([profile] if options.profile and number == 0 else []),
                    options,
                ),
                "memory": _measure("assay daemon (memory ledger)", ["assay", "memory:"], options),
            }
            rounds.append(figures)
        if options.profile:
            import pstats

            print("\nprofile of the daemon (SQLite ledger, round 1), by own time:")
            pstats.Stats(profile).sort_stats("tottime").print_stats(25)

    def median_ratio(name: str) -> float:
        return float(statistics.median(r[name]["rps"] / r["bare"]["rps"] for r in rounds))

    def median_us(name: str) -> float:
        return float(statistics.median(1e6 / r[name]["rps"] for r in rounds))

    shipped = median_ratio("sqlite")
    print(
        f"\nratio, median of {options.rounds} rounds (SQLite ledger, as shipped): "
        f"{ratio(shipped)} the bare endpoint's req/s (target >= {TARGET}x: "
        f"{'met' if shipped >= TARGET else 'MISSED'}); per round "
        + ", ".join(ratio(r["sqlite"]["rps"] / r["bare"]["rps"]) for r in rounds)
        + f"; memory ledger: {ratio(median_ratio('memory'))}; "
        f"FastAPI parsing the body alone: {ratio(median_ratio('fastapi'))}"
    )
    print(
        "per request (1 / req/s, one server core, medians): "
        f"bare {median_us('bare'):.0f} us, FastAPI body parsing {median_us('fastapi'):.0f} us, "
        f"daemon {median_us('sqlite'):.0f} us"
    )

    def median_cpu(name: str) -> float:
        return float(statistics.median(r[name]["cpu_us"] for r in rounds))

    print(
        "server CPU per request (all its threads, medians): "
        f"bare {median_cpu('bare'):.0f} us, daemon {median_cpu('sqlite'):.0f} us; "
        f"bare / daemon {ratio(median_cpu('bare') / median_cpu('sqlite'))}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
