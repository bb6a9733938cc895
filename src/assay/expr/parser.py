"""A precedence-climbing parser for the expression language, with its restrictions.

It accepts exactly the subset of JavaScript expressions of SPEC §3 and rejects everything
else at compile time with the position and a sentence saying what to write instead: calls
only of the allowed methods and globals, arrow functions only as array-method callbacks,
``??`` never mixed with unparenthesised ``&&``/``||``, and bounded nesting.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Final

from assay.errors import ExpressionSyntaxError
from assay.expr.functions import GLOBAL_FUNCTIONS, GLOBAL_NAMESPACES
from assay.expr.lexer import Token, TokenStream
from assay.expr.methods import ALLOWED_METHODS, CALLBACK_METHODS
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
from assay.json.values import UNDEFINED

_BINARY_PRECEDENCE: Final = {
    "??": 1,
    "||": 1,
    "&&": 2,
    "==": 6,
    "!=": 6,
    "===": 6,
    "!==": 6,
    "<": 7,
    "<=": 7,
    ">": 7,
    ">=": 7,
    "in": 7,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}
_UNSUPPORTED_OPERATORS: Final = {
    "|": "bitwise operators are not supported",
    "&": "bitwise operators are not supported",
    "^": "bitwise operators are not supported",
    "<<": "bitwise operators are not supported",
    ">>": "bitwise operators are not supported",
    ">>>": "bitwise operators are not supported",
    "**": "** is not supported",
    "instanceof": "instanceof is not supported",
    ",": "the comma operator is not supported",
}
_ASSIGNMENTS: Final = frozenset(
    "= += -= *= /= %= **= <<= >>= >>>= &= |= ^= &&= ||= ??= ++ --".split()
)
_LITERAL_NAMES: Final = {"true": True, "false": False, "null": None, "undefined": UNDEFINED}
_RESERVED: Final = frozenset(
    """break case catch class const continue debugger default delete do else enum export
    extends finally for function if import in instanceof new return super switch this throw
    try typeof var void while with yield let static implements interface package private
    protected public await""".split()
)
_POSTFIX: Final = frozenset({".", "?.", "[", "("})
_CALLABLE_GLOBALS: Final = frozenset(name for name in GLOBAL_FUNCTIONS if "." not in name)
_MAX_ARROW_PARAMS: Final = 3


class Parser:
    """Parses one expression; ``parse()`` returns its tree or raises ExpressionSyntaxError."""

    def __init__(self, source: str, max_depth: int) -> None:
        self.source = source
        self.tokens = TokenStream(source)
        self.index = 0
        self.max_depth = max_depth
        self.depth = 0
        self.scopes: list[frozenset[str]] = []

    def parse(self) -> Node:
        if self.peek.kind == "end":
            raise self.error("the expression is empty", self.peek.start)
        node = self.assignment()
        token = self.peek
        if token.kind != "end":
            raise self.unexpected(token)
        if isinstance(node, Arrow):
            raise self.misplaced_arrow(node)
        check_depth(node, self.max_depth, self.source)
        return node

    @property
    def peek(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def at(self, text: str) -> bool:
        token = self.tokens[self.index]
        return token.kind == "punct" and token.text == text

    def expect(self, text: str, context: str) -> Token:
        token = self.peek
        if token.kind == "punct" and token.text == text:
            return self.advance()
        found = "the end of the expression" if token.kind == "end" else repr(token.text)
        raise self.error(f"expected {text!r} {context}, found {found}", token.start)

    def error(self, reason: str, position: int) -> ExpressionSyntaxError:
        return ExpressionSyntaxError(reason, self.source, position)

    def unexpected(self, token: Token) -> ExpressionSyntaxError:
        if token.kind == "end":
            return self.error("unexpected end of the expression", token.start)
        text = token.text
        if text in _ASSIGNMENTS:
            return self.error(
                f"assignment ({text}) is not allowed; expressions only read", token.start
            )
        if text in _UNSUPPORTED_OPERATORS:
            return self.error(_UNSUPPORTED_OPERATORS[text], token.start)
        if text == ";":
            return self.error("only one expression is allowed; remove the ';'", token.start)
        return self.error(f"unexpected {text!r}", token.start)

    def enter(self, position: int) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise self.error(
                f"the expression is nested deeper than {self.max_depth} levels (max_depth)",
                position,
            )

    def check_chain(self, length: int, token: Token) -> None:
        """A chain (``a.b.c``, ``a + b + c``) deepens the tree without recursing: count it."""
        if self.depth + length > self.max_depth:
            raise self.error(
                f"the expression is nested deeper than {self.max_depth} levels (max_depth)",
                token.start,
            )

    def assignment(self) -> Node:
        """AssignmentExpression: an arrow function or a conditional expression."""
        arrow = self.arrow()
        if arrow is not None:
            return arrow
        self.enter(self.peek.start)
        try:
            return self.conditional()
        finally:
            self.depth -= 1

    def arrow(self) -> Arrow | None:
        start = self.peek.start
        params = self.arrow_params()
        if params is None:
            return None
        arrow_token = self.expect("=>", "after the arrow function's parameters")
        if arrow_token.newline_before:
            raise self.error("a line break is not allowed before =>", arrow_token.start)
        if self.at("{"):
            raise self.error(
                "arrow functions take an expression body, not a block: write x => x.done",
                self.peek.start,
            )
        self.scopes.append(frozenset(params))
        try:
            body = self.assignment()
        finally:
            self.scopes.pop()
        if isinstance(body, Arrow):
            raise self.misplaced_arrow(body)
        return Arrow(start, body.end, params, body)

    def arrow_params(self) -> tuple[str, ...] | None:
        """Arrow parameters if an arrow function starts here; the index moves past them."""
        token = self.peek
        following = self.tokens[self.index + 1]
        if token.kind == "name" and following.kind == "punct" and following.text == "=>":
            self.check_binding(token)
            self.index += 1
            return (token.text,)
        if not self.at("("):
            return None
        index = self.index + 1
        names: list[Token] = []
        while True:
            current = self.tokens[index]
            if current.kind == "punct" and current.text == ")" and not names:
                break
            if current.kind != "name":
                return None
            names.append(current)
            separator = self.tokens[index + 1]
            index += 2
            if separator.kind == "punct" and separator.text == ")":
                index -= 1
                break
            if not (separator.kind == "punct" and separator.text == ","):
                return None
        closing = self.tokens[index + 1]
        if not (closing.kind == "punct" and closing.text == "=>"):
            return None
        seen: set[str] = set()
        for name in names:
            self.check_binding(name)
            if name.text in seen:
                raise self.error(f"duplicate parameter name {name.text!r}", name.start)
            seen.add(name.text)
        if len(names) > _MAX_ARROW_PARAMS:
            raise self.error(
                "a callback takes at most three parameters (element, index, array)",
                names[_MAX_ARROW_PARAMS].start,
            )
        self.index = index + 1
        return tuple(name.text for name in names)

    def check_binding(self, token: Token) -> None:
        if token.text in _RESERVED or token.text in _LITERAL_NAMES:
            raise self.error(f"{token.text!r} cannot be a parameter name", token.start)

    def conditional(self) -> Node:
        test = self.binary(1)
        if not self.at("?"):
            return test
        self.advance()
        consequent = self.assignment()
        self.expect(":", "in a conditional expression (a ? b : c)")
        alternate = self.assignment()
        for branch in (consequent, alternate):
            if isinstance(branch, Arrow):
                raise self.misplaced_arrow(branch)
        return Conditional(test.start, alternate.end, test, consequent, alternate)

    def binary_operator(self) -> str | None:
        token = self.peek
        if token.kind == "punct" and token.text in _BINARY_PRECEDENCE:
            return token.text
        if token.kind == "name" and token.text == "in":
            return "in"
        return None

    def binary(self, min_precedence: int) -> Node:
        left = self.unary()
        chained = 0
        while True:
            op = self.binary_operator()
            if op is None:
                token = self.peek
                if token.text in _UNSUPPORTED_OPERATORS and token.text != ",":
                    raise self.unexpected(token)
                if token.kind == "punct" and token.text in _ASSIGNMENTS:
                    raise self.unexpected(token)
                return left
            precedence = _BINARY_PRECEDENCE[op]
            if precedence < min_precedence:
                return left
            operator_token = self.advance()
            chained += 1
            self.check_chain(chained, operator_token)
            self.enter(operator_token.start)
            try:
                right = self.binary(precedence + 1)
            finally:
                self.depth -= 1
            if op in ("&&", "||", "??"):
                self.check_mixing(op, left, right, operator_token)
                left = Logical(left.start, right.end, op, left, right)
            else:
                left = Binary(left.start, right.end, op, left, right)

    def check_mixing(self, op: str, left: Node, right: Node, token: Token) -> None:
        def bare(node: Node, ops: tuple[str, ...]) -> bool:
            return isinstance(node, Logical) and not node.parenthesized and node.op in ops

        if op == "??":
            mixed = bare(left, ("&&", "||")) or bare(right, ("&&", "||"))
        else:
            mixed = bare(left, ("??",)) or bare(right, ("??",))
        if mixed:
            raise self.error(
                "?? cannot be mixed with && or || without parentheses; add ( ) to say which "
                "comes first",
                token.start,
            )

    def unary(self) -> Node:
        token = self.peek
        if token.kind == "punct" and token.text in ("!", "-", "+"):
            op = token.text
        elif token.kind == "name" and token.text == "typeof":
            op = "typeof"
        elif token.kind == "punct" and token.text in ("++", "--"):
            raise self.unexpected(token)
        elif token.kind == "punct" and token.text == "~":
            raise self.error("bitwise operators are not supported", token.start)
        elif token.kind == "name" and token.text in ("delete", "void", "await", "new"):
            raise self.error(f"{token.text!r} is not allowed in expressions", token.start)
        else:
            return self.postfix()
        self.advance()
        self.enter(token.start)
        try:
            operand = self.unary()
        finally:
            self.depth -= 1
        if self.at("**"):
            raise self.error("** is not supported", self.peek.start)
        if op == "-" and isinstance(operand, Literal) and type(operand.value) in (int, float):
            value = operand.value
            return Literal(token.start, operand.end, -float(value) if value == 0 else -value)
        return Unary(token.start, operand.end, op, operand)

    def postfix(self) -> Node:
        opening = self.peek
        node = self.primary()
        following = self.peek
        if (
            opening.kind == following.kind == "punct"
            and opening.text == "("
            and following.text in _POSTFIX
        ):
            # The base of a chain spans its parentheses, so that the chain's text in
            # messages keeps them: `(a + b).c`, not `a + b).c`.
            closing = self.tokens[self.index - 1]
            node = dataclasses.replace(node, start=opening.start, end=closing.end)
        optional_seen = False
        chained = 0
        while True:
            token = self.peek
            if token.kind != "punct":
                break
            chained += 1
            self.check_chain(chained, token)
            if token.text == ".":
                self.advance()
                name = self.property_name()
                node = Member(node.start, name.end, node, name.text, optional=False)
            elif token.text == "?.":
                self.advance()
                optional_seen = True
                if self.at("["):
                    node = self.computed_member(node, optional=True)
                elif self.at("("):
                    raise self.error("optional calls ?.( ) are not supported", self.peek.start)
                else:
                    name = self.property_name()
                    node = Member(node.start, name.end, node, name.text, optional=True)
            elif token.text == "[":
                node = self.computed_member(node, optional=False)
            elif token.text == "(":
                node = self.call(node)
            elif token.text in ("++", "--"):
                raise self.unexpected(token)
            else:
                break
        if optional_seen:
            node = Chain(node.start, node.end, node)
        return node

    def property_name(self) -> Token:
        token = self.peek
        if token.kind != "name":
            found = "the end" if token.kind == "end" else repr(token.text)
            raise self.error(f"expected a property name after '.', found {found}", token.start)
        return self.advance()

    def computed_member(self, node: Node, optional: bool) -> Member:
        self.advance()
        prop = self.assignment()
        if isinstance(prop, Arrow):
            raise self.misplaced_arrow(prop)
        close = self.expect("]", "to close the computed property")
        return Member(node.start, close.end, node, prop, optional=optional)

    def call(self, callee: Node) -> Call:
        self.check_callee_name(callee)
        open_token = self.advance()
        args: list[Node] = []
        while not self.at(")"):
            if self.at("..."):
                raise self.error("spread arguments are not supported", self.peek.start)
            args.append(self.assignment())
            if not self.at(")"):
                self.expect(",", "between arguments")
        close = self.advance()
        self.check_callee(callee, args, open_token)
        return Call(callee.start, close.end, callee, tuple(args))

    def bound(self, name: str) -> bool:
        return any(name in scope for scope in self.scopes)

    def check_callee_name(self, callee: Node) -> None:
        """Reject a call of anything not allowed before reading its arguments."""
        if (
            isinstance(callee, Member)
            and isinstance(callee.prop, str)
            and not callee.optional
            and not (isinstance(callee.obj, Identifier) and callee.obj.name in GLOBAL_NAMESPACES)
            and callee.prop not in ALLOWED_METHODS
        ):
            raise self.error(
                f"the method {callee.prop!r} is not allowed; allowed methods are "
                f"{', '.join(sorted(ALLOWED_METHODS))}",
                callee.end - len(callee.prop),
            )

    def check_callee(self, callee: Node, args: list[Node], open_token: Token) -> None:
        if isinstance(callee, Identifier):
            if callee.name in _CALLABLE_GLOBALS and not self.bound(callee.name):
                self.check_plain_args(args)
                return
            raise self.error(
                f"{callee.name} is not a function that expressions may call; callable globals "
                f"are {', '.join(sorted(_CALLABLE_GLOBALS))}",
                callee.start,
            )
        if not isinstance(callee, Member) or not isinstance(callee.prop, str):
            raise self.error(
                "only methods called by name (a.includes(x)) and the listed globals can be called",
                open_token.start,
            )
        if callee.optional:
            raise self.error("optional method calls (a?.b()) are not supported", callee.start)
        method = callee.prop
        receiver = callee.obj
        if (
            isinstance(receiver, Identifier)
            and receiver.name in GLOBAL_NAMESPACES
            and not self.bound(receiver.name)
        ):
            qualified = f"{receiver.name}.{method}"
            if qualified not in GLOBAL_FUNCTIONS:
                allowed = sorted(n for n in GLOBAL_FUNCTIONS if n.startswith(receiver.name + "."))
                raise self.error(
                    f"{qualified} is not supported; allowed: {', '.join(allowed)}", callee.start
                )
            self.check_plain_args(args)
            return
        if method not in ALLOWED_METHODS:
            raise self.error(
                f"the method {method!r} is not allowed; allowed methods are "
                f"{', '.join(sorted(ALLOWED_METHODS))}",
                callee.end - len(method),
            )
        if method in CALLBACK_METHODS:
            if len(args) != 1 or not isinstance(args[0], Arrow):
                raise self.error(
                    f"{method} takes exactly one arrow function, e.g. {method}(x => x.done)",
                    open_token.start,
                )
            return
        self.check_plain_args(args)

    def check_plain_args(self, args: list[Node]) -> None:
        for arg in args:
            if isinstance(arg, Arrow):
                raise self.misplaced_arrow(arg)

    def misplaced_arrow(self, arrow: Arrow) -> ExpressionSyntaxError:
        return self.error(
            "arrow functions are only allowed as the callback of "
            f"{', '.join(sorted(CALLBACK_METHODS))}",
            arrow.start,
        )

    def primary(self) -> Node:
        token = self.peek
        if token.kind in ("number", "string"):
            self.advance()
            return Literal(token.start, token.end, token.value)
        if token.kind == "name":
            return self.name()
        if token.kind == "punct":
            if token.text == "(":
                return self.parenthesized()
            if token.text == "[":
                return self.array_literal()
            if token.text == "{":
                raise self.error(
                    "object literals are not supported; compare fields one by one", token.start
                )
            if token.text == "/":
                raise self.error("regular expression literals are not allowed", token.start)
            if token.text == "...":
                raise self.error("spread is not supported", token.start)
        raise self.unexpected(token)

    def name(self) -> Node:
        token = self.advance()
        text = token.text
        if text in _LITERAL_NAMES:
            return Literal(token.start, token.end, _LITERAL_NAMES[text])
        if text == "this":
            raise self.error("'this' is not available; name state keys directly", token.start)
        if text in ("function", "class"):
            raise self.error(
                f"'{text}' is not allowed; use an arrow function as an array-method callback",
                token.start,
            )
        if text in _RESERVED:
            raise self.error(f"{text!r} is not allowed in expressions", token.start)
        return Identifier(token.start, token.end, text)

    def parenthesized(self) -> Node:
        open_token = self.advance()
        if self.at(")"):
            raise self.error("empty parentheses", open_token.start)
        inner = self.assignment()
        if isinstance(inner, Arrow):
            raise self.misplaced_arrow(inner)
        if self.at(","):
            raise self.unexpected(self.peek)
        self.expect(")", "to close the parenthesis")
        if isinstance(inner, Logical):
            return Logical(
                inner.start, inner.end, inner.op, inner.left, inner.right, parenthesized=True
            )
        return inner

    def array_literal(self) -> ArrayLiteral:
        open_token = self.advance()
        elements: list[Node] = []
        while not self.at("]"):
            if self.at(","):
                raise self.error("array holes ([1, , 2]) are not supported", self.peek.start)
            if self.at("..."):
                raise self.error("spread is not supported", self.peek.start)
            element = self.assignment()
            if isinstance(element, Arrow):
                raise self.misplaced_arrow(element)
            elements.append(element)
            if not self.at("]"):
                self.expect(",", "between array elements")
        close = self.advance()
        return ArrayLiteral(open_token.start, close.end, tuple(elements))


def check_depth(root: Node, max_depth: int, source: str) -> None:
    """Reject trees deeper than ``max_depth``, including long left-leaning operator chains."""
    stack: list[tuple[Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise ExpressionSyntaxError(
                f"the expression is nested deeper than {max_depth} levels (max_depth)",
                source,
                node.start,
            )
        stack.extend((child, depth + 1) for child in children(node))


def walk(root: Node) -> Iterator[Node]:
    """Every node of the tree, parents before children."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(children(node)))


def parse(source: str, max_depth: int) -> Node:
    """Parse ``source`` into a syntax tree, or raise ExpressionSyntaxError."""
    return Parser(source, max_depth).parse()
