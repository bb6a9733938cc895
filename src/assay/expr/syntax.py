"""The syntax tree of an expression. Every node records its span in the source text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Node:
    """A node spanning ``source[start:end]``; ``parenthesized`` if written inside ``( )``."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Literal(Node):
    """A number, string, ``true``, ``false``, ``null`` or ``undefined``."""

    value: Any


@dataclass(frozen=True, slots=True)
class ArrayLiteral(Node):
    elements: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Identifier(Node):
    name: str


@dataclass(frozen=True, slots=True)
class Member(Node):
    """``obj.name`` (``prop`` is a str) or ``obj[expr]`` (``prop`` is a Node)."""

    obj: Node
    prop: str | Node
    optional: bool


@dataclass(frozen=True, slots=True)
class Call(Node):
    """``callee(args)``; the parser admits only allowed methods and globals as callees."""

    callee: Node
    args: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Chain(Node):
    """The end of an optional chain: a ``?.`` inside short-circuits up to here."""

    expression: Node


@dataclass(frozen=True, slots=True)
class Unary(Node):
    op: str
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary(Node):
    """Arithmetic, comparison, equality and ``in``."""

    op: str
    left: Node
    right: Node


@dataclass(frozen=True, slots=True)
class Logical(Node):
    """``&&``, ``||`` and ``??``; ``parenthesized`` enforces JavaScript's mixing rule."""

    op: str
    left: Node
    right: Node
    parenthesized: bool = False


@dataclass(frozen=True, slots=True)
class Conditional(Node):
    test: Node
    consequent: Node
    alternate: Node


@dataclass(frozen=True, slots=True)
class Arrow(Node):
    """``(params) => body``, allowed only as the callback of an array method."""

    params: tuple[str, ...]
    body: Node


def children(node: Node) -> tuple[Node, ...]:
    """The direct sub-nodes of ``node``, in source order."""
    if isinstance(node, ArrayLiteral):
        return node.elements
    if isinstance(node, Member):
        return (node.obj, node.prop) if isinstance(node.prop, Node) else (node.obj,)
    if isinstance(node, Call):
        return (node.callee, *node.args)
    if isinstance(node, Chain):
        return (node.expression,)
    if isinstance(node, Unary):
        return (node.operand,)
    if isinstance(node, Binary | Logical):
        return (node.left, node.right)
    if isinstance(node, Conditional):
        return (node.test, node.consequent, node.alternate)
    if isinstance(node, Arrow):
        return (node.body,)
    return ()
