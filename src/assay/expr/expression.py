"""``compile_expression``: parse once, evaluate many times."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from assay.errors import ExpressionError, ExpressionSyntaxError, WrongTypeError
from assay.expr.codegen import CodeGenerator
from assay.expr.functions import GLOBAL_FUNCTIONS, GLOBAL_NAMESPACES
from assay.expr.limits import Limits
from assay.expr.operators import get_path, member_key
from assay.expr.parser import parse
from assay.expr.path import format_path
from assay.expr.predicate import Check, require_state
from assay.expr.syntax import (
    Arrow,
    Binary,
    Call,
    Chain,
    Identifier,
    Literal,
    Member,
    Node,
    children,
)
from assay.expr.values import to_boolean


class Expression:
    """A compiled ``verify_expression``; immutable and safe to share between threads.

    ``evaluate(state)`` returns the JavaScript value (``UNDEFINED`` for undefined, ``None``
    for null) or raises ``ExpressionEvaluationError`` where JavaScript would throw;
    ``test(state)`` returns ``Boolean(value)``; ``check(state)`` never raises for a JSON state.
    """

    __slots__ = ("_keys", "_plain", "_templates", "evaluate", "limits", "source", "test")

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
        paths = _state_paths(tree)
        plain = {path for path in paths if all(type(part) is str for part in path)}
        self._plain = frozenset(format_path(path) for path in plain)  # type: ignore[arg-type]
        self._templates = tuple(path for path in paths if path not in plain)
        coarse = {format_path(_until_argument(path)) for path in self._templates}
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
        ``orders`` when it is an object, an array or missing."""
        keys = {key for key in self._plain if key != "args" and not key.startswith("args.")}
        for template in self._templates:
            keys.add(format_path(_filled(template, args)))
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
def _compile_cached(source: str, limits: Limits) -> Expression:
    return Expression(source, limits)


def compile_expression(source: str, *, limits: Limits | None = None) -> Expression:
    """Compile ``source`` once; raises ``ExpressionSyntaxError`` with position and caret."""
    if not isinstance(source, str):
        raise WrongTypeError(
            f"an expression must be a str, not {type(source).__name__}", parameter="source"
        )
    return _compile_cached(source, limits or Limits())


@dataclass(frozen=True, slots=True)
class ArgumentSegment:
    """A path segment named by a fire's argument: ``args.order_id`` in ``orders[args.order_id]``."""

    path: tuple[str, ...]


Segment = str | ArgumentSegment


def _static_path(node: Node, params: frozenset[str]) -> tuple[str, ...] | None:
    path = _templated_path(node, params, arguments=False)
    return path  # type: ignore[return-value]  # without arguments, every segment is a str


def _templated_path(
    node: Node, params: frozenset[str], *, arguments: bool = True
) -> tuple[Segment, ...] | None:
    """The constant path ``node`` reads; with ``arguments``, a computed member keyed by a path
    under ``args`` (not a callback's parameter) is a segment to fill from the fire's args."""
    if isinstance(node, Identifier):
        return None if node.name in params else (node.name,)
    if isinstance(node, Chain):
        return _templated_path(node.expression, params, arguments=arguments)
    if isinstance(node, Member):
        prop = node.prop if isinstance(node.prop, str) else _key(node.prop, params, arguments)
        if prop is not None:
            base = _templated_path(node.obj, params, arguments=arguments)
            return None if base is None else (*base, prop)
    return None


def _key(node: Node, params: frozenset[str], arguments: bool = True) -> Segment | None:
    """The member a computed key names: a literal's, converted as evaluation converts it
    (``orders[1]`` reads ``orders.1``), or, with ``arguments``, a path under ``args`` (not
    a callback's parameter) to fill from the fire's args; ``None`` for any other key."""
    if isinstance(node, Literal):
        return member_key(node.value)
    if arguments:
        named = _static_path(node, params)
        if named is not None and named[0] == "args" and len(named) > 1:
            return ArgumentSegment(named[1:])
    return None


def _until_argument(path: tuple[Segment, ...]) -> tuple[str, ...]:
    """``path`` up to its first argument segment."""
    for index, part in enumerate(path):
        if isinstance(part, ArgumentSegment):
            return path[:index]  # type: ignore[return-value]
    return path  # type: ignore[return-value]


def _filled(path: tuple[Segment, ...], args: Mapping[str, Any]) -> tuple[str, ...]:
    """``path`` with each argument segment filled from ``args``; up to the first whose key is
    unknown (an object or an array, a missing argument), where the whole object is read."""
    filled: list[str] = []
    for part in path:
        key = part if isinstance(part, str) else _argument_key(args, part.path)
        if key is None:
            break
        filled.append(key)
    return tuple(filled)


def _argument_key(args: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    """The key that ``obj[args.<names>]`` reads, the argument read and converted to a key as
    evaluation reads and converts it (``1`` reads ``"1"``); ``None`` where that names no one
    member, or where reading the argument throws, so the member is never read."""
    texts = tuple(format_path(("args", *names[:depth])) for depth in range(len(names)))
    try:
        value = get_path(dict(args), names, texts)
    except ExpressionError:
        return None
    return member_key(value)


def _is_global_callee(node: Node, params: frozenset[str]) -> bool:
    if isinstance(node, Identifier):
        return node.name in GLOBAL_FUNCTIONS and node.name not in params
    return (
        isinstance(node, Member)
        and isinstance(node.obj, Identifier)
        and node.obj.name in GLOBAL_NAMESPACES
        and node.obj.name not in params
    )


def _state_paths(root: Node) -> set[tuple[Segment, ...]]:
    """The longest constant paths into the state that the tree reads, a segment keyed by a
    fire's argument included (its key, under ``args``, is read as well)."""
    paths: set[tuple[Segment, ...]] = set()
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
        if isinstance(node, Binary) and node.op == "in":
            # `key in obj` reads whether obj has that one member, as obj[key] would read it.
            key = _key(node.left, params)
            obj = _templated_path(node.right, params)
            if key is not None and obj is not None:
                paths.add((*obj, key))
                continue
        path = _templated_path(node, params)
        if path is not None:
            paths.add(path)
            continue
        stack.extend((child, params) for child in children(node))
    return paths
