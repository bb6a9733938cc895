"""Compile a syntax tree to a Python code object with JavaScript's semantics.

The code is built as a Python ``ast``, never as text: the expression's strings and property
names enter it only as ``ast.Constant`` values, and every name in it is one the compiler made,
so no identifier of the source reaches the code. Each node compiles to statements plus a small
result expression (A-normal form). Work inside array callbacks, and every conversion of an
array to a string, is charged to a step budget (see ``CodeGenerator.compile``).
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable
from typing import Any

from assay.expr import pyast as py
from assay.expr.chains import ChainCompiler
from assay.expr.emitter import Value
from assay.expr.limits import ExpressionLimits
from assay.expr.runtime import namespace
from assay.expr.syntax import (
    ArrayLiteral,
    Arrow,
    Binary,
    Call,
    Chain,
    Conditional,
    Identifier,
    Literal,
    Logical,
    Member,
    Node,
    Unary,
)


class CodeGenerator(ChainCompiler):
    """Generates the two functions of an expression: ``evaluate(state)`` and ``test(state)``."""

    def compile(self, root: Node) -> tuple[Callable[[Any], Any], Callable[[Any], bool]]:
        """The compiled ``evaluate`` and ``test`` functions for ``root``.

        Most evaluations convert no array to a string, and they run code whose helpers get the
        meter that meters nothing. The first conversion stops that code (``MeterNeededError``)
        and the evaluation starts again in metered code, compiled when first needed, whose
        helpers and callbacks all spend one meter's steps. Evaluation has no side effects, so
        starting again is safe; the work done twice is at most the step budget.
        """
        evaluate, test = self.bodies(root)
        if self.uses_meter and not self.metered:
            evaluate = self.fall_back(evaluate, "_metered_evaluate")
            test = self.fall_back(test, "_metered_test")
        functions: list[ast.stmt] = [
            self.function("evaluate", evaluate),
            self.function("test", test),
        ]
        module = ast.fix_missing_locations(ast.Module(functions, type_ignores=[]))
        with warnings.catch_warnings():
            # Constant operands (`"abc".length`) are fine here; never let them warn a caller.
            warnings.simplefilter("ignore", SyntaxWarning)
            code = compile(module, "<assay expression>", "exec")
        scope = namespace(self.limits)
        if self.uses_meter and not self.metered:
            metered = _MeteredCode(self.source, self.limits, root)
            scope["_metered_evaluate"] = metered.evaluate
            scope["_metered_test"] = metered.test
        exec(code, scope)
        return scope["evaluate"], scope["test"]

    def bodies(self, root: Node) -> tuple[list[ast.stmt], list[ast.stmt]]:
        """The statements of ``evaluate`` and of ``test``."""
        result = self.value(root)
        prologue: list[ast.stmt] = []
        if self.metered:
            limits = self.limits
            meter = py.call(
                "_Meter",
                ast.Constant(limits.max_string_length),
                ast.Constant(limits.max_steps),
                ast.Constant(limits.max_steps),
            )
            prologue.append(ast.Assign([py.store("_m")], meter))
        elif self.uses_steps:
            prologue.append(ast.Assign([py.store("_steps")], ast.Constant(self.limits.max_steps)))
        verdict = result.expr if result.kind == "bool" else self.truthy(result)
        return (
            [*prologue, *self.block, ast.Return(result.expr)],
            [*prologue, *self.block, ast.Return(verdict)],
        )

    @staticmethod
    def fall_back(body: list[ast.stmt], metered: str) -> list[ast.stmt]:
        """``body``, unless it converts an array: then the ``metered`` function instead."""
        return [
            ast.Try(
                body=body,
                handlers=[ast.ExceptHandler(py.name("_MeterNeeded"), None, [ast.Pass()])],
                orelse=[],
                finalbody=[],
            ),
            ast.Return(py.call(metered, py.name("state"))),
        ]

    @staticmethod
    def function(name: str, body: list[ast.stmt]) -> ast.FunctionDef:
        arguments = ast.arguments(
            posonlyargs=[],
            args=[ast.arg("state")],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        )
        return ast.FunctionDef(name, arguments, body, decorator_list=[], returns=None)

    def value(self, node: Node) -> Value:
        if isinstance(node, Literal):
            return self.literal(node)
        if isinstance(node, Identifier | Member | Chain) or (
            isinstance(node, Call) and not self.is_global_call(node)
        ):
            return self.chain(node)
        if isinstance(node, Call):
            return self.global_call(node)
        if isinstance(node, ArrayLiteral):
            elements = [self.atom(self.value(element)).expr for element in node.elements]
            return Value(ast.List(elements, ast.Load()))
        if isinstance(node, Unary):
            return self.unary(node)
        if isinstance(node, Binary):
            return self.binary(node)
        if isinstance(node, Logical):
            return self.logical(node)
        if isinstance(node, Conditional):
            return self.conditional(node)
        if isinstance(node, Arrow):  # pragma: no cover - the parser places arrows
            raise self.error("an arrow function cannot stand here", node)
        raise AssertionError(f"unknown node {node!r}")  # pragma: no cover

    def literal(self, node: Literal) -> Value:
        value = node.value
        if type(value) is bool:
            return Value(ast.Constant(value), "bool")
        if type(value) in (int, float):
            return Value(ast.Constant(value), "number")
        if type(value) is str:
            return Value(ast.Constant(value), "string")
        return Value(py.constant(value))

    def global_call(self, node: Call) -> Value:
        callee = node.callee
        if isinstance(callee, Identifier):
            root, qualified = callee.name, callee.name
        else:
            assert isinstance(callee, Member) and isinstance(callee.obj, Identifier)
            root, qualified = callee.obj.name, f"{callee.obj.name}.{callee.prop}"
        self.emit(
            ast.If(
                py.compare(ast.Constant(root), ast.In(), py.name("state")),
                [
                    ast.Raise(
                        py.call("_shadowed_global", ast.Constant(root), ast.Constant(qualified))
                    )
                ],
                [],
            )
        )
        args = [self.atom(self.value(arg)).expr for arg in node.args]
        function = f"_g_{qualified.replace('.', '_')}"
        result = self.atom(Value(py.call(function, self.meter, *args)))
        if qualified in _PRODUCERS:
            # Their arrays are built in Python, element by element: an entry is three values.
            self.charge_elements(result.expr, _PRODUCERS[qualified])
        elif args:
            self.charge_cost(args[0], result.expr)
        kind = {
            "Array.isArray": "bool",
            "Number.isInteger": "bool",
            "Boolean": "bool",
            "isNaN": "bool",
            "String": "string",
        }.get(qualified, "any")
        return Value(result.expr, kind)

    def unary(self, node: Unary) -> Value:
        operand = self.value(node.operand)
        if node.op == "!":
            return Value(py.not_(self.truthy(operand)), "bool")
        if node.op == "typeof":
            return Value(py.call("_typeof", operand.expr), "string")
        function = "_neg" if node.op == "-" else "_pos"
        return Value(py.call(function, operand.expr, self.meter), "number")

    def binary(self, node: Binary) -> Value:
        left = self.atom(self.value(node.left))
        right = self.atom(self.value(node.right))
        op = node.op
        if op in ("===", "!=="):
            return self.negated(self.strict_equality(left, right), op == "!==")
        if op in ("==", "!="):
            return self.negated(self.loose_equality(left, right), op == "!=")
        if op in ("<", ">", "<=", ">="):
            return self.relational(op, left, right)
        if op == "in":
            text = ast.Constant(self.text(node.right))
            return Value(py.call("_has_property", left.expr, right.expr, text, self.meter), "bool")
        if op == "+":
            result = self.atom(Value(py.call("_add", left.expr, right.expr, self.meter)))
            self.charge_cost(result.expr)
            return result
        function = {"-": "_sub", "*": "_mul", "/": "_div", "%": "_mod"}[op]
        return Value(py.call(function, left.expr, right.expr, self.meter), "number")

    @staticmethod
    def negated(value: Value, negate: bool) -> Value:
        return Value(py.not_(value.expr), "bool") if negate else value

    def strict_equality(self, left: Value, right: Value) -> Value:
        for subject, other in ((left, right), (right, left)):
            if not isinstance(other.expr, ast.Constant) or isinstance(subject.expr, ast.Constant):
                continue
            constant = other.expr.value
            if type(constant) is str:
                return Value(py.compare(subject.expr, ast.Eq(), other.expr), "bool")
            if type(constant) is bool or constant is None:
                return Value(py.is_(subject.expr, other.expr), "bool")
            if _is_number_constant(constant):
                return Value(
                    py.and_(
                        py.compare(subject.expr, ast.Eq(), other.expr),
                        py.type_is(subject.expr, "_bool", negate=True),
                    ),
                    "bool",
                )
        return Value(py.call("_strict_eq", left.expr, right.expr), "bool")

    def loose_equality(self, left: Value, right: Value) -> Value:
        for subject, other in ((left, right), (right, left)):
            if isinstance(subject.expr, ast.Constant):
                continue
            if (isinstance(other.expr, ast.Name) and other.expr.id == "_U") or (
                isinstance(other.expr, ast.Constant) and other.expr.value is None
            ):
                return Value(
                    py.or_(
                        py.is_(subject.expr, ast.Constant(None)),
                        py.is_(subject.expr, py.name("_U")),
                    ),
                    "bool",
                )
            if not isinstance(other.expr, ast.Constant):
                continue
            constant = other.expr.value
            generic = py.call("_loose_eq", subject.expr, other.expr, self.meter)
            if type(constant) is str:
                return Value(
                    ast.IfExp(
                        py.type_is(subject.expr, "_str"),
                        py.compare(subject.expr, ast.Eq(), other.expr),
                        generic,
                    ),
                    "bool",
                )
            if _is_number_constant(constant):
                plain = py.and_(
                    py.type_is(subject.expr, "_str", negate=True),
                    py.type_is(subject.expr, "_list", negate=True),
                )
                return Value(
                    ast.IfExp(plain, py.compare(subject.expr, ast.Eq(), other.expr), generic),
                    "bool",
                )
        return Value(py.call("_loose_eq", left.expr, right.expr, self.meter), "bool")

    def relational(self, op: str, left: Value, right: Value) -> Value:
        function = {"<": "_lt", ">": "_gt", "<=": "_le", ">=": "_ge"}[op]
        python_op: ast.cmpop = {"<": ast.Lt(), ">": ast.Gt(), "<=": ast.LtE(), ">=": ast.GtE()}[op]
        generic = py.call(function, left.expr, right.expr, self.meter)
        for subject, other in ((left, right), (right, left)):
            if (
                isinstance(other.expr, ast.Constant)
                and _is_number_constant(other.expr.value)
                and not isinstance(subject.expr, ast.Constant)
            ):
                numeric = py.or_(
                    py.type_is(subject.expr, "_int"), py.type_is(subject.expr, "_float")
                )
                fast = py.compare(left.expr, python_op, right.expr)
                return Value(ast.IfExp(numeric, fast, generic), "bool")
        return Value(generic, "bool")

    def logical(self, node: Logical) -> Value:
        left = self.named(self.value(node.left))
        if node.op == "??":
            condition: ast.expr = py.or_(
                py.is_(left.expr, ast.Constant(None)), py.is_(left.expr, py.name("_U"))
            )
        elif node.op == "&&":
            condition = self.truthy(left)
        else:
            condition = py.not_(self.truthy(left))
        right_block: list[ast.stmt] = []
        with self.into(right_block):
            right = self.value(node.right)
        kind = left.kind if left.kind == right.kind and node.op != "??" else "any"
        if not right_block:
            return Value(ast.IfExp(condition, right.expr, left.expr), kind)
        result = self.fresh()
        right_block.append(ast.Assign([py.store(result)], right.expr))
        self.emit(ast.If(condition, right_block, [ast.Assign([py.store(result)], left.expr)]))
        return Value(py.name(result), kind)

    def conditional(self, node: Conditional) -> Value:
        test = self.value(node.test)
        result = self.fresh()
        branches: list[tuple[list[ast.stmt], Value]] = []
        for branch in (node.consequent, node.alternate):
            block: list[ast.stmt] = []
            with self.into(block):
                value = self.value(branch)
            block.append(ast.Assign([py.store(result)], value.expr))
            branches.append((block, value))
        self.emit(ast.If(self.truthy(test), branches[0][0], branches[1][0]))
        kinds = {value.kind for _, value in branches}
        return Value(py.name(result), kinds.pop() if len(kinds) == 1 else "any")


_PRODUCERS = {"Object.keys": 1, "Object.values": 1, "Object.entries": 3}


class _MeteredCode:
    """An expression's metered ``evaluate`` and ``test``, compiled when first called."""

    __slots__ = ("functions", "limits", "root", "source")

    def __init__(self, source: str, limits: ExpressionLimits, root: Node) -> None:
        self.source = source
        self.limits = limits
        self.root = root
        self.functions: tuple[Callable[[Any], Any], Callable[[Any], bool]] | None = None

    def compiled(self) -> tuple[Callable[[Any], Any], Callable[[Any], bool]]:
        # Two threads may both compile at first; either result serves.
        if self.functions is None:
            generator = CodeGenerator(self.source, self.limits, metered=True)
            self.functions = generator.compile(self.root)
        return self.functions

    def evaluate(self, state: Any) -> Any:
        return self.compiled()[0](state)

    def test(self, state: Any) -> bool:
        return self.compiled()[1](state)


def _is_number_constant(value: Any) -> bool:
    return type(value) in (int, float) and value == value
