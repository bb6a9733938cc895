"""The state paths an expression reads: its ``keys``, and a fire's ``keys_with``.

A path is constant (``inbox.sent_count``) or a template whose segments a fire's arguments
name: ``orders[args.order_id].status``, and ``orders[id].status`` inside
``args.ids.every(id => ...)``, one path for each id. A computed member whose key cannot be
named (``orders[i]`` for a callback's index, ``orders["o" + n]``) reads its whole object:
a key left out would hide a change the expression depends on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from assay.errors import ExpressionError
from assay.expr.functions import GLOBAL_FUNCTIONS, GLOBAL_NAMESPACES
from assay.expr.methods import CALLBACK_METHODS
from assay.expr.operators import get_path, member_key
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
from assay.json.path import format_path

MAX_FILLED: Final = 10_000
"""The most paths one template is filled into; past it, the object is read whole."""


@dataclass(frozen=True, slots=True)
class ArgumentSegment:
    """A path segment named by a fire's argument at ``path`` under ``args``
    (``orders[args.order_id]``), or, when ``each`` is set, by ``each`` under every element of
    that argument (``orders[it.id]`` in ``args.items.some(it => ...)`` has ``each=("id",)``)."""

    path: tuple[str, ...]
    each: tuple[str, ...] | None = None


Segment = str | ArgumentSegment
Template = tuple[Segment, ...]
Scope = Mapping[str, tuple[str, ...] | None]
"""The callback parameters in scope; one that stands for the elements of an argument array
maps to that argument's path under ``args``, any other to ``None``."""


def state_paths(root: Node) -> set[Template]:
    """The longest constant paths into the state that the tree reads, templates included."""
    paths: set[Template] = set()
    stack: list[tuple[Node, Scope]] = [(root, {})]
    while stack:
        node, scope = stack.pop()
        if isinstance(node, Arrow):
            stack.append((node.body, {**scope, **dict.fromkeys(node.params)}))
            continue
        if isinstance(node, Call):
            callee = node.callee
            array = None
            if not _is_global_callee(callee, scope) and isinstance(callee, Member):
                stack.append((callee.obj, scope))
                if callee.prop in CALLBACK_METHODS:
                    array = _argument(callee.obj, scope)
            for arg in node.args:
                if isinstance(arg, Arrow) and arg.params and array and array.each is None:
                    # The callback's first parameter is each element of an argument array.
                    inner = {**scope, **dict.fromkeys(arg.params), arg.params[0]: array.path}
                    stack.append((arg.body, inner))
                else:
                    stack.append((arg, scope))
            continue
        if isinstance(node, Binary) and node.op == "in":
            # `key in obj` reads whether obj has that one member, as obj[key] would read it.
            key = _key(node.left, scope)
            obj = _templated_path(node.right, scope)
            if key is not None and obj is not None:
                paths.add((*obj, key))
                continue
        path = _templated_path(node, scope)
        if path is not None:
            paths.add(path)
            continue
        stack.extend((child, scope) for child in children(node))
    return paths


def until_argument(path: Template) -> tuple[str, ...]:
    """``path`` up to its first argument segment: the object read when it is not known."""
    for index, part in enumerate(path):
        if isinstance(part, ArgumentSegment):
            return path[:index]  # type: ignore[return-value]
    return path  # type: ignore[return-value]


def filled(path: Template, args: Mapping[str, Any]) -> set[tuple[str, ...]]:
    """The paths ``path`` reads with ``args``, each argument segment read and converted to a
    key as evaluation does (``1`` names ``"1"``); up to the first segment whose key is
    unknown (an object, a missing argument, an empty or overlong array), where it reads the
    whole object."""
    done: set[tuple[str, ...]] = {()}
    for part in path:
        keys = (part,) if isinstance(part, str) else _argument_keys(args, part)
        if keys is None or len(done) * len(keys) > MAX_FILLED:
            break
        done = {(*prefix, key) for prefix in done for key in keys}
    return done


def _argument_keys(args: Mapping[str, Any], part: ArgumentSegment) -> tuple[str, ...] | None:
    """The keys an argument segment names; ``None`` where it names no member for sure, or
    where reading the argument throws, so that the member is never read."""
    try:
        value = _read(dict(args), part.path, "args")
        if part.each is None:
            values = [value]
        elif type(value) is list and value:
            values = [_read(element, part.each, "element") for element in value]
        else:
            return None  # a callback on anything else throws; an empty array reads nothing
    except ExpressionError:
        return None
    keys = [member_key(item) for item in values]
    if any(key is None for key in keys):
        return None
    return tuple(dict.fromkeys(keys))  # type: ignore[arg-type]


def _read(value: Any, names: tuple[str, ...], root: str) -> Any:
    texts = tuple(format_path((root, *names[:depth])) for depth in range(len(names)))
    return get_path(value, names, texts)


def _templated_path(node: Node, scope: Scope) -> Template | None:
    """The constant path ``node`` reads, a computed member keyed by an argument included."""
    if isinstance(node, Identifier):
        return None if node.name in scope else (node.name,)
    if isinstance(node, Chain):
        return _templated_path(node.expression, scope)
    if isinstance(node, Member):
        prop = node.prop if isinstance(node.prop, str) else _key(node.prop, scope)
        if prop is not None:
            base = _templated_path(node.obj, scope)
            return None if base is None else (*base, prop)
    return None


def _key(node: Node, scope: Scope) -> Segment | None:
    """The member a computed key names: a literal's, converted as evaluation converts it
    (``orders[1]`` reads ``orders.1``), or an argument's; ``None`` for any other key."""
    if isinstance(node, Literal):
        return member_key(node.value)
    return _argument(node, scope)


def _argument(node: Node, scope: Scope) -> ArgumentSegment | None:
    """The argument ``node`` reads by constant keys: a path under ``args`` (not a callback's
    parameter of that name), or under the element a callback's parameter stands for."""
    names: list[str] = []
    while isinstance(node, Member | Chain):
        if isinstance(node, Chain):
            node = node.expression
            continue
        prop = node.prop
        key = prop if isinstance(prop, str) else member_key(getattr(prop, "value", None))
        if not isinstance(prop, str | Literal) or key is None:
            return None
        names.append(key)
        node = node.obj
    if not isinstance(node, Identifier):
        return None
    names.reverse()
    if node.name in scope:
        array = scope[node.name]
        return None if array is None else ArgumentSegment(array, tuple(names))
    return ArgumentSegment(tuple(names)) if node.name == "args" and names else None


def _is_global_callee(node: Node, scope: Scope) -> bool:
    if isinstance(node, Identifier):
        return node.name in GLOBAL_FUNCTIONS and node.name not in scope
    return (
        isinstance(node, Member)
        and isinstance(node.obj, Identifier)
        and node.obj.name in GLOBAL_NAMESPACES
        and node.obj.name not in scope
    )
