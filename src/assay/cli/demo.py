"""``assay demo``: the built-in example application driven through the MCP port."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Any

from assay.cli.ledger import add_ledger_option
from assay.errors import AssayError


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "demo",
        help="run the demo: the example application, the daemon, an agent on MCP",
        description="Start the built-in example application and the daemon (HTTP API and MCP "
        "endpoint on loopback, in this process), drive it through MCP as an agent would, "
        "print each answer, then verify the ledger.",
    )
    add_ledger_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from rich.console import Console

    from assay.cli.tour import run_demo
    from assay.ledger import open_ledger

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits with 1 here, from inside the demo's task groups; the command line
            # answers a reader that went away itself (quietly, exit 0).
            raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    console = _Console(highlight=False)
    try:
        with open_ledger(args.ledger) as ledger:
            return asyncio.run(run_demo(ledger, console))
    except AssayError as error:
        print(f"assay demo: error: {error}", file=sys.stderr)
        return 2
