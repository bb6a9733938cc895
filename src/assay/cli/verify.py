"""``assay verify EXPR``: run the verification loop against a JSON file or a live endpoint.

EXPR is an expression, or a declarative contract written as a JSON object (the expression
language has no object literals, so the two never overlap). A state read from stdin cannot
change, so it is checked once, at once. The expression compiler, the probes and the loop load
only when the command runs, so ``assay --help`` needs none of them.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any, Final

from assay.cli.arguments import whole_number
from assay.cli.ledger_location import sqlite_path_problem
from assay.defaults import DEFAULT_POLL_INTERVAL_MS, DEFAULT_TIMEOUT_MS, HTTP_READ_TIMEOUT
from assay.errors import AssayError, ContractError, ExpressionSyntaxError, ProbeConfigError
from assay.output import answer

if TYPE_CHECKING:
    from assay.expr.predicate import Predicate
    from assay.state.store import StateStore
    from assay.verify.loop import VerifyOptions
    from assay.verify.outcome import VerificationOutcome


MIN_INTERVAL_MS: Final = 10
"""The shortest --interval-ms: re-reading more often only spins the processor."""


def _longest_wait() -> tuple[int, str]:
    """The longest --timeout-ms, --settle-ms and --interval-ms: the longest wait the HTTP and
    MCP ports accept, so a wait that works here works there too."""
    from assay.host.wire import MAX_WAIT_MS

    return MAX_WAIT_MS, "the longest wait the HTTP port accepts"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "verify",
        help="verify an expression against a JSON state file or a live JSON endpoint",
        description="Evaluate EXPR against the application's state until it holds or the "
        "timeout runs out, and print the VerificationOutcome as JSON. The state comes from "
        "a JSON file (re-read when it changes), stdin (checked once, as it cannot change) or "
        "an HTTP JSON endpoint (polled). Exit 0 when it held, 1 when it did not (or could not "
        "be evaluated), 2 on a syntax or usage error.",
    )
    parser.add_argument(
        "expression",
        metavar="EXPR",
        help="""e.g. 'inbox.sent_count >= 15', or a declarative contract as a JSON object, """
        """e.g. '{"inbox.sent_count": {"gte": 15}}'""",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--state",
        metavar="FILE",
        help="a JSON file holding one object ('-' for stdin: read once and checked at once)",
    )
    source.add_argument("--probe", metavar="URL", help="an HTTP endpoint returning a JSON object")
    source.add_argument(
        "--page",
        metavar="URL",
        help="a page of the application, read in headless Chromium: each --select KEY=CSS "
        "reads one element's text as a state key, or --script FILE holds a JavaScript "
        "function returning the state as an object",
    )
    parser.add_argument(
        "--select",
        action="append",
        metavar="KEY=CSS",
        help="with --page: the state key KEY is the text of the one element CSS selects "
        "(repeat for several; a missing element leaves the key out)",
    )
    parser.add_argument(
        "--script",
        metavar="FILE",
        help="with --page: a file holding a JavaScript function, run in the page, that "
        "returns the state as a JSON object",
    )
    parser.add_argument(
        "--ready",
        metavar="CSS",
        help="with --page: wait for an element CSS selects before reading (a page that "
        "renders its state after it loads)",
    )
    parser.add_argument(
        "--pointer",
        metavar="POINTER",
        help="with --probe: the RFC 6901 JSON pointer of the part of the response that holds "
        "the state, e.g. /data",
    )
    parser.add_argument(
        "--read-timeout-ms",
        type=whole_number("milliseconds", at_least=1),
        help="with --probe or --page: how long one read may take (default "
        f"{round(HTTP_READ_TIMEOUT * 1000)} for an endpoint, 5000 for a page)",
    )
    parser.add_argument(
        "--into",
        metavar="KEY",
        help="with --probe: keep the response (or the part --pointer selects) whole under "
        "this state key, e.g. orders for an array; without it, it must be an object whose "
        "keys become state keys",
    )
    parser.add_argument(
        "--timeout-ms",
        type=whole_number("milliseconds", at_most=_longest_wait),
        default=DEFAULT_TIMEOUT_MS,
        help="how long to wait for the expression to hold, from 0 to the longest wait the "
        f"HTTP port accepts (default {DEFAULT_TIMEOUT_MS})",
    )
    parser.add_argument(
        "--interval-ms",
        type=whole_number("milliseconds", at_least=MIN_INTERVAL_MS, at_most=_longest_wait),
        default=DEFAULT_POLL_INTERVAL_MS,
        help=f"how often to re-read the file or endpoint, from {MIN_INTERVAL_MS} to the "
        f"longest wait the HTTP port accepts (default {DEFAULT_POLL_INTERVAL_MS})",
    )
    parser.add_argument(
        "--settle-ms",
        type=whole_number("milliseconds", at_most=_longest_wait),
        default=0,
        help="wait before the first evaluation, from 0 to the longest wait the HTTP port "
        "accepts (default 0)",
    )
    parser.add_argument(
        "--ledger",
        metavar="URL",
        help="also append the outcome to this Evidence Ledger as a verdict entry",
    )
    parser.set_defaults(run=run)


def _fail(message: str) -> int:
    print(f"assay verify: error: {message}", file=sys.stderr)
    return 2


def load_state(path: str) -> dict[str, Any] | str:
    """The JSON object in ``path`` (``-``: stdin), or a message saying what is wrong with it."""
    named = "the state read from stdin" if path == "-" else f"the state file {path!r}"
    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as handle:
                data = handle.read()
    except OSError as error:
        return f"cannot read {named}: {error.strerror or error}"
    from assay.state.json_text import JSONTextError, json_kind, read_document

    try:
        state = read_document(data, named=named)
    except JSONTextError as error:
        return str(error)
    if not isinstance(state, dict):
        return f"{named} must hold a JSON object (the objects map), not {json_kind(state)}"
    return state


async def _watch_file(path: str, store: StateStore, interval: float) -> None:
    """Re-read ``path`` whenever its size or modification time changes."""
    from assay.clock import SYSTEM_CLOCK

    last = _stamp(path)
    while True:
        await SYSTEM_CLOCK.sleep(interval)
        stamp = _stamp(path)
        if stamp == last:
            store.heartbeat(path)
            continue
        last = stamp
        state = load_state(path)
        if isinstance(state, dict):
            store.replace(state, source=path)


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size


def compile_predicate(text: str) -> Predicate:
    """EXPR as a predicate: a declarative contract when it is written as a JSON object, else
    an expression. ``ContractError`` or ``ExpressionSyntaxError`` say what is wrong."""
    from assay.expr import compile_expression
    from assay.expr.contract import compile_contract

    if not text.lstrip("\ufeff \t\n\r").startswith("{"):  # a byte order mark too
        return compile_expression(text)
    from assay.state.json_text import JSONTextError, read_document

    try:
        named = "EXPR (read as a declarative contract)"
        contract = read_document(text, named=named, object_pairs_hook=_without_duplicates)
    except JSONTextError as error:
        if error.kind != "syntax":
            raise ContractError(str(error)) from None
        raise ContractError(
            f"EXPR starts with '{{', so it is read as a declarative contract, but it "
            f"{error.reason}; write it as a JSON object such as "
            """'{"inbox.sent_count": {"gte": 15}}', or write an expression"""
        ) from None
    return compile_contract(contract)


def _without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's members as a dict; ``ContractError`` naming a key given twice, of
    which JSON parsers silently keep one (the contract checked would not be the one given)."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ContractError(
                f"the contract gives the key {key!r} twice in one object; give each key once "
                "(to test one key two ways, put both operators in its object, e.g. "
                """'{"n": {"gte": 1, "lte": 9}}')""",
                key=key,
            )
        seen[key] = value
    return seen


async def _verify_file(
    args: argparse.Namespace, state: dict[str, Any], options: VerifyOptions
) -> VerificationOutcome:
    import asyncio

    from assay.state.store import StateStore
    from assay.verify.loop import verify

    predicate = compile_predicate(args.expression)
    store = StateStore(state)
    if args.state == "-":
        return await verify(predicate, store, options=options)
    watcher = asyncio.create_task(_watch_file(args.state, store, args.interval_ms / 1000))
    try:
        return await verify(predicate, store, options=options)
    finally:
        watcher.cancel()


async def _verify_probe(args: argparse.Namespace, options: VerifyOptions) -> VerificationOutcome:
    from assay.state.probes import HttpProbe

    probe = HttpProbe(
        args.probe,
        into=args.into,
        pointer=args.pointer,
        interval=args.interval_ms / 1000,
        timeout=HTTP_READ_TIMEOUT if args.read_timeout_ms is None else args.read_timeout_ms / 1000,
    )
    return await _verify_read(args, probe, options)


async def _verify_page(
    args: argparse.Namespace,
    selectors: dict[str, str] | None,
    script: str | None,
    options: VerifyOptions,
) -> VerificationOutcome:
    from assay.state.probes import PageProbe

    timing = {} if args.read_timeout_ms is None else {"timeout": args.read_timeout_ms / 1000}
    probe = PageProbe(
        args.page,
        selectors=selectors,
        script=script,
        ready=args.ready,
        interval=args.interval_ms / 1000,
        **timing,
    )
    try:
        await probe.launch()  # before the first read, which a slow start would outlast
        return await _verify_read(args, probe, options)
    finally:
        await probe.aclose()


async def _verify_read(
    args: argparse.Namespace, probe: Any, options: VerifyOptions
) -> VerificationOutcome:
    """Read ``probe`` once (failing if it cannot be read), then verify as it goes on."""
    from assay.state.substrate import Substrate
    from assay.verify.loop import verify

    predicate = compile_predicate(args.expression)
    substrate = Substrate(probes=[probe])
    assert substrate.poller is not None
    await substrate.poller.read_once()
    health = substrate.poller.health(probe.name)
    if health.consecutive_failures:
        raise AssayError(f"cannot read the state from the probe: {health.last_error}")
    await substrate.start()
    try:
        return await verify(predicate, substrate.store, options=options)
    finally:
        await substrate.stop()


def _probe_url_problem(url: str) -> str | None:
    """What is wrong with ``--probe URL`` that no request would get past, if anything."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError as error:
        return f"--probe {url!r} cannot be read as a URL ({error}); give an http:// or https:// URL"
    if parts.scheme.lower() not in ("http", "https"):
        return None  # the probe names the schemes it reads
    if not parts.hostname:
        return (
            f"--probe {url!r} names no host; give the endpoint's whole URL, such as "
            "http://localhost:8000/state"
        )
    return None


def options_of(args: argparse.Namespace) -> VerifyOptions:
    """The verification's timing, from the flags; a state read from stdin cannot change, so
    it is checked once, at once."""
    from assay.verify.loop import VerifyOptions

    once = args.state == "-"
    return VerifyOptions(
        settle_ms=0 if once else args.settle_ms,
        timeout_ms=0 if once else args.timeout_ms,
        poll_interval_ms=None if once else args.interval_ms,
    )


def run(args: argparse.Namespace) -> int:
    import asyncio

    from assay.ledger import open_ledger

    try:
        compile_predicate(args.expression)
    except ExpressionSyntaxError as error:
        return _fail(f"the expression has a syntax error: {error}")
    except ContractError as error:
        return _fail(f"the contract is malformed: {error}")
    state: dict[str, Any] | str | None = None
    for flag, given in (("--into", args.into), ("--pointer", args.pointer)):
        if given is not None and args.probe is None:
            return _fail(f"{flag} is about reading an endpoint, so it goes with --probe")
    if args.read_timeout_ms is not None and args.probe is None and args.page is None:
        return _fail(
            "--read-timeout-ms bounds a read of an endpoint or a page: it goes with "
            "--probe or --page"
        )
    for flag, given in (
        ("--select", args.select),
        ("--script", args.script),
        ("--ready", args.ready),
    ):
        if given is not None and args.page is None:
            return _fail(f"{flag} is about reading a page, so it goes with --page")
    selectors: dict[str, str] | None = None
    script: str | None = None
    if args.page is not None:
        if (args.select is None) == (args.script is None):
            return _fail(
                "--page reads the state by --select KEY=CSS (repeat for several) or "
                "by --script FILE: give one of the two"
            )
        if args.select is not None:
            selectors = {}
            for pair in args.select:
                key, sign, css = pair.partition("=")
                if not sign or not key or not css:
                    return _fail(f"--select {pair!r} is not KEY=CSS, such as inbox.unread=#unread")
                selectors[key] = css
        else:
            try:
                with open(args.script, encoding="utf-8") as file:
                    script = file.read()
            except (OSError, UnicodeDecodeError) as error:
                reason = getattr(error, "strerror", None) or str(error)
                return _fail(f"--script {args.script}: cannot read it ({reason})")
    if args.probe is not None:
        problem = _probe_url_problem(args.probe)
        if problem is not None:
            return _fail(problem)
    if args.ledger is not None:
        problem = sqlite_path_problem(args.ledger)
        if problem is not None:
            return _fail(f"--ledger {args.ledger}: {problem}")
    if args.state is not None:
        state = load_state(args.state)
        if isinstance(state, str):
            return _fail(state)
    options = options_of(args)
    try:
        if isinstance(state, dict):
            outcome = asyncio.run(_verify_file(args, state, options))
        elif args.page is not None:
            outcome = asyncio.run(_verify_page(args, selectors, script, options))
        else:
            outcome = asyncio.run(_verify_probe(args, options))
    except ProbeConfigError as error:  # worded for the library: say it in the flags' terms
        if error.parameter == "url":
            return _fail(
                f"--probe {args.probe!r} is not a URL assay can read; give an http:// or "
                "https:// URL of a JSON endpoint"
            )
        if error.parameter in ("into", "pointer"):
            return _fail(f"--{error.parameter}: {error}")
        return _fail(f"{'--page' if args.page is not None else '--probe'}: {error}")
    except AssayError as error:
        return _fail(str(error))
    if args.ledger is not None:
        try:
            with open_ledger(args.ledger) as ledger:
                ledger.append("verdict", outcome.model_dump(mode="json"))
        except AssayError as error:
            return _fail(f"cannot record the verdict: {error}")
    return answer(0 if outcome.passed else 1, outcome.model_dump_json(indent=2))
