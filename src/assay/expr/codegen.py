"""Compile a syntax tree to a Python code object with JavaScript's semantics.

The generated code is built as a Python ``ast`` directly, never as text: the expression's
strings and property names enter it only as ``ast.Constant`` values, and every name in it is
one this module made (``state``, ``_v3``, ``_p1``, the helpers below, four builtins). Arrow
parameters are renamed, so no identifier of the source reaches the code either.

Each node compiles to statements plus a small result expression (A-normal form): property
chains become one ``try`` block of plain subscripts with a JavaScript-exact fallback, ``&&``
and ``?:`` become ``if`` statements, and array callbacks become inline ``for`` loops, so the
common paths run at close to hand-written speed. Work inside callbacks is charged to a step
budget, which bounds the only multiplicative cost the language has.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from assay.errors import ExpressionEvaluationError, ExpressionLimitError, ExpressionSyntaxError
from assay.expr import builtins as bi
from assay.expr.builtins import CALLBACK_METHODS, GLOBAL_FUNCTIONS, GLOBAL_NAMESPACES
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
    children,
)
from assay.expr.values import (
    UNDEFINED,
    loose_equal,
    strict_equal,
    to_boolean,
    type_of,
)

_BOOLEAN_METHODS: Final = frozenset({"includes", "startsWith", "endsWith", "some", "every"})
_SAFE_BUILTINS: Final = {"type": type, "len": len, "enumerate": enumerate}


def _cost(value: Any) -> int:
    """Steps charged inside callbacks for a string or array that was scanned or produced."""
    t = type(value)
    if t is str or t is list:
        return len(value) >> 4
    return 0


def _shadowed_global(name: str, path: str) -> Exception:
    return ExpressionEvaluationError(
        f"{path} is not a function: {name} is a key of the state, which shadows the global",
        path=path,
    )


_HELPERS: Final[dict[str, Any]] = {
    "_U": UNDEFINED,
    "_get_path": bi.get_path,
    "_get_member": bi.get_member,
    "_length_of": bi.length_of,
    "_call_method": bi.call_method,
    "_not_a_function": bi.not_a_function,
    "_has_property": bi.has_property,
    "_add": bi.add,
    "_sub": bi.subtract,
    "_mul": bi.multiply,
    "_div": bi.divide,
    "_mod": bi.remainder,
    "_neg": bi.negate,
    "_pos": bi.plus,
    "_lt": bi.less,
    "_gt": bi.greater,
    "_le": bi.less_equal,
    "_ge": bi.greater_equal,
    "_loose_eq": loose_equal,
    "_strict_eq": strict_equal,
    "_truthy": to_boolean,
    "_typeof": type_of,
    "_cost": _cost,
    "_shadowed_global": _shadowed_global,
    "_list": list,
    "_str": str,
    "_int": int,
    "_float": float,
    "_bool": bool,
    "_dict": dict,
    "_KeyError": KeyError,
    "_TypeError": TypeError,
    **{f"_g_{name.replace('.', '_')}": function for name, function in GLOBAL_FUNCTIONS.items()},
}
_GLOBAL_VALUES: Final = bi.GLOBAL_VALUES


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on an expression; every one has a clear error naming it when exceeded."""

    max_source_length: int = 10_000
    max_depth: int = 64
    max_callback_depth: int = 8
    max_steps: int = 500_000
    max_string_length: int = 1_000_000


@dataclass(frozen=True, slots=True)
class Value:
    """A compiled sub-expression: a side-effect-free Python expression and its static kind."""

    expr: ast.expr
    kind: str = "any"  # "bool", "number", "string" or "any"


def _name(identifier: str) -> ast.Name:
    return ast.Name(identifier, ast.Load())


def _store(identifier: str) -> ast.Name:
    return ast.Name(identifier, ast.Store())


def _const(value: Any) -> ast.expr:
    if value is UNDEFINED:
        return _name("_U")
    return ast.Constant(value)


def _call(function: str, *args: ast.expr) -> ast.Call:
    return ast.Call(_name(function), list(args), [])


def _is(left: ast.expr, right: ast.expr, negate: bool = False) -> ast.Compare:
    return ast.Compare(left, [ast.IsNot() if negate else ast.Is()], [right])


def _type_is(value: ast.expr, type_name: str, negate: bool = False) -> ast.Compare:
    return _is(_call("type", value), _name(type_name), negate)


def _compare(left: ast.expr, op: ast.cmpop, right: ast.expr) -> ast.Compare:
    return ast.Compare(left, [op], [right])


def _and(*values: ast.expr) -> ast.BoolOp:
    return ast.BoolOp(ast.And(), list(values))


def _or(*values: ast.expr) -> ast.BoolOp:
    return ast.BoolOp(ast.Or(), list(values))


def _not(value: ast.expr) -> ast.UnaryOp:
    return ast.UnaryOp(ast.Not(), value)


def _is_number_constant(value: Any) -> bool:
    return type(value) in (int, float) and value == value


@dataclass(frozen=True, slots=True)
class _Link:
    """One step of a property chain: ``kind`` is key, length, index or method."""

    kind: str
    optional: bool
    end: int
    key: str = ""
    index: Node | None = None
    args: tuple[Node, ...] = ()


class CodeGenerator:
    """Generates the two functions of an expression: ``evaluate(state)`` and ``test(state)``."""

    def __init__(self, source: str, limits: Limits) -> None:
        self.source = source
        self.limits = limits
        self.counter = 0
        self.block: list[ast.stmt] = []
        self.scopes: list[dict[str, str]] = []
        self.callback_depth = 0
        self.uses_steps = False

    def compile(self, root: Node) -> tuple[Callable[[Any], Any], Callable[[Any], bool]]:
        """The compiled ``evaluate`` and ``test`` functions for ``root``."""
        result = self.value(root)
        body = self.block
        prologue: list[ast.stmt] = []
        if self.uses_steps:
            prologue.append(ast.Assign([_store("_steps")], ast.Constant(self.limits.max_steps)))
        verdict = result.expr if result.kind == "bool" else self.truthy(result)
        functions: list[ast.stmt] = [
            self.function("evaluate", [*prologue, *body, ast.Return(result.expr)]),
            self.function("test", [*prologue, *body, ast.Return(verdict)]),
        ]
        module = ast.fix_missing_locations(ast.Module(functions, type_ignores=[]))
        with warnings.catch_warnings():
            # Constant operands (`"abc".length`) are fine here; never let them warn a caller.
            warnings.simplefilter("ignore", SyntaxWarning)
            code = compile(module, "<assay expression>", "exec")
        namespace: dict[str, Any] = dict(_HELPERS)
        namespace["__builtins__"] = _SAFE_BUILTINS
        namespace["_exceeded"] = self.exceeded_function()
        exec(code, namespace)
        return namespace["evaluate"], namespace["test"]

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

    def exceeded_function(self) -> Callable[[], None]:
        bound = self.limits.max_steps

        def exceeded() -> None:
            raise ExpressionLimitError(
                f"evaluation exceeded {bound} steps (max_steps); array callbacks and the "
                "strings and arrays they scan count toward it",
                limit="max_steps",
                bound=bound,
            )

        return exceeded

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
        self.emit(ast.Assign([_store(target)], value.expr))
        return Value(_name(target), value.kind)

    def named(self, value: Value) -> Value:
        """The same value as a name; ``is`` tests on a constant would be compiler warnings."""
        if isinstance(value.expr, ast.Name):
            return value
        target = self.fresh()
        self.emit(ast.Assign([_store(target)], value.expr))
        return Value(_name(target), value.kind)

    def assign(self, target: str, value: ast.expr) -> None:
        self.emit(ast.Assign([_store(target)], value))

    def truthy(self, value: Value) -> ast.expr:
        if value.kind == "bool":
            return value.expr
        if isinstance(value.expr, ast.Name):
            # Booleans are the common case; skip the call for them.
            return _or(
                _is(value.expr, ast.Constant(True)),
                _and(
                    _is(value.expr, ast.Constant(False), negate=True), _call("_truthy", value.expr)
                ),
            )
        return _call("_truthy", value.expr)

    def charge(self, amount: ast.expr) -> None:
        """Subtract ``amount`` from the step budget and stop when it runs out."""
        self.uses_steps = True
        self.emit(ast.AugAssign(_store("_steps"), ast.Sub(), amount))
        self.emit(
            ast.If(
                _compare(_name("_steps"), ast.Lt(), ast.Constant(0)),
                [ast.Expr(_call("_exceeded"))],
                [],
            )
        )

    def charge_cost(self, *values: ast.expr) -> None:
        if self.callback_depth == 0:
            return
        total: ast.expr = _call("_cost", values[0])
        for value in values[1:]:
            total = ast.BinOp(total, ast.Add(), _call("_cost", value))
        self.charge(total)

    def lookup_param(self, name: str) -> str | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

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
        return Value(_const(value))

    def is_global_call(self, node: Call) -> bool:
        callee = node.callee
        if isinstance(callee, Identifier):
            return callee.name in GLOBAL_FUNCTIONS and self.lookup_param(callee.name) is None
        return (
            isinstance(callee, Member)
            and isinstance(callee.obj, Identifier)
            and isinstance(callee.prop, str)
            and callee.obj.name in GLOBAL_NAMESPACES
            and self.lookup_param(callee.obj.name) is None
            and f"{callee.obj.name}.{callee.prop}" in GLOBAL_FUNCTIONS
        )

    def global_call(self, node: Call) -> Value:
        callee = node.callee
        if isinstance(callee, Identifier):
            root, qualified = callee.name, callee.name
        else:
            assert isinstance(callee, Member) and isinstance(callee.obj, Identifier)
            root, qualified = callee.obj.name, f"{callee.obj.name}.{callee.prop}"
        self.emit(
            ast.If(
                _compare(ast.Constant(root), ast.In(), _name("state")),
                [ast.Raise(_call("_shadowed_global", ast.Constant(root), ast.Constant(qualified)))],
                [],
            )
        )
        args = [self.atom(self.value(arg)).expr for arg in node.args]
        result = self.atom(Value(_call(f"_g_{qualified.replace('.', '_')}", *args)))
        if args:
            self.charge_cost(args[0], result.expr)
        kind = {
            "Array.isArray": "bool",
            "Number.isInteger": "bool",
            "Boolean": "bool",
            "isNaN": "bool",
            "String": "string",
        }.get(qualified, "any")
        return Value(result.expr, kind)

    def flatten(self, node: Node) -> tuple[Node, list[_Link]]:
        """Split a property chain into its base and its links, innermost first."""
        links: list[_Link] = []
        current = node
        while True:
            if isinstance(current, Call) and not self.is_global_call(current):
                callee = current.callee
                assert isinstance(callee, Member) and isinstance(callee.prop, str)
                links.append(
                    _Link(
                        "method", callee.optional, current.end, key=callee.prop, args=current.args
                    )
                )
                current = callee.obj
            elif isinstance(current, Member):
                prop = current.prop
                if isinstance(prop, Literal) and type(prop.value) is str:
                    prop = prop.value
                if isinstance(prop, str):
                    kind = "length" if prop == "length" else "key"
                    links.append(_Link(kind, current.optional, current.end, key=prop))
                else:
                    links.append(_Link("index", current.optional, current.end, index=prop))
                current = current.obj
            elif isinstance(current, Chain) and current is node:
                current = current.expression
            else:
                break
        links.reverse()
        return current, links

    def chain(self, node: Node) -> Value:
        base, links = self.flatten(node)
        start = base.start
        texts = [self.source[start : base.end]] + [self.source[start : link.end] for link in links]
        if isinstance(base, Identifier) and self.lookup_param(base.name) is None:
            if base.name in _GLOBAL_VALUES:
                current = self.atom(
                    Value(
                        ast.Call(
                            ast.Attribute(_name("state"), "get", ast.Load()),
                            [ast.Constant(base.name), ast.Constant(_GLOBAL_VALUES[base.name])],
                            [],
                        )
                    )
                )
            else:
                links.insert(0, _Link("key", False, base.end, key=base.name))
                texts.insert(0, "")
                current = Value(_name("state"))
        elif isinstance(base, Identifier):
            current = Value(_name(self.lookup_param(base.name) or ""))
        else:
            current = self.named(self.value(base))
        if not any(link.optional for link in links):
            return self.links(current, links, texts)
        current = self.named(current)
        result = self.fresh()
        outer = self.block
        position = 0
        while position < len(links):
            link = links[position]
            if link.optional:
                skip: list[ast.stmt] = [ast.Assign([_store(result)], _name("_U"))]
                go_on: list[ast.stmt] = []
                self.emit(
                    ast.If(
                        _or(_is(current.expr, ast.Constant(None)), _is(current.expr, _name("_U"))),
                        skip,
                        go_on,
                    )
                )
                self.block = go_on
            end = position + 1
            while end < len(links) and not links[end].optional:
                end += 1
            current = self.named(self.links(current, links[position:end], texts[position:end]))
            position = end
        self.assign(result, current.expr)
        self.block = outer
        return Value(_name(result), current.kind)

    def links(self, current: Value, links: list[_Link], texts: list[str]) -> Value:
        """Apply non-optional links to ``current``; ``texts[i]`` is the text links[i] reads."""
        position = 0
        while position < len(links):
            link = links[position]
            if link.kind == "key":
                end = position
                while end < len(links) and links[end].kind == "key":
                    end += 1
                current = self.path_read(
                    current, [each.key for each in links[position:end]], texts[position:end]
                )
                position = end
                continue
            obj = self.atom(current)
            text = texts[position]
            if link.kind == "length":
                current = Value(
                    ast.IfExp(
                        _type_is(obj.expr, "_list"),
                        _call("len", obj.expr),
                        _call("_length_of", obj.expr, ast.Constant(text)),
                    )
                )
            elif link.kind == "index":
                assert link.index is not None
                key = self.atom(self.value(link.index))
                current = Value(_call("_get_member", obj.expr, key.expr, ast.Constant(text)))
            else:
                current = self.method(obj, link, text)
            position += 1
        return current

    def path_read(self, obj: Value, keys: list[str], texts: list[str]) -> Value:
        """``obj[k1][k2]...`` as plain subscripts, falling back to the exact reader."""
        target = self.fresh()
        subscript: ast.expr = obj.expr
        for key in keys:
            subscript = ast.Subscript(subscript, ast.Constant(key), ast.Load())
        fallback = _call(
            "_get_path",
            obj.expr,
            ast.Tuple([ast.Constant(key) for key in keys], ast.Load()),
            ast.Tuple([ast.Constant(text) for text in texts], ast.Load()),
        )
        self.emit(
            ast.Try(
                body=[ast.Assign([_store(target)], subscript)],
                handlers=[
                    ast.ExceptHandler(
                        ast.Tuple([_name("_KeyError"), _name("_TypeError")], ast.Load()),
                        None,
                        [ast.Assign([_store(target)], fallback)],
                    )
                ],
                orelse=[],
                finalbody=[],
            )
        )
        return Value(_name(target))

    def method(self, receiver: Value, link: _Link, text: str) -> Value:
        name = link.key
        if name in CALLBACK_METHODS:
            arrow = link.args[0]
            assert isinstance(arrow, Arrow)
            return self.callback(receiver, name, arrow, text)
        args = [self.atom(self.value(arg)) for arg in link.args]
        arg_tuple = ast.Tuple([arg.expr for arg in args], ast.Load())
        generic = _call(
            "_call_method",
            receiver.expr,
            ast.Constant(name),
            arg_tuple,
            ast.Constant(text),
            ast.Constant(self.limits.max_string_length),
        )
        kind = "bool" if name in _BOOLEAN_METHODS else "any"
        if (
            name == "includes"
            and len(args) == 1
            and isinstance(args[0].expr, ast.Constant)
            and type(args[0].expr.value) is str
            and self.callback_depth == 0
        ):
            # A string searched in a list: Python's `in` is exactly SameValueZero here.
            return Value(
                ast.IfExp(
                    _type_is(receiver.expr, "_list"),
                    _compare(args[0].expr, ast.In(), receiver.expr),
                    generic,
                ),
                kind,
            )
        result = self.atom(Value(generic, kind))
        self.charge_cost(receiver.expr, result.expr)
        return result

    def callback(self, receiver: Value, method: str, arrow: Arrow, text: str) -> Value:
        if self.callback_depth >= self.limits.max_callback_depth:
            raise self.error(
                f"array callbacks are nested deeper than {self.limits.max_callback_depth} "
                "levels (max_callback_depth)",
                arrow,
            )
        array = receiver.expr
        self.emit(
            ast.If(
                _type_is(array, "_list", negate=True),
                [
                    ast.Raise(
                        _call("_not_a_function", array, ast.Constant(method), ast.Constant(text))
                    )
                ],
                [],
            )
        )
        weight = _weight(arrow.body)
        result = self.fresh()
        element = self.fresh("_p")
        index = self.fresh("_i")
        initial: dict[str, ast.expr] = {
            "filter": ast.List([], ast.Load()),
            "map": ast.List([], ast.Load()),
            "some": ast.Constant(False),
            "every": ast.Constant(True),
            "find": _name("_U"),
            "findIndex": ast.Constant(-1),
        }
        if method in ("filter", "map"):
            self.charge(ast.BinOp(_call("len", array), ast.Mult(), ast.Constant(weight)))
        self.assign(result, initial[method])
        scope = {}
        names = (element, index, array.id if isinstance(array, ast.Name) else "")
        for param, py_name in zip(arrow.params, names, strict=False):
            scope[param] = py_name
        uses_index = len(arrow.params) >= 2 or method == "findIndex"
        loop_body: list[ast.stmt] = []
        self.callback_depth += 1
        self.scopes.append(scope)
        try:
            with self.into(loop_body):
                if method not in ("filter", "map"):
                    self.charge(ast.Constant(weight))
                value = self.value(arrow.body)
                self.finish_callback(method, value, result, element, index)
        finally:
            self.scopes.pop()
            self.callback_depth -= 1
        target: ast.expr = _store(element)
        iterable: ast.expr = array
        if uses_index:
            target = ast.Tuple([_store(index), _store(element)], ast.Store())
            iterable = _call("enumerate", array)
        self.emit(ast.For(target, iterable, loop_body, [], type_comment=None))
        kind = {"some": "bool", "every": "bool", "findIndex": "number"}.get(method, "any")
        return Value(_name(result), kind)

    def finish_callback(
        self, method: str, value: Value, result: str, element: str, index: str
    ) -> None:
        if method == "map":
            self.emit(ast.Expr(_call_attr(result, "append", value.expr)))
            return
        test = self.truthy(value)
        if method == "filter":
            self.emit(ast.If(test, [ast.Expr(_call_attr(result, "append", _name(element)))], []))
            return
        if method == "every":
            self.emit(
                ast.If(
                    _not(test), [ast.Assign([_store(result)], ast.Constant(False)), ast.Break()], []
                )
            )
            return
        found = {"some": ast.Constant(True), "find": _name(element), "findIndex": _name(index)}
        self.emit(ast.If(test, [ast.Assign([_store(result)], found[method]), ast.Break()], []))

    def unary(self, node: Unary) -> Value:
        operand = self.value(node.operand)
        if node.op == "!":
            return Value(_not(self.truthy(operand)), "bool")
        if node.op == "typeof":
            return Value(_call("_typeof", operand.expr), "string")
        function = "_neg" if node.op == "-" else "_pos"
        return Value(_call(function, operand.expr), "number")

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
            return Value(_call("_has_property", left.expr, right.expr, text), "bool")
        if op == "+":
            result = self.atom(
                Value(
                    _call(
                        "_add", left.expr, right.expr, ast.Constant(self.limits.max_string_length)
                    )
                )
            )
            self.charge_cost(result.expr)
            return result
        function = {"-": "_sub", "*": "_mul", "/": "_div", "%": "_mod"}[op]
        return Value(_call(function, left.expr, right.expr), "number")

    @staticmethod
    def negated(value: Value, negate: bool) -> Value:
        return Value(_not(value.expr), "bool") if negate else value

    def strict_equality(self, left: Value, right: Value) -> Value:
        for subject, other in ((left, right), (right, left)):
            if not isinstance(other.expr, ast.Constant) or isinstance(subject.expr, ast.Constant):
                continue
            constant = other.expr.value
            if type(constant) is str:
                return Value(_compare(subject.expr, ast.Eq(), other.expr), "bool")
            if type(constant) is bool or constant is None:
                return Value(_is(subject.expr, other.expr), "bool")
            if _is_number_constant(constant):
                return Value(
                    _and(
                        _compare(subject.expr, ast.Eq(), other.expr),
                        _type_is(subject.expr, "_bool", negate=True),
                    ),
                    "bool",
                )
        return Value(_call("_strict_eq", left.expr, right.expr), "bool")

    def loose_equality(self, left: Value, right: Value) -> Value:
        for subject, other in ((left, right), (right, left)):
            if isinstance(subject.expr, ast.Constant):
                continue
            if (isinstance(other.expr, ast.Name) and other.expr.id == "_U") or (
                isinstance(other.expr, ast.Constant) and other.expr.value is None
            ):
                return Value(
                    _or(_is(subject.expr, ast.Constant(None)), _is(subject.expr, _name("_U"))),
                    "bool",
                )
            if not isinstance(other.expr, ast.Constant):
                continue
            constant = other.expr.value
            generic = _call("_loose_eq", subject.expr, other.expr)
            if type(constant) is str:
                return Value(
                    ast.IfExp(
                        _type_is(subject.expr, "_str"),
                        _compare(subject.expr, ast.Eq(), other.expr),
                        generic,
                    ),
                    "bool",
                )
            if _is_number_constant(constant):
                plain = _and(
                    _type_is(subject.expr, "_str", negate=True),
                    _type_is(subject.expr, "_list", negate=True),
                )
                return Value(
                    ast.IfExp(plain, _compare(subject.expr, ast.Eq(), other.expr), generic),
                    "bool",
                )
        return Value(_call("_loose_eq", left.expr, right.expr), "bool")

    def relational(self, op: str, left: Value, right: Value) -> Value:
        function = {"<": "_lt", ">": "_gt", "<=": "_le", ">=": "_ge"}[op]
        python_op: ast.cmpop = {"<": ast.Lt(), ">": ast.Gt(), "<=": ast.LtE(), ">=": ast.GtE()}[op]
        generic = _call(function, left.expr, right.expr)
        for subject, other in ((left, right), (right, left)):
            if (
                isinstance(other.expr, ast.Constant)
                and _is_number_constant(other.expr.value)
                and not isinstance(subject.expr, ast.Constant)
            ):
                numeric = _or(_type_is(subject.expr, "_int"), _type_is(subject.expr, "_float"))
                fast = _compare(left.expr, python_op, right.expr)
                return Value(ast.IfExp(numeric, fast, generic), "bool")
        return Value(generic, "bool")

    def logical(self, node: Logical) -> Value:
        left = self.named(self.value(node.left))
        if node.op == "??":
            condition: ast.expr = _or(
                _is(left.expr, ast.Constant(None)), _is(left.expr, _name("_U"))
            )
        elif node.op == "&&":
            condition = self.truthy(left)
        else:
            condition = _not(self.truthy(left))
        right_block: list[ast.stmt] = []
        with self.into(right_block):
            right = self.value(node.right)
        kind = left.kind if left.kind == right.kind and node.op != "??" else "any"
        if not right_block:
            return Value(ast.IfExp(condition, right.expr, left.expr), kind)
        result = self.fresh()
        right_block.append(ast.Assign([_store(result)], right.expr))
        self.emit(ast.If(condition, right_block, [ast.Assign([_store(result)], left.expr)]))
        return Value(_name(result), kind)

    def conditional(self, node: Conditional) -> Value:
        test = self.value(node.test)
        result = self.fresh()
        branches: list[tuple[list[ast.stmt], Value]] = []
        for branch in (node.consequent, node.alternate):
            block: list[ast.stmt] = []
            with self.into(block):
                value = self.value(branch)
            block.append(ast.Assign([_store(result)], value.expr))
            branches.append((block, value))
        self.emit(ast.If(self.truthy(test), branches[0][0], branches[1][0]))
        kinds = {value.kind for _, value in branches}
        return Value(_name(result), kinds.pop() if len(kinds) == 1 else "any")


def _call_attr(target: str, attribute: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(_name(target), attribute, ast.Load()), list(args), [])


def _weight(body: Node) -> int:
    """Steps one callback invocation costs: the nodes of its body, nested callbacks aside."""
    count = 0
    stack = [body]
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(child for child in children(node) if not isinstance(child, Arrow))
    return count
