"""``compile_expression``: parse once, evaluate many times."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from assay.errors import ExpressionError, ExpressionSyntaxError, WrongTypeError
from assay.expr.codegen import CodeGenerator
from assay.expr.functions import GLOBAL_FUNCTIONS, GLOBAL_NAMESPACES
from assay.expr.limits import Limits
from assay.expr.parser import parse
from assay.expr.path import format_path
from assay.expr.predicate import Check, require_state
from assay.expr.syntax import Arrow, Call, Chain, Identifier, Literal, Member, Node, children
from assay.expr.values import to_boolean


class Expression:
    """A compiled ``verify_expression``; immutable and safe to share between threads.

    ``evaluate(state)`` returns the JavaScript value (``UNDEFINED`` for undefined, ``None``
    for null) or raises ``ExpressionEvaluationError`` where JavaScript would throw;
    ``test(state)`` returns ``Boolean(value)``; ``check(state)`` never raises for a JSON state.
    """

    __slots__ = ("_keys", "evaluate", "limits", "source", "test")

    source: str
    limits: Limits
    evaluate: Callable[[Mapping[str, Any]], Any]
    test: Callable[[Mapping[str, Any]], bool]

    def __init__(self, source: str, limits: Limits | None = None) -> None:
        limits = limits or Limits()
        if len(source) > limits.max_source_length:
            raise ExpressionSyntaxError(
                f"the expression is {len(source)} characters long; the limit is "
                f"{limits.max_source_length} (max_source_length)",
                source[: limits.max_source_length],
                limits.max_source_length - 1,
            )
        tree = parse(source, limits.max_depth)
        self.source = source
        self.limits = limits
        self.evaluate, self.test = CodeGenerator(source, limits).compile(tree)
        self._keys = tuple(sorted({format_path(path) for path in _state_paths(tree)}))

    @property
    def keys(self) -> tuple[str, ...]:
        """The dotted state paths the expression reads, sorted."""
        return self._keys

    def check(self, state: Mapping[str, Any]) -> Check:
        """Evaluate once; an evaluation error becomes ``result=None`` with its message.

        Raises ``WrongTypeError`` if ``state`` is not a mapping.
        """
        require_state(state)
        try:
            value = self.evaluate(state)
        except ExpressionError as error:
            return Check(result=None, value=None, error=str(error))
        return Check(result=to_boolean(value), value=value)

    def __repr__(self) -> str:
        return f"Expression({self.source!r})"


@functools.lru_cache(maxsize=2048)
def _compile_cached(source: str, limits: Limits) -> Expression:
    return Expression(source, limits)


def compile_expression(source: str, *, limits: Limits | None = None) -> Expression:
    """Compile ``source`` once; raises ``ExpressionSyntaxError`` with position and caret."""
    if not isinstance(source, str):
        raise WrongTypeError(
            f"an expression must be a str, not {type(source).__name__}", parameter="source"
        )
    return _compile_cached(source, limits or Limits())


def _static_path(node: Node, params: frozenset[str]) -> tuple[str, ...] | None:
    if isinstance(node, Identifier):
        return None if node.name in params else (node.name,)
    if isinstance(node, Chain):
        return _static_path(node.expression, params)
    if isinstance(node, Member):
        prop = node.prop
        if isinstance(prop, Literal) and type(prop.value) is str:
            prop = prop.value
        if isinstance(prop, str):
            base = _static_path(node.obj, params)
            return None if base is None else (*base, prop)
    return None


def _is_global_callee(node: Node, params: frozenset[str]) -> bool:
    if isinstance(node, Identifier):
        return node.name in GLOBAL_FUNCTIONS and node.name not in params
    return (
        isinstance(node, Member)
        and isinstance(node.obj, Identifier)
        and node.obj.name in GLOBAL_NAMESPACES
        and node.obj.name not in params
    )


def _state_paths(root: Node) -> set[tuple[str, ...]]:
    """The longest constant paths into the state that the tree reads."""
    paths: set[tuple[str, ...]] = set()
    stack: list[tuple[Node, frozenset[str]]] = [(root, frozenset())]
    while stack:
        node, params = stack.pop()
        if isinstance(node, Arrow):
            stack.append((node.body, params | set(node.params)))
            continue
        if isinstance(node, Call):
            callee = node.callee
            if not _is_global_callee(callee, params) and isinstance(callee, Member):
                stack.append((callee.obj, params))
            stack.extend((arg, params) for arg in node.args)
            continue
        path = _static_path(node, params)
        if path is not None:
            paths.add(path)
            continue
        stack.extend((child, params) for child in children(node))
    return paths
