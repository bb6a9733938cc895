"""``assay``: the command-line entry point and its subcommands.

Exit codes, shared by every subcommand:

    0  success (for ``verify``: the expression held)
    1  a definite negative answer (for ``verify``: it did not hold, or could not be evaluated;
       for ``ledger``: the ledger fails its checks, the first bad entry named)
    2  usage error or invalid input (bad arguments, unreadable state, expression syntax)
   70  internal error: a bug in assay (the traceback with ASSAY_DEBUG=1)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from assay import __version__
from assay.cli import demo, example, ledger, mcp, serve, verify, workflow
from assay.cli.arguments import refuse_undecodable

EXIT_CODES = """exit codes:
  0  success (verify: the expression held)
  1  negative answer (verify: it did not hold or could not be evaluated;
     ledger: the ledger fails its checks)
  2  usage error or invalid input
 70  internal error (a bug in assay)
"""


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors that end in a hint and exit with code 2, and an argument
    a command does not take refused by that command (argparse leaves it to the top level,
    which shows the usage of ``assay`` and hints at ``assay --help``)."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # A command's parser is given every argument after the command's name; one it does
        # not take is no other parser's either.
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed, extras

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n(run '{self.prog} --help' for usage)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="assay",
        description="Ground truth for agent actions: fire, observe the real state, answer "
        "with evidence.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"assay {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    verify.register(commands)
    example.register(commands)
    ledger.register(commands)
    serve.register(commands)
    mcp.register(commands)
    workflow.register(commands)
    demo.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    problem = refuse_undecodable(sys.argv[1:] if argv is None else argv)
    if problem is not None:
        parser.error(problem)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        code: int = args.run(args)
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); nothing more to say to it.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        if os.environ.get("ASSAY_DEBUG"):
            raise
        print(
            f"assay: internal error: {type(error).__name__}: {error}\n"
            "(this is a bug in assay; run again with ASSAY_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 70
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
