"""Property chains, method calls and array callbacks, compiled for speed and exactness.

A run of constant keys (``inbox.folders``) becomes one ``try`` of plain subscripts that falls
back to the exact reader; ``?.`` becomes a nullish test that skips the rest of the chain;
array callbacks become inline ``for`` loops charged to the step budget.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Final

from assay.expr import pyast as py
from assay.expr.emitter import Emitter, Value
from assay.expr.functions import GLOBAL_FUNCTIONS, GLOBAL_NAMESPACES, GLOBAL_VALUES
from assay.expr.methods import CALLBACK_METHODS
from assay.expr.syntax import Arrow, Call, Chain, Identifier, Literal, Member, Node, children

_BOOLEAN_METHODS: Final = frozenset({"includes", "startsWith", "endsWith", "some", "every"})


@dataclass(frozen=True, slots=True)
class _Link:
    """One step of a property chain: ``kind`` is key, length, index or method."""

    kind: str
    optional: bool
    start: int
    end: int
    key: str = ""
    index: Node | None = None
    args: tuple[Node, ...] = ()


class ChainCompiler(Emitter):
    """Compiles property chains, method calls and array callbacks."""

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
                        "method",
                        callee.optional,
                        current.start,
                        current.end,
                        key=callee.prop,
                        args=current.args,
                    )
                )
                current = callee.obj
            elif isinstance(current, Member):
                prop = current.prop
                if isinstance(prop, Literal) and type(prop.value) is str:
                    prop = prop.value
                if isinstance(prop, str):
                    kind = "length" if prop == "length" else "key"
                    links.append(
                        _Link(kind, current.optional, current.start, current.end, key=prop)
                    )
                else:
                    links.append(
                        _Link("index", current.optional, current.start, current.end, index=prop)
                    )
                current = current.obj
            elif isinstance(current, Chain) and current is node:
                current = current.expression
            else:
                break
        links.reverse()
        return current, links

    def chain(self, node: Node) -> Value:
        base, links = self.flatten(node)
        # The text of what each link reads from: the base, then the chain up to each link.
        texts = [self.text(base)] + [self.source[link.start : link.end] for link in links]
        if isinstance(base, Identifier) and self.lookup_param(base.name) is None:
            if base.name in GLOBAL_VALUES:
                current = self.atom(
                    Value(
                        ast.Call(
                            ast.Attribute(py.name("state"), "get", ast.Load()),
                            [ast.Constant(base.name), ast.Constant(GLOBAL_VALUES[base.name])],
                            [],
                        )
                    )
                )
            else:
                links.insert(0, _Link("key", False, base.start, base.end, key=base.name))
                texts.insert(0, "")
                current = Value(py.name("state"))
        elif isinstance(base, Identifier):
            current = Value(py.name(self.lookup_param(base.name) or ""))
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
                skip: list[ast.stmt] = [ast.Assign([py.store(result)], py.name("_U"))]
                go_on: list[ast.stmt] = []
                self.emit(
                    ast.If(
                        py.or_(
                            py.is_(current.expr, ast.Constant(None)),
                            py.is_(current.expr, py.name("_U")),
                        ),
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
        return Value(py.name(result), current.kind)

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
                        py.type_is(obj.expr, "_list"),
                        py.call("len", obj.expr),
                        py.call("_length_of", obj.expr, ast.Constant(text)),
                    )
                )
            elif link.kind == "index":
                assert link.index is not None
                key = self.atom(self.value(link.index))
                # A computed key is named by its text in errors: its value may be a secret.
                key_text = None if isinstance(link.index, Literal) else self.text(link.index)
                current = Value(
                    py.call(
                        "_get_member",
                        obj.expr,
                        key.expr,
                        ast.Constant(text),
                        ast.Constant(key_text),
                        self.meter,
                    )
                )
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
        fallback = py.call(
            "_get_path",
            obj.expr,
            ast.Tuple([ast.Constant(key) for key in keys], ast.Load()),
            ast.Tuple([ast.Constant(text) for text in texts], ast.Load()),
        )
        self.emit(
            ast.Try(
                body=[ast.Assign([py.store(target)], subscript)],
                handlers=[
                    ast.ExceptHandler(
                        ast.Tuple([py.name("_KeyError"), py.name("_TypeError")], ast.Load()),
                        None,
                        [ast.Assign([py.store(target)], fallback)],
                    )
                ],
                orelse=[],
                finalbody=[],
            )
        )
        return Value(py.name(target))

    def method(self, receiver: Value, link: _Link, text: str) -> Value:
        name = link.key
        if name in CALLBACK_METHODS:
            arrow = link.args[0]
            assert isinstance(arrow, Arrow)
            return self.callback(receiver, name, arrow, text)
        args = [self.atom(self.value(arg)) for arg in link.args]
        arg_tuple = ast.Tuple([arg.expr for arg in args], ast.Load())
        generic = py.call(
            "_call_method",
            receiver.expr,
            ast.Constant(name),
            arg_tuple,
            ast.Constant(text),
            self.meter,
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
                    py.type_is(receiver.expr, "_list"),
                    py.compare(args[0].expr, ast.In(), receiver.expr),
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
                py.type_is(array, "_list", negate=True),
                [
                    ast.Raise(
                        py.call("_not_a_function", array, ast.Constant(method), ast.Constant(text))
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
            "find": py.name("_U"),
            "findIndex": ast.Constant(-1),
        }
        if method in ("filter", "map"):
            self.charge(ast.BinOp(py.call("len", array), ast.Mult(), ast.Constant(weight)))
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
        target: ast.expr = py.store(element)
        iterable: ast.expr = array
        if uses_index:
            target = ast.Tuple([py.store(index), py.store(element)], ast.Store())
            iterable = py.call("enumerate", array)
        self.emit(ast.For(target, iterable, loop_body, [], type_comment=None))
        kind = {"some": "bool", "every": "bool", "findIndex": "number"}.get(method, "any")
        return Value(py.name(result), kind)

    def finish_callback(
        self, method: str, value: Value, result: str, element: str, index: str
    ) -> None:
        if method == "map":
            self.emit(ast.Expr(py.call_attr(result, "append", value.expr)))
            return
        test = self.truthy(value)
        if method == "filter":
            self.emit(
                ast.If(test, [ast.Expr(py.call_attr(result, "append", py.name(element)))], [])
            )
            return
        if method == "every":
            self.emit(
                ast.If(
                    py.not_(test),
                    [ast.Assign([py.store(result)], ast.Constant(False)), ast.Break()],
                    [],
                )
            )
            return
        found = {"some": ast.Constant(True), "find": py.name(element), "findIndex": py.name(index)}
        self.emit(ast.If(test, [ast.Assign([py.store(result)], found[method]), ast.Break()], []))


def _weight(body: Node) -> int:
    """Steps one callback invocation costs: the nodes of its body, nested callbacks aside."""
    count = 0
    stack = [body]
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(child for child in children(node) if not isinstance(child, Arrow))
    return count
