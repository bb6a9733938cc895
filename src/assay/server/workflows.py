"""Workflow runs over HTTP: start one, read one, list them, resume a parked one.

Only workflows the daemon was given are runnable by name (``assay serve --workflows DIR``
and the built-in ``competitor_deep_dive``): a request never names a file or a module to
import. A start or resume answers once the run has completed or parked, within its wall bound
(``--workflow-wall-s``, an hour by default, when the workflow sets none); the run's
verdicts, commits, escalations and parks are already in the ledger by then. Its input is held
to the workflow's ``budget.output_bytes`` (1 MiB by default) as canonical JSON, within the
daemon's own cap on any body (``--max-body-bytes``, 16 MiB by default, a 413); over it, the
engine refuses it (a 400) before anything is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from assay.errors import NotFoundError, WorkflowError, WorkflowUnavailableError
from assay.server.auth import Principal, require
from assay.server.declared import errors
from assay.server.json_body import JSONRoute
from assay.server.query import known_query, named, whole
from assay.server.tokens import Scope
from assay.workflow.definition import Workflow
from assay.workflow.run import RunRecord, RunStatus
from assay.workflow.service import Workflows

router = APIRouter(
    prefix="/v1", tags=["workflows"], dependencies=[Depends(known_query)], route_class=JSONRoute
)

_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}\Z")
MAX_RUNS: Final = 1000
"""The most runs one page of ``GET /v1/runs`` holds."""


class RunRequest(BaseModel):
    """``POST /v1/workflows/{name}/runs`` and ``POST /v1/runs/{id}/resume``."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    input: dict[str, Any] = Field(
        default_factory=dict,
        description="the run's input (start) or a person's input to the parked step (resume); "
        "at most the workflow's budget.output_bytes (1 MiB by default) as canonical JSON",
    )


class WorkflowList(BaseModel):
    """The workflows this daemon runs by name."""

    model_config = ConfigDict(frozen=True)

    workflows: list[str] = Field(
        description="the names POST /v1/workflows/{name}/runs takes, sorted; a NAME.yaml file "
        "is read at start and again when a run of it starts"
    )


class RunList(BaseModel):
    """A page of the runs in the ledger, oldest first."""

    model_config = ConfigDict(frozen=True)

    runs: list[RunRecord]


def workflows_of(request: Request) -> Workflows:
    """The daemon's workflows; a 404 problem when it was started without any."""
    found: Workflows | None = getattr(request.app.state, "workflows", None)
    if found is None:
        raise NotFoundError(
            "this daemon runs no workflows; start it with --workflows DIR", kind="workflow", id=""
        )
    return found


WorkflowsDependency = Annotated[Workflows, Depends(workflows_of)]


@router.post(
    "/workflows/{name}/runs",
    response_model=RunRecord,
    responses=errors(404, 409, 413),
    summary="Start a run of a workflow; answers once it has completed or parked",
)
async def start(
    name: str,
    body: RunRequest,
    workflows: WorkflowsDependency,
    who: Annotated[Principal, Depends(require(Scope.ACT))],
) -> RunRecord:
    """Run ``name`` with ``body.input``: each step's output is committed only past its gate.
    An input over the workflow's budget.output_bytes as canonical JSON is a 400, and no run
    is started; a body over the daemon's --max-body-bytes is refused unread (413)."""
    if not _NAME.match(name) or not workflows.runnable(name):
        known = ", ".join(_names(workflows)) or "none"
        raise NotFoundError(
            f"no workflow is called {name!r}; this daemon runs: {known} (GET /v1/workflows)",
            kind="workflow",
            id=name,
        )
    workflow = _loaded(lambda: workflows.load(name), f"the workflow {name!r}")
    return await workflows.engine(workflow).astart(body.input)


@router.get(
    "/workflows",
    response_model=WorkflowList,
    responses=errors(404),
    summary="The workflows this daemon runs by name",
)
async def workflow_names(
    workflows: WorkflowsDependency,
    who: Annotated[Principal, Depends(require(Scope.READ))],
) -> WorkflowList:
    """The built-in and given workflows, and the ``NAME.yaml`` files of ``--workflows``."""
    return WorkflowList(workflows=_names(workflows))


def _names(workflows: Workflows) -> list[str]:
    """The names a run can be started by here (a file's stem may not be one)."""
    return [name for name in workflows.names() if _NAME.match(name)]


@router.get(
    "/runs",
    response_model=RunList,
    responses=errors(404, reads_entries=True),
    summary="The workflow runs in the ledger, a page at a time, optionally of one status",
)
def runs(
    workflows: WorkflowsDependency,
    who: Annotated[Principal, Depends(require(Scope.READ))],
    after: Annotated[
        str | None,
        named("run", "leave after out to start from the first run"),
        Query(
            min_length=1,
            max_length=200,
            description="only runs started after this run (its run_id)",
        ),
    ] = None,
    limit: Annotated[
        int,
        whole("limit", 1, MAX_RUNS),
        Query(ge=1, le=MAX_RUNS, description=f"at most this many (1 to {MAX_RUNS})"),
    ] = 100,
    status: Annotated[RunStatus | None, Query(description="only runs with this status")] = None,
) -> RunList:
    """Runs rebuilt from the ledger, oldest first. Page on with ``after`` = the last
    ``run_id`` received; an empty page means there are no more."""
    # A plain function, as the one below: the ledger is read on FastAPI's thread pool,
    # never on the event loop that fires and verifies.
    return RunList(runs=workflows.runs(after=after, limit=limit, status=status))


@router.get(
    "/runs/{run_id}",
    response_model=RunRecord,
    responses=errors(404, reads_entries=True),
    summary="One workflow run: status, committed steps, why it parked",
)
def run(
    run_id: str,
    workflows: WorkflowsDependency,
    who: Annotated[Principal, Depends(require(Scope.READ))],
) -> RunRecord:
    """The run as its ledger entries say it is."""
    return workflows.get(run_id)


@router.post(
    "/runs/{run_id}/resume",
    response_model=RunRecord,
    responses=errors(404, 409, 413),
    summary="Resume a parked or interrupted run from its last commit, with a person's input",
)
async def resume(
    run_id: str,
    body: RunRequest,
    workflows: WorkflowsDependency,
    who: Annotated[Principal, Depends(require(Scope.ACT))],
) -> RunRecord:
    """Resume ``run_id``; a completed run cannot be resumed (409). An input over the
    workflow's budget.output_bytes as canonical JSON is a 400, and the run is not resumed."""
    workflow = _loaded(lambda: workflows.workflow_of(run_id), f"run {run_id!r}'s workflow")
    return await workflows.engine(workflow).aresume(run_id, body.input)


def _loaded(load: Callable[[], Workflow], what: str) -> Workflow:
    """``load()``. A workflow file is read again at each run; one that no longer loads is
    the operator's to fix, not the caller's (``WorkflowUnavailableError``, answered 409)."""
    try:
        return load()
    except WorkflowError as exc:
        raise WorkflowUnavailableError(
            f"{what} cannot be loaded now: {exc}; whoever runs this daemon must fix its file "
            "(the request was not at fault)",
            workflow=exc.workflow,
            field=exc.field,
        ) from exc
