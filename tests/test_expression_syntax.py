"""Compile-time rejection: every construct outside the language gets a positioned error."""

from __future__ import annotations

import pytest

from assay import ExpressionError, ExpressionSyntaxError, compile_expression
from assay.errors import WrongTypeError


def syntax_error(source: str) -> ExpressionSyntaxError:
    with pytest.raises(ExpressionSyntaxError) as caught:
        compile_expression(source)
    return caught.value


def test_error_carries_position_and_caret() -> None:
    error = syntax_error("inbox.sent_count = = 15")
    assert error.position == 17
    assert error.caret == "inbox.sent_count = = 15\n                 ^"
    assert str(error) == (
        "assignment (=) is not allowed; expressions only read at position 17\n"
        "inbox.sent_count = = 15\n"
        "                 ^"
    )
    assert isinstance(error, SyntaxError)
    assert isinstance(error, ExpressionError)
    assert error.offset == 18
    assert error.lineno == 1


def test_caret_points_into_the_right_line() -> None:
    error = syntax_error("a &&\n  b +")
    assert error.caret == "  b +\n     ^"
    assert error.lineno == 2


def test_a_long_line_is_shown_around_the_caret_only() -> None:
    source = "a." + "b" * 200 + " = = 1 && " + "c" * 200
    error = syntax_error(source)
    assert error.position == 203
    shown, caret = error.caret.split("\n")
    assert shown == "…" + source[143:223] + "…"
    assert caret == " " * 61 + "^"
    assert shown[caret.index("^")] == "="
    assert len(str(error)) < 250
    assert error.text == source  # SyntaxError's own field keeps the whole line


def test_half_a_surrogate_pair_is_shown_as_its_escape_so_the_error_can_be_printed() -> None:
    error = syntax_error('a === "x\ud800y" +')
    assert str(error) == (
        'unexpected end of the expression at position 13\na === "x\\ud800y" +\n                  ^'
    )
    str(error).encode()  # printable: it would raise UnicodeEncodeError with the half pair
    assert (error.text, error.offset) == ('a === "x\\ud800y" +', 19)
    lone = syntax_error("ab\udc80")
    assert str(lone) == "unexpected character '\\udc80' at position 2\nab\\udc80\n  ^"


@pytest.mark.parametrize(
    ("source", "reason", "position"),
    [
        ("", "the expression is empty", 0),
        ("a +", "unexpected end of the expression", 3),
        ("a.b = 1", "assignment (=) is not allowed; expressions only read", 4),
        ("a++", "assignment (++) is not allowed; expressions only read", 1),
        ("a += 1", "assignment (+=) is not allowed; expressions only read", 2),
        ("a | b", "bitwise operators are not supported", 2),
        ("~a", "bitwise operators are not supported", 0),
        ("a ** 2", "** is not supported", 2),
        ("a, b", "the comma operator is not supported", 1),
        ("a; b", "only one expression is allowed; remove the ';'", 1),
        ("new Date()", "'new' is not allowed in expressions", 0),
        ("this.x", "'this' is not available; name state keys directly", 0),
        ("function() {}", "'function' is not allowed", 0),
        ("delete a.b", "'delete' is not allowed in expressions", 0),
        ("void 0", "'void' is not allowed in expressions", 0),
        ("a instanceof b", "instanceof is not supported", 2),
        ("`x${a}`", "template literals are not supported; use a quoted string and +", 0),
        ("/ab+c/.test(a)", "regular expression literals are not allowed", 0),
        ("({a: 1})", "object literals are not supported; compare fields one by one", 1),
        ("[1, , 2]", "array holes ([1, , 2]) are not supported", 4),
        ("[...a]", "spread is not supported", 1),
        ("'abc", "unterminated string", 0),
        ("'a\nb'", "unterminated string (a line break inside quotes)", 2),
        ("'\\1'", "octal escapes are not allowed; use \\x or \\u escapes instead", 1),
        ("'\\xZZ'", "\\x must be followed by two hex digits", 1),
        ("'\\u{110000}'", "\\u{...} must hold a code point up to 10FFFF", 1),
        ("017", "numbers may not start with 0 (legacy octal); write 0o17 for octal", 0),
        ("10n", "BigInt literals are not supported", 2),
        ("3in a", "a number must not be followed directly by a name or digit", 1),
        ("a # b", "unexpected '#'", 2),
        ("a ?? b || c", "?? cannot be mixed with && or || without parentheses", 7),
        ("a && b ?? c", "?? cannot be mixed with && or || without parentheses", 7),
        ("a ?? b && c", "?? cannot be mixed with && or || without parentheses", 2),
        ("a.push(1)", "the method 'push' is not allowed; allowed methods are", 2),
        ("a.sort()", "the method 'sort' is not allowed", 2),
        ("a.splice(0, 1)", "the method 'splice' is not allowed", 2),
        ("a.constructor('x')", "the method 'constructor' is not allowed", 2),
        ("a['includes']('x')", "only methods called by name", 13),
        ("eval('1')", "eval is not a function that expressions may call", 0),
        ("Math.sqrt(2)", "Math.sqrt is not supported; allowed: Math.abs, Math.ceil", 0),
        ("Object.assign(a, b)", "Object.assign is not supported", 0),
        ("a?.includes?.(1)", "optional calls ?.( ) are not supported", 13),
        ("a?.includes(1)", "optional method calls (a?.b()) are not supported", 0),
        ("x => x", "arrow functions are only allowed as the callback of", 0),
        ("a.includes(x => x)", "arrow functions are only allowed as the callback of", 11),
        ("a.map(x => x, 1)", "map takes exactly one arrow function, e.g. map(x => x.done)", 5),
        ("a.filter(Boolean)", "filter takes exactly one arrow function", 8),
        ("a.map(x => { return x })", "arrow functions take an expression body, not a block", 11),
        ("a.map((x, x) => x)", "duplicate parameter name 'x'", 10),
        ("a.map((a, b, c, d) => a)", "a callback takes at most three parameters", 16),
        ("a.map(x => y => y)", "arrow functions are only allowed as the callback of", 11),
        ("a.map(new => 1)", "'new' cannot be a parameter name", 6),
        ("a.b.", "expected a property name after '.', found the end", 4),
        ("(a", "expected ')' to close the parenthesis, found the end of the expression", 2),
        ("a ? b", "expected ':' in a conditional expression (a ? b : c)", 5),
    ],
)
def test_rejections_are_specific(source: str, reason: str, position: int) -> None:
    error = syntax_error(source)
    assert error.reason.startswith(reason), error.reason
    assert error.position == position


@pytest.mark.parametrize(
    "source",
    [
        "a?.5:1",  # a conditional, not an optional chain
        "a.new + a.class + a.if",  # reserved words are fine as property names
        "1_000 + 0x1F + 0o17 + 0b101 + .5 + 5. + 1e3 + 1E-3",
        "'\\x41\\u0041\\u{1F600}\\n\\t\\0\\'\\q' + \"\\\"\"",
        "a /* comment */ + b // trailing",
        "a.map(() => 1)",
        "a.map((x) => x)",
        "a.map((x, i, all) => all[i] === x)",
        "(a ?? b) || c",
        "a ?? (b && c)",
        "a ?? b ?? c",
        "[1, 2, 3,]",
        "Math.max(1, 2,)",
        "typeof typeof a",
        "!!a",
        "- -a",
        "a\n.b",
    ],
)
def test_valid_javascript_in_the_subset_compiles(source: str) -> None:
    compile_expression(source)


def test_string_literal_escapes() -> None:
    value = compile_expression("'\\x41\\u0041\\u{1F600}\\n\\t\\0\\'\\q\\\n'").evaluate({})
    assert value == "AA😀\n\t\0'q"


def test_rejects_a_non_string_source() -> None:
    with pytest.raises(WrongTypeError, match="an expression must be a str, not int") as caught:
        compile_expression(42)  # type: ignore[arg-type]
    assert isinstance(caught.value, TypeError)
