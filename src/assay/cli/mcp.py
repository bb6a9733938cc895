"""``assay mcp``: serve the MCP tools for one application, over stdio or streamable HTTP."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from typing import TYPE_CHECKING, Any

from assay.cli.ledger import add_ledger_option
from assay.defaults import DEFAULT_APPLICATION, DEFAULT_LEASE_S
from assay.errors import AssayError

if TYPE_CHECKING:
    import socket

    from assay.host import Application
    from assay.ledger import Ledger

DEFAULT_PORT = 8765


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "mcp",
        help="serve the MCP tools (list_actions, fire, did_it_work, get_state, verify)",
        description="Serve an application's actions as MCP tools, with the official MCP SDK. "
        "Every fire, settlement and verdict goes to the ledger. With --transport stdio (the "
        "default) stdout carries the protocol and nothing else; with --transport http the "
        "endpoint is http://HOST:PORT/mcp, announced on stderr. Interrupted (SIGINT) or "
        "terminated (SIGTERM), it closes its sessions and stores their evidence first. Exit 0 "
        "when the client disconnects, 130 when interrupted, 143 when terminated, 2 on a usage "
        "error or when its answers cannot be written to stdout (a full disk).",
    )
    parser.add_argument(
        "--app",
        metavar="MODULE:ATTR",
        default=DEFAULT_APPLICATION,
        help=f"the application to host (default: the built-in example, {DEFAULT_APPLICATION})",
    )
    add_ledger_option(parser)
    parser.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    parser.add_argument(
        "--host", default="127.0.0.1", help="http: a loopback address (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"http: 0 picks a free one ({DEFAULT_PORT})"
    )
    parser.add_argument(
        "--lease-s",
        type=float,
        default=DEFAULT_LEASE_S,
        metavar="SECONDS",
        help="how long this server's lease on the ledger lasts unrenewed (default "
        f"{DEFAULT_LEASE_S:g}; renewed every third of it): once a killed server's lease has "
        "expired, the fires it left open are closed as unobservable",
    )
    parser.add_argument(
        "--tool-per-action",
        action="store_true",
        help="also serve one tool per action of the graph, named from its id (inbox.send: "
        "inbox_send), described by its does and reversibility, its input schema the "
        "action's arguments made strict (OpenAI strict function calling) with a nullable "
        "wait_ms; two actions making one name are refused at start",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    # The SDK and the host load only when the command runs, so `assay --help` stays quick.
    import asyncio

    from assay.host import load_application
    from assay.host.loopback import listen
    from assay.ledger import open_ledger
    from assay.ledger.lease import check_seconds
    from assay.mcp.http import require_loopback

    try:
        check_seconds(args.lease_s, "--lease-s")
        listener = None
        if args.transport == "http":  # an address it cannot listen on is refused first
            require_loopback(args.host)
            listener = listen(args.host, args.port, name="MCP endpoint server")
        with listener or contextlib.nullcontext():
            application = load_application(args.app)
            with open_ledger(args.ledger) as ledger:
                terminated = asyncio.run(_serve(application, ledger, args, listener))
    except AssayError as error:
        print(f"assay mcp: error: {error}", file=sys.stderr)
        return 2
    return TERMINATED if terminated else 0


TERMINATED = 128 + signal.SIGTERM
"""The exit code after a SIGTERM, as a shell reports a process that signal ended."""


async def _serve(
    application: Application,
    ledger: Ledger,
    args: argparse.Namespace,
    listener: socket.socket | None,
) -> bool:
    """Serve until the client is done or SIGTERM; whether it was SIGTERM. Ended either way
    (or by SIGINT), the host closes its sessions and stores their evidence."""
    import asyncio

    this = asyncio.current_task()
    assert this is not None
    serving = asyncio.ensure_future(_serve_until_done(application, ledger, args, listener))
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, serving.cancel)
    try:
        await serving
    except asyncio.CancelledError:
        if this.cancelling():
            raise  # SIGINT: asyncio.run cancels this task, then raises KeyboardInterrupt
        return True
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
    return False


async def _serve_until_done(
    application: Application,
    ledger: Ledger,
    args: argparse.Namespace,
    listener: socket.socket | None,
) -> None:
    from assay.host import Host
    from assay.host.collector import prepare_to_serve
    from assay.mcp import build_server
    from assay.mcp.http import StreamableHttpEndpoint
    from assay.mcp.stdio import serve_stdio

    async with Host(application, ledger, lease_s=args.lease_s) as host:
        server = build_server(host, tool_per_action=args.tool_per_action)
        prepare_to_serve()
        if args.transport == "stdio":
            await serve_stdio(server)
            return
        async with StreamableHttpEndpoint(
            server, host=args.host, port=args.port, listener=listener
        ) as endpoint:
            print(
                f"assay mcp: serving {application.graph.app} at {endpoint.url}",
                file=sys.stderr,
                flush=True,
            )
            await endpoint.wait()
