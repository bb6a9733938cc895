"""``assay example NAME``: run one of the built-in examples."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from assay.cli.ledger import add_ledger_option
from assay.errors import AssayError

if TYPE_CHECKING:
    from assay.ledger import Ledger


def _already_true(ledger: Ledger) -> int:
    from assay.cli import already_true  # the MCP SDK loads only when it runs

    return already_true.main(ledger)


EXAMPLES: dict[str, tuple[str, Callable[[Ledger], int]]] = {
    "already-true": (
        "the already-true press, an ordinary press and a writes-only press, made through the "
        "MCP tools as a remote model would, as JSON lines",
        _already_true,
    ),
}


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "example",
        help="run a built-in example",
        description="Run a built-in example against the real library and print what it "
        "saw. Examples: " + "; ".join(f"{name}: {about}" for name, (about, _) in EXAMPLES.items()),
    )
    parser.add_argument("name", choices=sorted(EXAMPLES), metavar="NAME", help=", ".join(EXAMPLES))
    add_ledger_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from assay.ledger import open_ledger

    _, main = EXAMPLES[args.name]
    try:
        with open_ledger(args.ledger) as ledger:
            return main(ledger)
    except AssayError as error:
        print(f"assay example: error: {error}", file=sys.stderr)
        return 2
