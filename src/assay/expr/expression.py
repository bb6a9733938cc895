"""``compile_expression``: parse once, evaluate many times."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

from assay.errors import ExpressionError, ExpressionSyntaxError, WrongTypeError
from assay.expr.codegen import CodeGenerator
from assay.expr.limits import ExpressionLimits
from assay.expr.parser import parse
from assay.expr.predicate import Check, require_state
from assay.expr.reads import ArgumentSegment, filled, state_paths, until_argument
from assay.json.path import format_path
from assay.json.values import to_boolean


class Expression:
    """A compiled ``verify_expression``; immutable and safe to share between threads.

    ``evaluate(state)`` returns the JavaScript value (``UNDEFINED`` for undefined, ``None``
    for null) or raises ``ExpressionEvaluationError`` where JavaScript would throw;
    ``test(state)`` returns ``Boolean(value)``; ``check(state)`` never raises for a JSON state.
    """

    __slots__ = ("_keys", "_plain", "_templates", "evaluate", "limits", "source", "test")

    source: str
    limits: ExpressionLimits
    evaluate: Callable[[Mapping[str, Any]], Any]
    test: Callable[[Mapping[str, Any]], bool]

    def __init__(self, source: str, limits: ExpressionLimits | None = None) -> None:
        limits = limits or ExpressionLimits()
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
        paths = state_paths(tree)
        plain = {path for path in paths if all(type(part) is str for part in path)}
        self._plain = frozenset(format_path(path) for path in plain)  # type: ignore[arg-type]
        self._templates = tuple(path for path in paths if path not in plain)
        coarse = {format_path(until_argument(path)) for path in self._templates}
        read_args = {
            format_path(("args", *part.path))
            for path in self._templates
            for part in path
            if isinstance(part, ArgumentSegment)
        }
        self._keys = tuple(sorted(self._plain | coarse | read_args))

    @property
    def keys(self) -> tuple[str, ...]:
        """The dotted state paths the expression reads, sorted. A computed member it cannot
        name (``orders[args.order_id].status``) reads its object (``orders``) and the key."""
        return self._keys

    def keys_with(self, args: Mapping[str, Any]) -> tuple[str, ...]:
        """The state paths the expression reads when ``args`` is the state's ``args`` (a
        fire's arguments), sorted and without ``args``' own: ``orders[args.order_id].status``
        reads ``orders.o1.status`` when ``args.order_id`` is the string ``"o1"``,
        ``orders.1.status`` when it is the number ``1`` (the key JavaScript converts it to), and
        ``orders`` when it is an object, an array or missing; ``args.ids.every(id =>
        orders[id].ok)`` reads ``orders.a.ok`` and ``orders.b.ok`` when ``args.ids`` is
        ``["a", "b"]``."""
        keys = {key for key in self._plain if key != "args" and not key.startswith("args.")}
        for template in self._templates:
            keys.update(format_path(path) for path in filled(template, args))
        return tuple(sorted(keys))

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
def _compile_cached(source: str, limits: ExpressionLimits) -> Expression:
    return Expression(source, limits)


def compile_expression(source: str, *, limits: ExpressionLimits | None = None) -> Expression:
    """Compile ``source`` once; raises ``ExpressionSyntaxError`` with position and caret."""
    if not isinstance(source, str):
        raise WrongTypeError(
            f"an expression must be a str, not {type(source).__name__}", parameter="source"
        )
    return _compile_cached(source, limits or ExpressionLimits())
