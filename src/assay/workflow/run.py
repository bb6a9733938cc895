"""Runs, as the ledger records them: the entry bodies, the run's lifecycle and its record.

A run's state is never kept anywhere but in the ledger's own entries (the ``run`` column names
the run), so it is exactly as durable as the evidence: a run is rebuilt from its entries, in
the same SQLite file or PostgreSQL database, by any process. The run's start is a ``commit``
entry with no step (its input becomes the first workflow state); each passed step is a
``commit`` naming its passed ``verdict`` entry, which holds the output; ``park`` and
``resume`` move its lifecycle. A run whose process died mid-step has no ending entry, so it
reads as ``running`` and resumes from its last commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError

from assay.errors import RunError, RunNotFoundError, WrongTypeError
from assay.ledger import Entry, Ledger
from assay.workflow.budget import Usage
from assay.workflow.verdict import Verdict


class RunStatus(StrEnum):
    """Where a run is in its life: running → (parked → running)* → completed."""

    RUNNING = "running"
    PARKED = "parked"
    COMPLETED = "completed"


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StartBody(_Body):
    """A run's first entry (kind ``commit``, no step): what it runs, on what input."""

    event: Literal["start"] = "start"
    workflow: str
    source: str | None
    steps: tuple[str, ...]
    input: dict[str, Any]


class CommitBody(_Body):
    """A step's output becoming workflow state, after its verdict passed: the output that
    verdict's entry holds (``verdict`` is its seq), so it is recorded once, there."""

    event: Literal["commit"] = "commit"
    step: str
    attempt: int
    iteration: int
    verdict: StrictInt  # a seq: "24", 24.0 or true name no entry


class _CommitWithOutput(_Body):
    """A commit as written before commits named their verdict: it held a copy of the output."""

    event: Literal["commit"]
    step: str
    attempt: int
    iteration: int
    output: dict[str, Any]


class VerdictBody(_Body):
    """One verdict on one iteration's output, pass or fail, with its critique and results."""

    step: str
    attempt: int
    iteration: int
    rung: str
    output: Any
    verdict: Verdict


class EscalationBody(_Body):
    """An attempt ran out; the next rung of the ladder takes over (``human`` parks)."""

    step: str
    attempt: int
    reason: str
    rung: str


class ParkBody(_Body):
    """The run stopped and waits for a person: why, where, and what the step had spent."""

    step: str
    reason: str
    usage: Usage


class ResumeBody(_Body):
    """A person (or a restart after a crash) took the run up again, with their input."""

    step: str | None
    input: dict[str, Any]
    from_status: RunStatus


class RunRecord(BaseModel):
    """A run as rebuilt from its ledger entries; the wire type of the CLI and HTTP API.

    ``committed`` maps each committed step to its output, in step order; ``next_step`` is
    the step a resume starts at (``None`` once completed); ``park`` says why it is parked.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    workflow: str
    source: str | None
    status: RunStatus
    input: dict[str, Any]
    steps: tuple[str, ...]
    committed: dict[str, dict[str, Any]]
    next_step: str | None
    park: ParkBody | None
    human: dict[str, Any] | None
    verdicts: int
    started_at: str
    updated_at: str

    def require(self, *allowed: RunStatus, move: str) -> None:
        """``RunError`` with the reason, unless the run's status allows ``move``."""
        if self.status in allowed:
            return
        why = {
            RunStatus.COMPLETED: "every step has committed; there is nothing left to do",
            RunStatus.PARKED: f"it is parked at step {self.next_step!r}: resume it first",
            RunStatus.RUNNING: "it is running",
        }[self.status]
        raise RunError(
            f"cannot {move} run {self.run_id!r}: {why}", run_id=self.run_id, status=self.status
        )


def read_run(ledger: Ledger, run_id: str) -> RunRecord:
    """The run ``run_id`` as its entries tell it; ``RunNotFoundError`` if it has none."""
    entries = ledger.query(run=run_id)
    if not entries:
        raise RunNotFoundError(
            f"no run {run_id!r} in the ledger at {ledger.url}",
            run_id=run_id,
        )
    return rebuild(run_id, entries)


def list_runs(
    ledger: Ledger,
    *,
    after: str | None = None,
    limit: int | None = None,
    status: RunStatus | None = None,
) -> list[RunRecord]:
    """The runs in the ledger, oldest first: those started after run ``after`` (all when
    ``None``), with ``status`` if given, at most ``limit`` of them.

    Page on with ``after`` = the last ``run_id`` received. Runs are read from the ledger as
    they are found, so a page costs the runs it holds (and those ``status`` passes over),
    not every run. ``RunNotFoundError`` if ``after`` names no run.
    """
    if limit is not None and (type(limit) is not int or limit < 0):
        raise WrongTypeError(f"limit must be a whole number ≥ 0, not {limit!r}", parameter="limit")
    if status is not None and status not in _STATUSES:
        raise WrongTypeError(
            f"status must be one of {', '.join(_STATUSES)}, not {status!r}", parameter="status"
        )
    found: list[RunRecord] = []
    seq = 0 if after is None else _start_of(ledger, after).seq
    while limit is None or len(found) < limit:
        commits = ledger.query(kind="commit", after=seq, limit=_PAGE)
        for entry in commits:
            if entry.run is None or _event(entry) != "start":
                continue
            record = read_run(ledger, entry.run)
            if status is None or record.status == status:
                found.append(record)
                if len(found) == limit:
                    break
        if len(commits) < _PAGE:
            break
        seq = commits[-1].seq
    return found


_STATUSES = tuple(status.value for status in RunStatus)
_PAGE = 500
"""Commit entries read from the ledger at a time while listing runs."""


def _start_of(ledger: Ledger, run_id: str) -> Entry:
    """Run ``run_id``'s start entry; ``RunNotFoundError`` if the ledger holds none."""
    for entry in ledger.query(run=run_id, kind="commit", limit=1):
        if _event(entry) == "start":
            return entry
    raise RunNotFoundError(f"no run {run_id!r} in the ledger at {ledger.url}", run_id=run_id)


def rebuild(run_id: str, entries: list[Entry]) -> RunRecord:
    """Fold a run's entries, in seq order, into its record."""
    start: StartBody | None = None
    committed: dict[str, dict[str, Any]] = {}
    park: ParkBody | None = None
    human: dict[str, Any] | None = None
    verdicts: dict[int, Any] = {}
    entry = entries[0] if entries else None
    try:
        for entry in entries:
            body = entry.body
            if entry.kind == "commit" and _event(entry) == "start":
                start = StartBody.model_validate(body)
            elif entry.kind == "commit":
                step, output = _committed(run_id, body, verdicts)
                committed[step] = output
            elif entry.kind == "verdict":
                verdicts[entry.seq] = body
            elif entry.kind == "park":
                park = ParkBody.model_validate(body)
            elif entry.kind == "resume":
                park = None
                human = ResumeBody.model_validate(body).input
    except ValidationError as error:
        assert entry is not None
        problem = error.errors()[0]
        where = ".".join(str(part) for part in problem["loc"]) or "body"
        raise RunError(
            f"run {run_id!r}: entry {entry.seq} ({entry.kind}) is not one the workflow engine "
            f"writes ({where}: {problem['msg']}); the ledger was not written by the workflow "
            "engine",
            run_id=run_id,
        ) from None
    if start is None:
        raise RunError(
            f"run {run_id!r} has entries but no start entry; the ledger was not written by "
            "the workflow engine",
            run_id=run_id,
        )
    remaining = [step for step in start.steps if step not in committed]
    if not remaining:
        status, park = RunStatus.COMPLETED, None
    else:
        status = RunStatus.PARKED if park is not None else RunStatus.RUNNING
    return RunRecord(
        run_id=run_id,
        workflow=start.workflow,
        source=start.source,
        status=status,
        input=start.input,
        steps=start.steps,
        committed={step: committed[step] for step in start.steps if step in committed},
        next_step=remaining[0] if remaining else None,
        park=park,
        human=human,
        verdicts=len(verdicts),
        started_at=entries[0].timestamp,
        updated_at=entries[-1].timestamp,
    )


def _committed(run_id: str, body: Any, verdicts: Mapping[int, Any]) -> tuple[str, dict[str, Any]]:
    """The step a commit entry's ``body`` commits and its output, read from the passed verdict
    it names among the run's ``verdicts`` so far (by seq); ``RunError`` if it names none."""
    if isinstance(body, Mapping) and "output" in body:
        old = _CommitWithOutput.model_validate(body)
        return old.step, old.output
    commit = CommitBody.model_validate(body)
    named = verdicts.get(commit.verdict)
    try:
        judged = None if named is None else VerdictBody.model_validate(named)
    except ValidationError:
        judged = None  # not a verdict the engine wrote: named as no passed verdict, below
    if (
        judged is None
        or (judged.step, judged.attempt, judged.iteration)
        != (commit.step, commit.attempt, commit.iteration)
        or not judged.verdict.passed
        or not isinstance(judged.output, dict)
    ):
        raise RunError(
            f"run {run_id!r} commits step {commit.step!r} (attempt {commit.attempt}, iteration "
            f"{commit.iteration}) from entry {commit.verdict}, which is not that iteration's "
            "passed verdict in the run; the ledger was not written by the workflow engine",
            run_id=run_id,
        )
    return commit.step, judged.output


def _event(entry: Entry) -> Any:
    body = entry.body
    return body.get("event") if isinstance(body, Mapping) else None
