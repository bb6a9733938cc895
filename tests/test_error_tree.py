"""The exception tree is pinned: its families, its builtins, its drawing and ``where``."""

from __future__ import annotations

import builtins
import inspect
import re
from pathlib import Path

import pytest

import assay.errors
from assay import compile_expression, load_workflow
from assay.clock import VirtualClock
from assay.errors import (
    AssayError,
    ExpressionSyntaxError,
    GraphError,
    LedgerEntryError,
    RequestError,
    StateError,
    WorkflowError,
)
from assay.graph import Session, build_navigation_graph
from assay.ledger import Ledger, MemoryBackend
from assay.server.config import load_config
from assay.state.store import StateStore

FAMILY = {
    "InputError": "AssayError",
    "LedgerError": "AssayError",
    "LifecycleError": "AssayError",
    "ExternalError": "AssayError",
    "ExpressionError": "InputError",
    "ExpressionSyntaxError": "ExpressionError",
    "ExpressionEvaluationError": "ExpressionError",
    "ExpressionLimitError": "ExpressionEvaluationError",
    "ContractError": "InputError",
    "StateError": "InputError",
    "ProbeConfigError": "InputError",
    "GraphError": "InputError",
    "SigningKeyError": "InputError",
    "LedgerEntryError": "InputError",
    "ProofError": "InputError",
    "CheckpointError": "InputError",
    "RequestError": "InputError",
    "IdempotencyKeyReusedError": "RequestError",
    "NotFoundError": "InputError",
    "WorkflowError": "InputError",
    "WorkflowLintError": "WorkflowError",
    "WorkflowUnavailableError": "WorkflowError",
    "WrongTypeError": "InputError",
    "LedgerIntegrityError": "LedgerError",
    "EvidenceStoppedError": "LedgerError",
    "TransitionError": "LifecycleError",
    "SessionError": "LifecycleError",
    "RunError": "LifecycleError",
    "RunNotFoundError": "RunError",
    "ProbeError": "ExternalError",
    "ApplicationError": "ExternalError",
    "ModelError": "ExternalError",
}
"""Each error's parent in assay's tree: the family a caller catches it with."""

BUILTINS = {
    "AssayError": {Exception},
    "ExpressionSyntaxError": {SyntaxError},
    "ExpressionEvaluationError": {TypeError},
    "ContractError": {ValueError},
    "StateError": {ValueError},
    "ProbeConfigError": {ValueError},
    "GraphError": {ValueError},
    "SigningKeyError": {ValueError},
    "LedgerEntryError": {ValueError},
    "ProofError": {ValueError},
    "CheckpointError": {ValueError},
    "RequestError": {ValueError},
    "NotFoundError": {LookupError},
    "WorkflowError": {ValueError},
    "WrongTypeError": {TypeError},
    "LedgerError": {RuntimeError},
    "TransitionError": {RuntimeError},
    "SessionError": {RuntimeError},
    "RunError": {RuntimeError},
    "RunNotFoundError": {LookupError},
    "ProbeError": {RuntimeError},
    "ApplicationError": {RuntimeError},
    "ModelError": {RuntimeError},
}
"""The builtins each error names among its own bases (the rest inherit theirs)."""

LEAF_BUILTINS = (SyntaxError, TypeError, ValueError, LookupError, RuntimeError)


def defined() -> dict[str, type[AssayError]]:
    return {
        name: value
        for name, value in vars(assay.errors).items()
        if inspect.isclass(value) and issubclass(value, AssayError)
    }


def drawn() -> dict[str, tuple[str | None, set[type[BaseException]]]]:
    """Each class the module docstring draws: its drawn parent and its drawn builtins."""
    doc = assay.errors.__doc__ or ""
    lines = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    found: dict[str, tuple[str | None, set[type[BaseException]]]] = {}
    parents: list[str] = []
    for line in lines:
        match = re.fullmatch(r"    ([│ ]*(?:[├└]── )?)(\w+)(?:\((\w+)\))?(?:\s.*)?", line)
        assert match is not None, line
        depth = len(match.group(1)) // 4
        name, base = match.group(2), match.group(3)
        del parents[depth:]
        found[name] = (
            parents[-1] if parents else None,
            {getattr(builtins, base)} if base else set(),
        )
        parents.append(name)
    return found


def test_each_error_is_in_its_family() -> None:
    classes = defined()
    assert set(classes) == set(FAMILY) | {"AssayError"}
    for name, parent in FAMILY.items():
        assert classes[name].__bases__[0] is classes[parent], name


def test_each_error_names_its_builtin_and_no_other() -> None:
    for name, cls in defined().items():
        own = {base for base in cls.__bases__ if not issubclass(base, AssayError)}
        assert own == BUILTINS.get(name, set()), name


def kept(name: str) -> set[type[BaseException]]:
    """The builtins ``name`` had before the families: its own and its old ancestors'."""
    own = BUILTINS.get(name, set()) - {Exception}
    parent = FAMILY.get(name)
    return own | (kept(parent) if parent else set())


def test_each_error_keeps_the_builtins_it_had_and_gains_none() -> None:
    for name, cls in defined().items():
        held = {builtin for builtin in LEAF_BUILTINS if issubclass(cls, builtin)}
        assert held == kept(name), name
    assert kept("RunNotFoundError") == {RuntimeError, LookupError}
    assert kept("ExpressionLimitError") == {TypeError}
    assert kept("InputError") == set()


def test_the_family_heads_are_no_builtin_but_exception() -> None:
    for head in (assay.errors.InputError, assay.errors.LifecycleError, assay.errors.ExternalError):
        assert not issubclass(head, LEAF_BUILTINS)
        assert head("x").where is None


def test_the_drawing_is_the_tree() -> None:
    tree = drawn()
    assert set(tree) == set(defined())
    for name, (parent, bases) in tree.items():
        assert parent == FAMILY.get(name), name
        assert bases == BUILTINS.get(name, set()), name


def test_where_is_a_keyword_of_the_base() -> None:
    assert AssayError("x").where is None
    assert AssayError("x", where="key").where == "key"
    assert str(AssayError("x", where="key")) == "x"


def test_a_bad_expression_says_where() -> None:
    with pytest.raises(ExpressionSyntaxError) as caught:
        compile_expression("state.a +")
    assert caught.value.where == f"position {caught.value.position}"
    assert caught.value.position == 9


def test_a_bad_state_report_key_says_where() -> None:
    store = StateStore({"a": 1}, clock=VirtualClock(100.0))
    with pytest.raises(StateError) as caught:
        store.report({"a..b": 1})
    assert caught.value.where == caught.value.key == "a..b"


def test_a_bad_ledger_entry_says_where() -> None:
    ledger = Ledger(MemoryBackend(), clock=VirtualClock(100.0))
    with pytest.raises(LedgerEntryError) as caught:
        ledger.append("nope", {})
    assert caught.value.where == caught.value.field == "kind"


def test_a_bad_workflow_field_says_where(tmp_path: Path) -> None:
    path = tmp_path / "flow.yaml"
    path.write_text("workflow: flow\nsteps:\n  - id: 7\n", encoding="utf-8")
    with pytest.raises(WorkflowError) as caught:
        load_workflow(path)
    assert caught.value.where == caught.value.field == "id"


def test_a_bad_request_field_says_where() -> None:
    with pytest.raises(RequestError) as caught:
        load_config({"port": 70000}, environ={})
    assert caught.value.where == caught.value.field == "port"


def test_a_bad_start_page_says_where() -> None:
    graph = build_navigation_graph("app", {"home": {"actions": {}}})
    with pytest.raises(GraphError) as caught:
        Session(graph, node="attic")
    assert caught.value.where == caught.value.field == "node"
    assert caught.value.page is None
