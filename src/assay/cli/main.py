"""``assay``: the command-line entry point and its subcommands.

Exit codes, shared by every subcommand:

    0  success (for ``verify``: the expression held)
    1  a definite negative answer (for ``verify``: it did not hold, or could not be evaluated;
       for ``ledger``: the ledger fails its checks, the first bad entry named)
    2  usage error or invalid input (bad arguments, unreadable state, expression syntax), or
       an answer that could not be written to standard output (a full disk): it is incomplete
   70  internal error: a bug in assay (the traceback with ASSAY_DEBUG=1)
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TextIO, cast

from assay import __version__
from assay.cli import demo, example, ledger, mcp, serve, verify, workflow
from assay.cli.arguments import refuse_undecodable
from assay.output import OutputError, WatchedOutput, discard_stdout

EXIT_CODES = """exit codes:
  0  success (verify: the expression held)
  1  negative answer (verify: it did not hold or could not be evaluated;
     ledger: the ledger fails its checks)
  2  usage error or invalid input, or output that could not be written
     (a full disk; what was written is incomplete)
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
    stdout = sys.stdout
    sys.stdout = cast(TextIO, WatchedOutput(stdout))
    command, code = "assay", None
    try:
        try:
            args = _parse(argv)
        except SystemExit:  # help, a version or a usage error, printed
            sys.stdout.flush()
            raise
        if args is not None:
            command = _command_name(args)
            code = _run(args)
        sys.stdout.flush()  # the whole answer is out before the exit code says so
        return 2 if code is None else code
    # The command's own exit code stands when it failed (a ledger that fails its checks still
    # exits 1); output that failed a command that succeeded is no success.
    except BrokenPipeError:
        # The reader went away (e.g. `| head`); nothing more to say to it.
        discard_stdout()
        return code or 0
    except OutputError as error:
        # A full disk is the output's failure, not assay's: say what did not arrive.
        discard_stdout()
        print(f"{command}: error: {error}", file=sys.stderr)
        return code or error.code or 2
    finally:
        sys.stdout = stdout


def _parse(argv: Sequence[str] | None) -> argparse.Namespace | None:
    """The arguments, or None (the help printed) when no command is given."""
    parser = build_parser()
    problem = refuse_undecodable(sys.argv[1:] if argv is None else argv)
    if problem is not None:
        parser.error(problem)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return None
    return args


def _command_name(args: argparse.Namespace) -> str:
    """``assay ledger export``, ``assay verify``: the command the arguments run."""
    words = (getattr(args, name, None) for name in ("command", "ledger_command"))
    return " ".join(["assay", *(word for word in words if word)])


def _output_failure(error: Exception) -> OutputError | BrokenPipeError | None:
    """The output failure behind ``error`` when a task group (the demo's) gathered one and
    nothing else."""
    if not isinstance(error, ExceptionGroup):
        return None
    failed, rest = error.split((OutputError, BrokenPipeError))
    if failed is None or rest is not None:
        return None
    leaf: BaseException = failed
    while isinstance(leaf, BaseExceptionGroup):
        leaf = leaf.exceptions[0]
    return leaf if isinstance(leaf, OutputError | BrokenPipeError) else None


def _run(args: argparse.Namespace) -> int:
    try:
        code: int = args.run(args)
    except (BrokenPipeError, OutputError):
        raise  # main's to answer, as for a write after the command
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        failed = _output_failure(error)
        if failed is not None:
            raise failed from error
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
