"""Workflow definitions (SPEC §8), written in Python or in YAML, validated and compiled once.

``Workflow.from_mapping`` takes the YAML shape; ``load_workflow`` reads a file (``yaml
.safe_load``) or imports ``module:attribute``. Executors and planners are ``module:function``
references, resolved at load time (a module beside a YAML file is found there too), or, in
Python, the callables themselves. Loading checks shape and compiles criteria; the authoring
rules are ``lint``'s.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from assay.errors import StateError, WorkflowError, describe_raised
from assay.graph import Reversibility
from assay.state.canonical import canonical_value
from assay.workflow.budget import Budget
from assay.workflow.ceiling import check_ceiling
from assay.workflow.context import Executor, Planner
from assay.workflow.criterion import Criterion, compile_criterion

RungKind = Literal["fresh_attempt", "executor", "model", "human"]
_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_M = TypeVar("_M", bound=BaseModel)


class ModelSettings(BaseModel):
    """Where the model verifier's model is: exactly one of ``base_url``, an OpenAI-compatible
    endpoint asked for the model ``model``, or ``path``, a GGUF model file run in this
    process (llama-cpp-python: install ``assay[local-model]``); in a YAML workflow a relative
    ``path`` is read from the workflow file's directory.

    ``response_format`` is ``json_schema`` (OpenAI, llama.cpp's own server) or
    ``json_object`` (a JSON object with a ``schema``, as llama-cpp-python's server takes it);
    a model file is always constrained the latter way. The API key, if any, is read from the
    environment variable ``api_key_env``. ``context_tokens`` is the context window a model
    file is loaded with.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = Field(default=None, min_length=1)
    path: str | None = Field(default=None, min_length=1)
    model: str = "local"
    api_key_env: str | None = None
    response_format: Literal["json_schema", "json_object"] = "json_schema"
    timeout_s: float = 120.0
    max_tokens: int = Field(default=512, ge=1)
    context_tokens: int = Field(default=2048, ge=64)

    @model_validator(mode="after")
    def _one_model(self) -> ModelSettings:
        if (self.base_url is None) == (self.path is None):
            given = "both" if self.base_url is not None else "neither"
            raise ValueError(
                "give exactly one of base_url (an OpenAI-compatible endpoint) and path (a GGUF "
                f"model file to run in this process), not {given}"
            )
        return self

    @property
    def where(self) -> str:
        """The endpoint or the model file, as messages name it."""
        return f"the model at {self.base_url}" if self.path is None else f"the model {self.path}"


@dataclass(frozen=True, slots=True)
class Rung:
    """One rung of an escalation ladder; ``label`` is how it was written."""

    kind: RungKind
    label: str
    executor: Executor | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """One step: who produces its output, how it is verified, and what happens on failure."""

    id: str
    executor: Executor
    empty_output: Mapping[str, Any] | None = None
    criteria: tuple[Criterion, ...] = ()
    prompt: str | None = None
    planner: Planner | None = None
    escalation: tuple[Rung, ...] = (Rung("human", "human"),)
    budget: Budget | None = None
    reversibility: Reversibility = Reversibility.REVERSIBLE


@dataclass(frozen=True, slots=True)
class Workflow:
    """A named sequence of steps under one budget; ``source`` is where it was loaded from."""

    name: str
    steps: tuple[Step, ...]
    budget: Budget = field(default_factory=Budget)
    model: ModelSettings | None = None
    example_input: Mapping[str, Any] = field(default_factory=dict)
    source: str | None = None

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise WorkflowError(
            f"workflow {self.name!r} has no step {step_id!r}; its steps are "
            + ", ".join(step.id for step in self.steps),
            workflow=self.name,
            step=step_id,
        )

    @classmethod
    def from_mapping(
        cls, raw: Any, *, source: str | None = None, base: Path | None = None
    ) -> Workflow:
        """Build from the YAML shape; ``WorkflowError`` names the field at fault."""
        return _parse_workflow(raw, source=source, base=base)


def load_workflow(reference: str | Path) -> Workflow:
    """The workflow in a YAML/JSON file, or at ``module:attribute`` (a ``Workflow`` there)."""
    text = str(reference)
    path = Path(text)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8-sig"))
        except OSError as error:
            raise WorkflowError(
                f"cannot read the workflow file {text!r}: {error.strerror}", workflow=text
            ) from None
        except UnicodeDecodeError as error:
            raise WorkflowError(
                f"the workflow file {text!r} is not UTF-8 text: {error.reason}", workflow=text
            ) from None
        except yaml.YAMLError as error:
            raise WorkflowError(f"{text} is not valid YAML: {error}", workflow=text) from None
        resolved = path.resolve()
        return _parse_workflow(raw, source=str(resolved), base=resolved.parent)
    found = resolve_reference(text, workflow=text, step=None, field="workflow")
    if not isinstance(found, Workflow):
        raise WorkflowError(
            f"{text} is a {type(found).__name__}, not a Workflow", workflow=text, field="workflow"
        )
    return found if found.source else _with_source(found, text)


def resolve_reference(
    reference: str, *, workflow: str, step: str | None, field: str, base: Path | None = None
) -> Any:
    """Import ``module:attribute``; a module in ``base`` (a YAML file's folder) is found too."""
    module_name, colon, attribute = reference.partition(":")
    if not colon or not module_name or not attribute:
        raise WorkflowError(
            f"{field} must be written module:function (e.g. mypkg.steps:select), not {reference!r}",
            workflow=workflow,
            step=step,
            field=field,
        )
    try:
        module = _import(module_name, base)
    except ImportError as error:
        raise WorkflowError(
            f"{field} {reference!r}: cannot import {module_name!r} ({error}); put it on "
            "PYTHONPATH or beside the workflow file",
            workflow=workflow,
            step=step,
            field=field,
        ) from None
    except Exception as error:  # the module's own code failed: its author's to fix
        raise WorkflowError(
            f"{field} {reference!r}: importing {module_name!r} failed: {describe_raised(error)}",
            workflow=workflow,
            step=step,
            field=field,
        ) from error
    found = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise WorkflowError(
                f"{field} {reference!r}: module {module_name!r} has no {attribute!r}",
                workflow=workflow,
                step=step,
                field=field,
            ) from None
    return found


def _import(module_name: str, base: Path | None) -> Any:
    if module_name in sys.modules or base is None:
        return importlib.import_module(module_name)
    candidate = base.joinpath(*module_name.split(".")).with_suffix(".py")
    if not candidate.is_file():
        return importlib.import_module(module_name)
    spec = importlib.util.spec_from_file_location(module_name, candidate)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        raise ImportError(f"no loader for {candidate}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]  # as import does: a module that failed is not imported
        raise
    return module


def _with_source(workflow: Workflow, source: str) -> Workflow:
    return Workflow(
        workflow.name,
        workflow.steps,
        workflow.budget,
        workflow.model,
        workflow.example_input,
        source,
    )


def _fail(message: str, name: str, step: str | None = None, field: str | None = None) -> NoReturn:
    raise WorkflowError(message, workflow=name, step=step, field=field)


def _parse_workflow(raw: Any, *, source: str | None, base: Path | None) -> Workflow:
    where = source or "<mapping>"
    if not isinstance(raw, Mapping):
        got = "nothing (the file is empty)" if raw is None else f"a {type(raw).__name__}"
        raise WorkflowError(
            f"{where}: a workflow is a mapping with workflow, steps and budget; got {got}",
            workflow=where,
        )
    known = {"workflow", "description", "budget", "steps", "model", "example_input"}
    name = raw.get("workflow")
    if not isinstance(name, str) or not _ID.fullmatch(name):
        _fail(
            f"{where}: 'workflow' must name the workflow (letters, digits, _ and -)",
            where,
            field="workflow",
        )
    for key in raw:
        if key not in known:
            _fail(f"workflow {name!r}: unknown field {key!r}; known: {sorted(known)}", name)
    budget = _model(Budget, raw.get("budget") or {}, name, None, "budget")
    model = (
        None
        if raw.get("model") is None
        else _model(ModelSettings, raw["model"], name, None, "model")
    )
    if model is not None and model.path is not None and base is not None:
        model = model.model_copy(update={"path": str(base / Path(model.path).expanduser())})
    example = raw.get("example_input") or {}
    if not isinstance(example, Mapping):
        _fail(
            f"workflow {name!r}: example_input must be a JSON object", name, None, "example_input"
        )
    example = _json_value(example, f"workflow {name!r}", name, None, "example_input")
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, Sequence) or isinstance(steps_raw, str) or not steps_raw:
        _fail(f"workflow {name!r}: 'steps' must be a non-empty list of steps", name, None, "steps")
    steps = tuple(_parse_step(item, name, base) for item in steps_raw)
    seen: set[str] = set()
    for step in steps:
        if step.id in seen:
            _fail(f"workflow {name!r}: two steps are called {step.id!r}", name, step.id, "id")
        seen.add(step.id)
    workflow = Workflow(name, steps, budget, model, dict(example), source)
    check_ceiling(workflow)
    return workflow


def _parse_step(raw: Any, workflow: str, base: Path | None) -> Step:
    if not isinstance(raw, Mapping):
        raise WorkflowError(f"workflow {workflow!r}: each step is a mapping", workflow=workflow)
    step_id = raw.get("id")
    if not isinstance(step_id, str) or not _ID.fullmatch(step_id):
        raise WorkflowError(
            f"workflow {workflow!r}: a step's id must be a name (letters, digits, _ and -), "
            f"not {step_id!r}",
            workflow=workflow,
            field="id",
        )
    known = {"id", "executor", "planner", "empty_output", "verify", "escalation", "budget",
             "reversibility", "description"}  # fmt: skip
    for key in raw:
        if key not in known:
            _fail(f"step {step_id!r}: unknown field {key!r}; known: {sorted(known)}",
                  workflow, step_id, str(key))  # fmt: skip
    executor = _callable(raw.get("executor"), workflow, step_id, "executor", base)
    planner = None
    if raw.get("planner") is not None:
        planner = _callable(raw["planner"], workflow, step_id, "planner", base)
    empty = raw.get("empty_output")
    if empty is not None and not isinstance(empty, Mapping):
        _fail(f"step {step_id!r}: empty_output must be a JSON object", workflow, step_id,
              "empty_output")  # fmt: skip
    if empty is not None:
        empty = _json_value(empty, f"step {step_id!r}", workflow, step_id, "empty_output")
    verify = raw.get("verify") or {}
    if not isinstance(verify, Mapping) or set(verify) - {"prompt", "criteria"}:
        _fail(f"step {step_id!r}: verify holds prompt and criteria only", workflow, step_id,
              "verify")  # fmt: skip
    prompt = verify.get("prompt")
    if prompt is not None and not isinstance(prompt, str):
        _fail(f"step {step_id!r}: verify.prompt must be text", workflow, step_id, "verify.prompt")
    criteria_raw = verify.get("criteria") or []
    if not isinstance(criteria_raw, list):
        _fail(f"step {step_id!r}: verify.criteria must be a list", workflow, step_id,
              "verify.criteria")  # fmt: skip
    criteria = tuple(compile_criterion(c, workflow=workflow, step=step_id) for c in criteria_raw)
    ladder = raw.get("escalation", ["human"])
    if not isinstance(ladder, list):
        _fail(f"step {step_id!r}: escalation must be a list of rungs", workflow, step_id,
              "escalation")  # fmt: skip
    rungs = tuple(_rung(item, workflow, step_id, base) for item in ladder)
    budget = None
    if raw.get("budget") is not None:
        budget = _model(Budget, raw["budget"], workflow, step_id, "budget")
    tier = raw.get("reversibility", "reversible")
    try:
        reversibility = Reversibility(tier)
    except ValueError:
        raise WorkflowError(
            f"step {step_id!r}: reversibility must be one of "
            f"{', '.join(t.value for t in Reversibility)}, not {tier!r}",
            workflow=workflow,
            step=step_id,
            field="reversibility",
        ) from None
    return Step(
        step_id,
        executor,
        dict(empty) if empty is not None else None,
        criteria,
        prompt,
        planner,
        rungs,
        budget,
        reversibility,
    )


def _json_value(
    raw: Mapping[str, Any], owner: str, workflow: str, step: str | None, field: str
) -> dict[str, Any]:
    """A plain JSON copy of ``raw``, read as a run reads outputs; ``WorkflowError`` if JSON
    cannot carry it (NaN, a YAML anchor that contains itself, a Python object)."""
    try:
        copied: dict[str, Any] = canonical_value(raw, (field,))
    except StateError as error:
        reason = str(error).removeprefix("cannot store ")
        if "nests deeper" in reason:
            reason += " (a YAML anchor used inside itself nests without end)"
        _fail(f"{owner}: {field} is not JSON: {reason}", workflow, step, field)
    return copied


def _rung(raw: Any, workflow: str, step: str, base: Path | None) -> Rung:
    if raw in ("fresh_attempt", "human"):
        return Rung(raw, raw)
    if isinstance(raw, Mapping) and len(raw) == 1:
        ((key, value),) = raw.items()
        if key == "executor":
            executor = _callable(value, workflow, step, "escalation.executor", base)
            return Rung("executor", f"executor: {value}", executor=executor)
        if key == "model" and isinstance(value, str):
            return Rung("model", f"model: {value}", model=value)
    raise WorkflowError(
        f"step {step!r}: an escalation rung is fresh_attempt, human, {{executor: module:function}}"
        f" or {{model: NAME}}, not {raw!r}",
        workflow=workflow,
        step=step,
        field="escalation",
    )


def _callable(raw: Any, workflow: str, step: str, field: str, base: Path | None) -> Any:
    if callable(raw):
        return raw
    if not isinstance(raw, str):
        raise WorkflowError(
            f"step {step!r}: {field} must be module:function, not {raw!r}",
            workflow=workflow,
            step=step,
            field=field,
        )
    found = resolve_reference(raw, workflow=workflow, step=step, field=field, base=base)
    if not callable(found):
        raise WorkflowError(
            f"step {step!r}: {field} {raw!r} is not callable", workflow=workflow, step=step,
            field=field,
        )  # fmt: skip
    return found


def _model(kind: type[_M], raw: Any, workflow: str, step: str | None, field: str) -> _M:
    try:
        return kind.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in (field, *first["loc"]))
        owner = f"step {step!r}" if step else f"workflow {workflow!r}"
        raise WorkflowError(
            f"{owner}: {where}: {first['msg']} (got {first.get('input')!r})",
            workflow=workflow,
            step=step,
            field=where,
        ) from None
