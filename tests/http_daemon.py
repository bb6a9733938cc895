"""The daemon for tests: a real uvicorn server on a free loopback port over a real ``Host``.

``serving`` runs it in the test's own event loop (for ``httpx.AsyncClient`` tests);
``DaemonThread`` runs it in a loop of its own in a background thread, for synchronous
clients (Schemathesis, which speaks ``requests``). ``spawn_daemon`` runs ``assay serve`` as
a separate process and reads the URL it announces.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.host import Application, Host
from assay.host.loopback import LoopbackServer
from assay.ledger import Ledger
from assay.ledger.backends.memory import MemoryBackend
from assay.server import Token, create_app
from assay.server.config import DEFAULT_MAX_BODY_BYTES
from assay.workflow.definition import Workflow
from assay.workflow.examples import COMPETITOR_DEEP_DIVE
from assay.workflow.service import Workflows

SECRETS: Mapping[str, str] = {
    "reader": "reader-secret-0123456789",
    "actor": "actor-secret-0123456789",
    "reporter": "reporter-secret-0123456789",
    "admin": "admin-secret-0123456789",
}
SCOPES: Mapping[str, str] = {
    "reader": "read",
    "actor": "act",
    "reporter": "report",
    "admin": "admin",
}
TOKENS: tuple[Token, ...] = tuple(
    Token.parse(f"{name}:{SECRETS[name]}:{scope}") for name, scope in SCOPES.items()
)


def bearer(name: str) -> dict[str, str]:
    """The Authorization header of the test token called ``name``."""
    return {"Authorization": f"Bearer {SECRETS[name]}"}


@dataclass
class Served:
    """A running daemon: its URL and its host."""

    url: str
    host: Host


@contextlib.asynccontextmanager
async def serving(
    application: Application,
    *,
    tokens: Iterable[Token] = (),
    ledger: Ledger | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> AsyncIterator[Served]:
    """Host ``application`` and serve it over HTTP in this event loop."""
    ledger = ledger or Ledger(MemoryBackend())
    async with Host(application, ledger) as host:
        workflows = Workflows(ledger, workflows=[Workflow.from_mapping(COMPETITOR_DEEP_DIVE)])
        app = create_app(host, tokens=tokens, workflows=workflows, max_body_bytes=max_body_bytes)
        async with LoopbackServer(app, name="assay") as server:
            yield Served(server.url, host)


class DaemonThread:
    """``serving`` in a background thread with its own event loop, for synchronous clients."""

    def __init__(self, application: Application, *, tokens: Iterable[Token] = ()) -> None:
        self.application = application
        self.tokens = tuple(tokens)
        self.served: Served | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="assay test daemon", daemon=True)

    def __enter__(self) -> Served:
        self._thread.start()
        self._ready.wait(30)
        if self._failure is not None:
            raise self._failure
        assert self.served is not None, "the test daemon did not start within 30 s"
        return self.served

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            async with serving(self.application, tokens=self.tokens) as served:
                self.served = served
                self._ready.set()
                await self._stop.wait()

        try:
            asyncio.run(main())
        except BaseException as error:
            self._failure = error
            self._ready.set()


@dataclass
class Spawned:
    """An ``assay serve`` process: its URL, the process, and what it logged so far (on
    stderr; ``out``: on stdout, where uvicorn writes its access log, when captured)."""

    url: str
    process: subprocess.Popen[str]
    log: list[str]
    out: list[str]


@contextlib.contextmanager
def spawn_daemon(
    arguments: Sequence[str],
    *,
    environ: Mapping[str, str] | None = None,
    timeout: float = 60,
    command: Sequence[str] = (sys.executable, "-m", "assay"),
    cwd: str | os.PathLike[str] | None = None,
    stdout: bool = False,
) -> Iterator[Spawned]:
    """Run ``assay serve --port 0 ARGUMENTS`` (``command`` is how ``assay`` is run, in
    ``cwd``); yield it once it listens; stop it (SIGINT). ``stdout``: capture its stdout."""
    env = {**os.environ, **(environ or {})}
    process = subprocess.Popen(
        [*command, "serve", "--port", "0", *arguments],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE if stdout else subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=cwd,
    )
    assert process.stderr is not None
    lines: list[str] = []
    url = None
    timer = threading.Timer(timeout, process.kill)
    timer.start()
    try:
        for line in process.stderr:
            lines.append(line)
            if "listening on " in line:
                url = line.rsplit("listening on ", 1)[1].strip()
                break
    finally:
        timer.cancel()
    if url is None:
        process.wait()
        raise AssertionError("assay serve did not start:\n" + "".join(lines))
    drain = threading.Thread(target=_drain, args=(process.stderr, lines), daemon=True)
    drain.start()
    out: list[str] = []
    drain_out = threading.Thread(target=_drain, args=(process.stdout, out), daemon=True)
    if process.stdout is not None:
        drain_out.start()
    try:
        yield Spawned(url, process, lines, out)
    finally:
        if process.poll() is None:
            process.send_signal(2)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        drain.join(5)
        process.stderr.close()
        if process.stdout is not None:
            drain_out.join(5)
            process.stdout.close()


def _drain(stream: Any, lines: list[str]) -> None:
    for line in stream:
        lines.append(line)
