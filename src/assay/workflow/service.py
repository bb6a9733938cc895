"""``Workflows``: the small API that the CLI and the HTTP daemon share.

Load a workflow by name or file, start a run with input, get a run, resume a run with a
person's input, list runs; every answer is a ``RunRecord`` rebuilt from the ledger, so any
process on the same ledger sees the same runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.clock import SYSTEM_CLOCK, Clock
from assay.defaults import DEFAULT_WALL_S
from assay.errors import WorkflowError
from assay.ledger import Ledger
from assay.workflow.definition import ModelSettings, Workflow, load_workflow
from assay.workflow.engine import Engine, Observer
from assay.workflow.lint import LintProblem, lint
from assay.workflow.run import RunRecord, RunStatus, list_runs, read_run

if TYPE_CHECKING:
    from assay.graph import Session


class Workflows:
    """Runs of workflows on ``ledger``.

    A workflow is found by reference: the name of one given in ``workflows``, the name of a
    ``NAME.yaml`` in one of ``directories``, a path to a YAML file, or ``module:attribute``.
    A resumed run finds its workflow again by the source recorded when it started.
    ``default_wall_s`` is the wall bound of a run whose workflow's budget sets no ``wall_s``.
    """

    def __init__(
        self,
        ledger: Ledger,
        *,
        directories: Iterable[str | Path] = (),
        workflows: Iterable[Workflow] = (),
        clock: Clock = SYSTEM_CLOCK,
        session: Session | None = None,
        model: ModelSettings | None = None,
        observer: Observer | None = None,
        default_wall_s: float = DEFAULT_WALL_S,
    ) -> None:
        self.ledger = ledger
        self.default_wall_s = default_wall_s
        self.observer = observer
        self.directories = tuple(Path(d) for d in directories)
        self.known = {workflow.name: workflow for workflow in workflows}
        self.clock = clock
        self.session = session
        self.model = model

    def names(self) -> list[str]:
        """The workflows runnable by name, sorted: those given, and each ``NAME.yaml`` (or
        ``.yml``) in the directories. The files are not read: one may still be invalid."""
        return sorted({*self.known, *workflow_files(self.directories)})

    def runnable(self, name: str) -> bool:
        """Whether ``name`` is one of ``names()``."""
        return name in self.known or workflow_file(name, self.directories) is not None

    def load(self, reference: str) -> Workflow:
        """The workflow ``reference`` names; ``WorkflowError`` saying where it looked."""
        return find_workflow(reference, known=self.known, directories=self.directories)

    def lint(self, reference: str) -> list[LintProblem]:
        """The authoring problems of the workflow ``reference`` names."""
        return lint(self.load(reference))

    def engine(self, workflow: Workflow) -> Engine:
        return Engine(
            workflow,
            self.ledger,
            clock=self.clock,
            session=self.session,
            model=self.model,
            observer=self.observer,
            default_wall_s=self.default_wall_s,
        )

    def start(self, reference: str, run_input: Mapping[str, Any]) -> RunRecord:
        """Start a run and drive it until it completes or parks."""
        return self.engine(self.load(reference)).start(run_input)

    async def astart(self, reference: str, run_input: Mapping[str, Any]) -> RunRecord:
        return await self.engine(self.load(reference)).astart(run_input)

    def get(self, run_id: str) -> RunRecord:
        """The run ``run_id``; ``RunNotFoundError`` if the ledger has none."""
        return read_run(self.ledger, run_id)

    def runs(
        self,
        *,
        after: str | None = None,
        limit: int | None = None,
        status: RunStatus | None = None,
    ) -> list[RunRecord]:
        """The runs in the ledger, oldest first, a page at a time (see ``list_runs``)."""
        return list_runs(self.ledger, after=after, limit=limit, status=status)

    def resume(self, run_id: str, human: Mapping[str, Any] | None = None) -> RunRecord:
        """Resume a parked or interrupted run from its last commit with ``human`` input."""
        return self.engine(self.workflow_of(run_id)).resume(run_id, human)

    async def aresume(self, run_id: str, human: Mapping[str, Any] | None = None) -> RunRecord:
        return await self.engine(self.workflow_of(run_id)).aresume(run_id, human)

    def workflow_of(self, run_id: str) -> Workflow:
        """The workflow run ``run_id`` ran, found again as it was when the run started."""
        record = read_run(self.ledger, run_id)
        if record.workflow in self.known:
            return self.known[record.workflow]
        if record.source is not None:
            return load_workflow(record.source)
        return self.load(record.workflow)


def workflow_files(directories: Iterable[str | Path]) -> dict[str, Path]:
    """Each ``NAME.yaml`` (or ``.yml``) in ``directories`` by NAME, the first one found for a
    name as ``workflow_file`` finds it."""
    found: dict[str, Path] = {}
    for directory in directories:
        for suffix in (".yaml", ".yml"):
            for path in sorted(Path(directory).glob(f"*{suffix}")):
                if path.is_file():
                    found.setdefault(path.stem, path)
    return found


def workflow_file(name: str, directories: Iterable[str | Path]) -> Path | None:
    """The first ``NAME.yaml`` (or ``.yml``) for ``name`` in ``directories``, if any."""
    for directory in directories:
        for suffix in (".yaml", ".yml"):
            candidate = Path(directory) / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
    return None


def find_workflow(
    reference: str,
    *,
    known: Mapping[str, Workflow] | None = None,
    directories: Iterable[Path] = (),
) -> Workflow:
    """The workflow ``reference`` names, as ``Workflows.load`` finds it, with ``known`` by
    name and ``directories`` holding ``NAME.yaml``; ``WorkflowError`` saying where it looked.
    """
    if known and reference in known:
        return known[reference]
    directories = tuple(directories)
    found = workflow_file(reference, directories)
    if found is not None:
        return load_workflow(found)
    if ":" in reference or Path(reference).exists() or reference.endswith((".yaml", ".yml")):
        return load_workflow(reference)
    looked = ["not registered"] if known else []
    if directories:
        looked.append(f"not a NAME.yaml in {', '.join(str(d) for d in directories)}")
    looked.append("not a file and not module:attribute")
    raise WorkflowError(f"no workflow {reference!r}: {', '.join(looked)}", workflow=reference)
