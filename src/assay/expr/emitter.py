"""The statement emitter the code generator builds on.

Each node compiles to statements (appended to the current block) plus a small,
side-effect-free result expression: ``Value``. Temporaries are fresh names, so a value can
be named once and read many times.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from assay.errors import ExpressionSyntaxError
from assay.expr import pyast as py
from assay.expr.limits import ExpressionLimits
from assay.expr.syntax import Node


@dataclass(frozen=True, slots=True)
class Value:
    """A compiled sub-expression: a side-effect-free Python expression and its static kind."""

    expr: ast.expr
    kind: str = "any"  # "bool", "number", "string" or "any"


class Emitter:
    """The mechanics of A-normal-form generation: blocks, fresh names, budgets, scopes."""

    def __init__(self, source: str, limits: ExpressionLimits, *, metered: bool = False) -> None:
        self.source = source
        self.limits = limits
        # Whether this is the metered code: its meter (``_m``) holds the step budget. The
        # code that runs first counts steps in ``_steps`` and passes the meter that meters
        # nothing (``_M0``).
        self.metered = metered
        self.uses_meter = False
        self.counter = 0
        self.block: list[ast.stmt] = []
        self.scopes: list[dict[str, str]] = []
        self.callback_depth = 0
        self.uses_steps = False

    def fresh(self, prefix: str = "_v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, statement: ast.stmt) -> None:
        self.block.append(statement)

    @contextmanager
    def into(self, block: list[ast.stmt]) -> Iterator[None]:
        saved = self.block
        self.block = block
        try:
            yield
        finally:
            self.block = saved

    def text(self, node: Node) -> str:
        return self.source[node.start : node.end]

    def error(self, reason: str, node: Node) -> ExpressionSyntaxError:
        return ExpressionSyntaxError(reason, self.source, node.start)

    def atom(self, value: Value) -> Value:
        """The same value as a name or a constant, so it can be used more than once."""
        if isinstance(value.expr, ast.Name | ast.Constant):
            return value
        target = self.fresh()
        self.emit(ast.Assign([py.store(target)], value.expr))
        return Value(py.name(target), value.kind)

    def named(self, value: Value) -> Value:
        """The same value as a name; ``is`` tests on a constant would be compiler warnings."""
        if isinstance(value.expr, ast.Name):
            return value
        target = self.fresh()
        self.emit(ast.Assign([py.store(target)], value.expr))
        return Value(py.name(target), value.kind)

    def assign(self, target: str, value: ast.expr) -> None:
        self.emit(ast.Assign([py.store(target)], value))

    def truthy(self, value: Value) -> ast.expr:
        if value.kind == "bool":
            return value.expr
        if isinstance(value.expr, ast.Name):
            # Booleans are the common case; skip the call for them.
            return py.or_(
                py.is_(value.expr, ast.Constant(True)),
                py.and_(
                    py.is_(value.expr, ast.Constant(False), negate=True),
                    py.call("_truthy", value.expr),
                ),
            )
        return py.call("_truthy", value.expr)

    def charge(self, amount: ast.expr) -> None:
        """Subtract ``amount`` from the step budget and stop when it runs out."""
        self.uses_steps = True
        steps: ast.expr = py.name("_steps")
        target: ast.Name | ast.Attribute = py.store("_steps")
        if self.metered:
            steps = ast.Attribute(py.name("_m"), "steps", ast.Load())
            target = ast.Attribute(py.name("_m"), "steps", ast.Store())
        self.emit(ast.AugAssign(target, ast.Sub(), amount))
        self.emit(
            ast.If(
                py.compare(steps, ast.Lt(), ast.Constant(0)),
                [ast.Expr(py.call("_exceeded"))],
                [],
            )
        )

    @property
    def meter(self) -> ast.Name:
        """The last argument of the helpers that may convert arrays (the first of globals).

        It bounds the strings they produce and is charged the work of converting arrays: in
        the code that runs first, the shared meter that meters nothing (``_M0``), so that a
        conversion stops that code; in the code that runs then, the evaluation's meter.
        """
        self.uses_meter = True
        return py.name("_m" if self.metered else "_M0")

    def charge_elements(self, value: ast.expr, weight: int) -> None:
        """Inside callbacks, charge ``weight`` steps per element of an array built in Python."""
        if self.callback_depth > 0:
            length = py.call("len", value)
            self.charge(
                length if weight == 1 else ast.BinOp(length, ast.Mult(), ast.Constant(weight))
            )

    def charge_cost(self, *values: ast.expr) -> None:
        if self.callback_depth == 0:
            return
        total: ast.expr = py.call("_cost", values[0])
        for value in values[1:]:
            total = ast.BinOp(total, ast.Add(), py.call("_cost", value))
        self.charge(total)

    def lookup_param(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def value(self, node: Node) -> Value:
        """Compile ``node``: statements go to the current block, the result is returned."""
        raise NotImplementedError
