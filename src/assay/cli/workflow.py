"""``assay lint FILE``, ``assay run FILE``, ``assay resume RUN_ID``, ``assay runs``.

Exit codes follow ``assay.cli.main``: 0 for no problems or a completed run, 1 for problems
found or a parked run, 2 for a file, workflow, input or run that cannot be used (nothing is
run), 70 on an internal error, 130 on Ctrl-C (``run`` and ``resume`` stop at once and say how
to resume); docs/workflows.md, "CLI and exit codes", has the table. Progress goes to stderr,
one line per verdict, escalation, commit and park; the run's record goes to stdout as JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from assay.cli.arguments import whole_number
from assay.cli.ledger import add_ledger_option
from assay.errors import AssayError, RunNotFoundError, WorkflowError, WorkflowLintError

if TYPE_CHECKING:  # the workflow layer and the ledger load only when a command runs
    from assay.ledger import Ledger
    from assay.workflow.definition import ModelSettings
    from assay.workflow.run import RunRecord
    from assay.workflow.service import Workflows

RUN_STATUSES: Final = ("running", "parked", "completed")
"""``RunStatus``'s values, for ``--status`` (a test holds the two equal)."""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "lint",
        help="check a workflow's authoring rules (zero-case, scope, effort, irreversible)",
        description="Load a workflow file and apply the authoring lint. Exit 0 when clean, "
        "1 when problems were found, 2 when the file cannot be loaded.",
    )
    parser.add_argument("file", metavar="FILE", help="a workflow YAML file, or module:attribute")
    parser.set_defaults(run=run_lint)

    parser = commands.add_parser(
        "run",
        help="lint and run a workflow",
        description="Lint the workflow, then run it until it completes or parks. Exit 0 "
        "completed, 1 parked (resumable), 2 invalid workflow or input.",
    )
    parser.add_argument("file", metavar="FILE", help="a workflow YAML file, or module:attribute")
    parser.add_argument("--input", default="{}", metavar="JSON", help=_INPUT_HELP)
    _wall_option(parser)
    _model_options(parser)
    add_ledger_option(parser)
    parser.set_defaults(run=run_run)

    parser = commands.add_parser(
        "resume",
        help="resume a parked or interrupted workflow run with a person's input",
        description="Take a run up from its last commit. Exit 0 completed, 1 parked again, "
        "2 bad input or a run that cannot be resumed.",
    )
    parser.add_argument("run_id", metavar="RUN_ID", help="as `assay runs` lists it")
    parser.add_argument("--input", default="{}", metavar="JSON", help=_INPUT_HELP)
    _wall_option(parser)
    _model_options(parser)
    add_ledger_option(parser)
    parser.set_defaults(run=run_resume)

    parser = commands.add_parser(
        "runs", help="list workflow runs", description="List the runs recorded in the ledger."
    )
    parser.add_argument("--json", action="store_true", help="one RunRecord JSON per line")
    parser.add_argument(
        "--status",
        choices=RUN_STATUSES,
        help="only runs with this status (parked: those waiting for `assay resume`)",
    )
    parser.add_argument(
        "--after", metavar="RUN_ID", help="only runs started after this one (to page on)"
    )
    parser.add_argument(
        "--limit",
        type=whole_number("runs", at_least=1),
        metavar="N",
        help="at most N runs (default: all)",
    )
    add_ledger_option(parser)
    parser.set_defaults(run=run_runs)


_INPUT_HELP = "a JSON object, or @path to a file holding one (default {})"


def _wall_option(parser: argparse.ArgumentParser) -> None:
    from assay.defaults import DEFAULT_WALL_S

    parser.add_argument(
        "--wall-s",
        type=float,
        default=DEFAULT_WALL_S,
        metavar="SECONDS",
        help="the run's wall bound when the workflow's budget sets no wall_s (default "
        f"{DEFAULT_WALL_S:g}; at most 86400)",
    )


def _model_options(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--model-url",
        metavar="URL",
        help="an OpenAI-compatible base URL for the model verifier (overrides the workflow's)",
    )
    where.add_argument(
        "--model-path",
        metavar="FILE",
        help="a GGUF model file for the model verifier, run in this process (needs "
        "assay[local-model]; overrides the workflow's model)",
    )
    parser.add_argument("--model", default="local", help="the model name to ask for")
    parser.add_argument(
        "--response-format",
        choices=("json_schema", "json_object"),
        default="json_schema",
        help="how the endpoint takes a JSON schema (json_object: llama-cpp-python's server)",
    )


def run_lint(args: argparse.Namespace) -> int:
    from assay.workflow.lint import lint
    from assay.workflow.service import find_workflow

    try:
        workflow = find_workflow(args.file)
    except WorkflowError as error:
        print(f"assay lint: error: {error}", file=sys.stderr)
        return 2
    problems = lint(workflow)
    for problem in problems:
        print(f"{args.file}: [{problem.rule}] {problem.message}")
    if problems:
        return 1
    count = len(workflow.steps)
    print(f"{args.file}: workflow {workflow.name!r} passes lint ({count} step{'s' * (count != 1)})")
    return 0


def run_run(args: argparse.Namespace) -> int:
    from assay.ledger import open_ledger
    from assay.workflow.engine import require_judges, run_input_of
    from assay.workflow.lint import check_workflow
    from assay.workflow.service import find_workflow

    try:
        given = _parse_input(args.input)
        # Found, measured and linted before the ledger is opened, so a bad file or an
        # input too large to record creates no ledger.
        workflow = find_workflow(args.file)
        run_input = run_input_of(workflow, given)
        check_workflow(workflow, run_input)
        model = _model_settings(args)
        wall_s = _wall_s(args)
        # Before the ledger opens, as lint is: a run nothing could judge creates no ledger.
        require_judges(workflow, workflow.steps, model or workflow.model)
        run_id = f"{workflow.name}-{uuid.uuid4().hex[:12]}"
        with open_ledger(args.ledger) as ledger:
            try:
                with _interrupts_at_once():
                    engine = _service(ledger, model, wall_s).engine(workflow)
                    record = engine.start(run_input, run_id=run_id)
            except KeyboardInterrupt:
                return _interrupted("run", run_id, ledger, args)
    except WorkflowLintError as error:
        print(f"assay run: {error}", file=sys.stderr)
        return 2
    except AssayError as error:
        print(f"assay run: error: {error}", file=sys.stderr)
        return 2
    return _report(record, args, ledger)


def run_resume(args: argparse.Namespace) -> int:
    from assay.ledger.credentials import hide_password

    try:
        human = _parse_input(args.input)
        model = _model_settings(args)
        wall_s = _wall_s(args)
        with _recorded_ledger(args, "assay resume") as ledger:  # the run must be in it
            try:
                with _interrupts_at_once():
                    record = _service(ledger, model, wall_s).resume(args.run_id, human)
            except KeyboardInterrupt:
                return _interrupted("resume", args.run_id, ledger, args)
    except AssayError as error:
        hint = "; `assay runs` lists the runs" if isinstance(error, RunNotFoundError) else ""
        if hint and args.ledger is not None:
            shown = shlex.quote(hide_password(args.ledger))
            hint = f"; `assay runs --ledger {shown}` lists the runs"
        print(f"assay resume: error: {error}{hint}", file=sys.stderr)
        return 2
    return _report(record, args, ledger)


def run_runs(args: argparse.Namespace) -> int:
    from assay.workflow.service import Workflows

    try:
        with _recorded_ledger(args, "assay runs") as ledger:
            records = Workflows(ledger).runs(after=args.after, limit=args.limit, status=args.status)
    except AssayError as error:
        print(f"assay runs: error: {error}", file=sys.stderr)
        return 2
    if not records and not args.json:  # stdout stays empty: a script may read it
        which = f"{args.status} " if args.status else ""
        after = f" after {args.after}" if args.after else ""
        print(
            f"assay runs: no {which}workflow runs{after} in the ledger at {ledger.url}",
            file=sys.stderr,
        )
    for record in records:
        if args.json:
            print(record.model_dump_json())
        else:
            where = record.next_step or "-"
            print(f"{record.run_id}  {record.status.value:9}  {record.workflow}  step={where}")
    return 0


def _recorded_ledger(args: argparse.Namespace, command: str) -> Ledger:
    """The existing ledger ``--ledger`` names; a memory ledger, empty outside the process
    that wrote it, is refused rather than read as one without runs."""
    from assay.cli.ledger_location import memory_refusal
    from assay.ledger import open_ledger
    from assay.ledger.backends.memory import MemoryBackend

    ledger = open_ledger(args.ledger, create=False)
    if isinstance(ledger.backend, MemoryBackend):
        ledger.close()
        raise WorkflowError(memory_refusal(command), field="ledger")
    return ledger


@contextlib.contextmanager
def _interrupts_at_once() -> Iterator[None]:
    """Ctrl-C raises ``KeyboardInterrupt`` wherever the run is, a step's executor included.

    ``asyncio.run`` would otherwise take SIGINT as a request to cancel its task at its next
    pause, and a run whose steps never pause went on to verify and commit every step.
    Nothing half-done is lost: each ledger entry is stored whole or not at all.
    """

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupted(command: str, run_id: str, ledger: Ledger, args: argparse.Namespace) -> int:
    """Say where an interrupted run stands and how to take it up again; exit code 130."""
    from assay.workflow.run import read_run

    try:
        record = read_run(ledger, run_id)
    except RunNotFoundError:
        print(
            f"assay {command}: interrupted before the run started; nothing was recorded",
            file=sys.stderr,
        )
        return 130
    if record.next_step is None:
        where = f"run {run_id} is {record.status.value}"
    else:
        where = f"run {run_id} stopped at step {record.next_step!r}, which did not commit"
    given = f" --ledger {shlex.quote(ledger.url)}" if args.ledger is not None else ""
    print(
        f"assay {command}: interrupted; {where}; take it up again with: "
        f"assay resume {run_id}{given}",
        file=sys.stderr,
    )
    return 130


def _model_settings(args: argparse.Namespace) -> ModelSettings | None:
    """The model the options name, if any; a model file must be there."""
    from assay.workflow.definition import ModelSettings

    if args.model_path:
        path = Path(args.model_path)
        if not path.is_file():
            state = "is a directory" if path.is_dir() else "no such file"
            raise WorkflowError(
                f"--model-path {args.model_path}: {state}; give the path of a GGUF model file",
                field="model_path",
            )
        return ModelSettings(path=str(path.resolve()), model=args.model)
    if args.model_url:
        return ModelSettings(
            base_url=args.model_url, model=args.model, response_format=args.response_format
        )
    return None


def _wall_s(args: argparse.Namespace) -> float:
    """``--wall-s``, checked: a positive number of seconds, at most a day."""
    from assay.workflow.engine import require_wall

    return require_wall(args.wall_s, "--wall-s")


def _service(ledger: Any, model: ModelSettings | None, wall_s: float) -> Workflows:
    from assay.workflow.service import Workflows

    return Workflows(ledger, model=model, observer=_progress, default_wall_s=wall_s)


def _progress(kind: str, body: Any) -> None:
    if kind == "verdict":
        ruling = "pass" if body.verdict.passed else f"fail: {body.verdict.critique}"
        line = f"{body.step} attempt {body.attempt} iteration {body.iteration}: {ruling}"
    elif kind == "commit":
        line = f"{body.step}: committed" if body.event == "commit" else f"run {body.workflow}"
    elif kind == "escalation":
        line = f"{body.step}: {body.reason}; escalating to {body.rung}"
    elif kind == "park":
        line = f"{body.step}: parked: {body.reason}"
    else:
        line = f"resumed at {body.step}"
    print(f"  {line}", file=sys.stderr, flush=True)


def _report(record: RunRecord, args: argparse.Namespace, ledger: Ledger) -> int:
    """Print the run; for one that did not complete, say how to resume it from ``ledger``."""
    from assay.ledger.backends.memory import MemoryBackend
    from assay.workflow.run import RunStatus

    print(record.model_dump_json(indent=2))
    if record.status is RunStatus.COMPLETED:
        return 0
    where = f"run {record.run_id} is {record.status.value} at step {record.next_step!r}"
    if isinstance(ledger.backend, MemoryBackend):
        print(
            f"{where}; its ledger {ledger.url} lived in this process and is gone with it, so "
            "it cannot be resumed: run it with --ledger sqlite:///PATH to resume it later",
            file=sys.stderr,
        )
        return 1
    given = f" --ledger {shlex.quote(ledger.url)}" if args.ledger is not None else ""
    print(
        f"{where}; resume it with: assay resume {record.run_id} --input '{{...}}'{given}",
        file=sys.stderr,
    )
    return 1


def _parse_input(text: str) -> dict[str, Any]:
    from assay.state.canonical import HALF_SURROGATE_PAIR, holds_half_surrogate_pair

    source = "--input"
    data: str | bytes = text
    if text.startswith("@"):
        source = text[1:]
        try:
            with open(source, "rb") as file:
                data = file.read()
        except OSError as error:
            raise WorkflowError(f"cannot read --input file {source!r}: {error.strerror}") from None
    from assay.state.json_text import JSONTextError, json_kind, read_document

    named = "--input" if source == "--input" else f"the --input file {source!r}"
    try:
        value = read_document(data, named=named)
    except JSONTextError as error:
        raise WorkflowError(str(error), field="input") from None
    if not isinstance(value, dict):
        raise WorkflowError(f"{named} must be a JSON object, not {json_kind(value)}", field="input")
    if holds_half_surrogate_pair(value):  # an escape, or argv bytes that are not UTF-8
        raise WorkflowError(f"{named}: {HALF_SURROGATE_PAIR}", field="input")
    return value
