"""``run``: the daemon's life — load the application, open the ledger, host, serve, stop.

One uvicorn worker per daemon; several daemons (on one machine or many) share one
PostgreSQL ledger for one gapless order (docs/operations.md). The host is stopped, and
every queued entry stored, before the ledger closes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator, Sequence

import uvicorn

from assay.host import Host, load_application
from assay.host.collector import prepare_to_serve
from assay.host.loopback import KEEP_ALIVE_S, listen
from assay.ledger.credentials import hide_password
from assay.ledger.url import open_ledger
from assay.redaction import Redaction
from assay.server.access_log import withhold_query_values
from assay.server.app import create_app
from assay.server.config import ServerConfig
from assay.workflow.definition import Workflow, load_workflow
from assay.workflow.examples import COMPETITOR_DEEP_DIVE
from assay.workflow.service import Workflows, workflow_file, workflow_files

logger = logging.getLogger("assay.server")


async def run(config: ServerConfig, *, ready: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted (SIGINT/SIGTERM); ``ready`` is called with the URL once the
    socket listens. ``RequestError`` for unsafe settings, ``ApplicationError`` for an address
    it cannot listen on (a port in use) and ``WorkflowError`` for a workflow file that cannot
    run, all before anything else is opened.

    It runs the process: once the app is built, the collector is set up for serving
    (``prepare_to_serve``)."""
    config.check()
    listener = listen(config.host, config.port, name="daemon")
    with listener:  # closed however the run ends; uvicorn's own close is harmless
        for path in workflow_files(config.workflows).values():
            load_workflow(path)  # a file that cannot run is refused now, not at its first run
        application = load_application(config.app)
        redaction = Redaction((*application.redaction, *config.redact))
        ledger = open_ledger(config.ledger, redaction=redaction)
        try:
            idle_s = config.session_idle_s or None  # 0: sessions never expire
            async with Host(
                application,
                ledger,
                redaction=redaction,
                session_idle_s=idle_s,
                thresholds=dict(config.thresholds),
                lease_s=config.lease_s,
            ) as host:
                workflows = Workflows(
                    ledger,
                    directories=config.workflows,
                    workflows=_built_in(config.workflows),
                    session=host.session(None),
                    default_wall_s=config.workflow_wall_s,
                )
                app = create_app(
                    host,
                    tokens=config.tokens,
                    workflows=workflows,
                    max_body_bytes=config.max_body_bytes,
                )
                withhold_query_values()  # uvicorn's access log would write ?token=...
                server = _Server(
                    uvicorn.Config(
                        app,
                        host=config.host,
                        port=config.port,
                        lifespan="off",
                        log_level=config.log_level,
                        access_log=config.access_log,
                        timeout_keep_alive=KEEP_ALIVE_S,
                    )
                )
                prepare_to_serve()
                announce = asyncio.get_running_loop().create_task(_announce(server, config, ready))
                try:
                    await server.serve([listener])
                finally:
                    announce.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await announce
        finally:
            ledger.close()


class _Server(uvicorn.Server):
    """uvicorn, stopped by SIGINT or SIGTERM without re-raising the signal afterwards, so
    the host still stops and stores its queued evidence before the process exits."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, self._stop_serving)
        try:
            yield
        finally:
            for number in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(number)

    def _stop_serving(self) -> None:
        # A second signal stops at once, without waiting for open requests.
        self.force_exit = self.should_exit
        self.should_exit = True


async def _announce(
    server: uvicorn.Server, config: ServerConfig, ready: Callable[[str], None] | None
) -> None:
    while not server.started:
        await asyncio.sleep(0.02)
    sockets = [s for listener in server.servers for s in listener.sockets]
    host, port = sockets[0].getsockname()[:2]
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    tokens = ", ".join(
        f"{t.name} ({','.join(sorted(s.value for s in t.scopes))})" for t in config.tokens
    )
    logger.info(
        "assay serve: %s on %s; ledger %s; %s",
        config.app,
        url,
        hide_password(config.ledger),
        f"tokens: {tokens}" if tokens else "no tokens (loopback only)",
    )
    if ready is not None:
        ready(url)


def _built_in(directories: Sequence[str]) -> list[Workflow]:
    """The built-in workflow, unless a ``NAME.yaml`` of the same name in one of the
    operator's ``directories`` takes its place (a registered workflow would shadow it)."""
    built_in = Workflow.from_mapping(COMPETITOR_DEEP_DIVE)
    return [] if workflow_file(built_in.name, directories) is not None else [built_in]
