"""Exact JavaScript semantics of the expression language, case by case.

The differential test against Node.js covers the language broadly; these pin the cases that
are easy to get wrong, each with the value JavaScript gives (checked with node).
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import pytest

from assay import UNDEFINED, ExpressionEvaluationError, compile_expression
from assay.errors import ContractError
from assay.expr import compile_contract
from assay.expr.reads import MAX_FILLED
from assay.graph.binding import fill
from assay.json.path import parse_path

STATE: dict[str, Any] = {
    "inbox": {"sent_count": 15, "folders": ["inbox", "archive"], "count": "15"},
    "drone": {"mode": "GUIDED", "altitude": 0},
    "items": [{"id": 1, "done": False}, {"id": 2, "done": True}, {"id": 3, "done": True}],
    "empty": [],
    "obj": {},
    "emoji": "😀x",
    "text": "  Hello World\u00a0\ufeff",
    "n": None,
    "numbers": {"2": "b", "1": "a", "x": "c"},
}


def evaluate(source: str, state: dict[str, Any] | None = None) -> Any:
    return compile_expression(source).evaluate(STATE if state is None else state)


def same(actual: Any, expected: Any) -> bool:
    """Equality that tells -0 from 0, NaN from everything, and bool from number."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, int | float) and expected == 0:
        return actual == 0 and math.copysign(1, actual) == math.copysign(1, expected)
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(same(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return type(actual) is type(expected) or (
        isinstance(expected, int | float) and actual == expected
    )


CASES: list[tuple[str, Any]] = [
    # Abstract and strict equality.
    ("inbox.count == 15", True),
    ("inbox.count === 15", False),
    ("[1] == 1", True),
    ("[1,2] == '1,2'", True),
    ("null == undefined", True),
    ("null === undefined", False),
    ("null == 0", False),
    ("true == 1", True),
    ("true === 1", False),
    ("'' == 0", True),
    ("' \\n' == 0", True),
    ("NaN == NaN", False),
    ("items === items", True),
    ("[] == []", False),
    ("obj == '[object Object]'", True),
    # Relational.
    ("null >= 0", True),
    ("undefined >= 0", False),
    ("'10' < '9'", True),
    ("'10' < 9", False),
    ("'a' < 'b'", True),
    ("'\\uffff' < '😀'", False),
    ("[2] > 1", True),
    # Arithmetic and concatenation.
    ("0.1 + 0.2", 0.30000000000000004),
    ("1 + '2'", "12"),
    ("'3' - 1", 2.0),
    ("1 + true", 2.0),
    ("1 + null", 1.0),
    ("1 + undefined", math.nan),
    ("[1,2] + [3]", "1,23"),
    ("'x' + obj", "x[object Object]"),
    ("1 / 0", math.inf),
    ("-1 / 0", -math.inf),
    ("1 / -0", -math.inf),
    ("0 / 0", math.nan),
    ("5 % -3", 2.0),
    ("-5 % 3", -2.0),
    ("-0", -0.0),
    ("-drone.altitude", -0.0),
    ("+'  0x1F '", 31.0),
    ("+'1e3'", 1000.0),
    ("+'1_000'", math.nan),
    ("+'Infinity'", math.inf),
    ("+'infinity'", math.nan),
    ("+''", 0),
    ("+[]", 0),
    ("+[5]", 5.0),
    ("+'-0x10'", math.nan),
    # Number to string.
    ("'' + 1e21", "1e+21"),
    ("'' + 1e-7", "1e-7"),
    ("'' + 123456789012345680000", "123456789012345680000"),
    ("'' + 0.000001", "0.000001"),
    ("'' + 1.5e-7", "1.5e-7"),
    ("'' + -0", "0"),
    ("'' + (0.1 + 0.2)", "0.30000000000000004"),
    ("'' + 100", "100"),
    # Truthiness and logic.
    ("[] && 'yes'", "yes"),
    ("obj || 'no'", {}),
    ("NaN || 'fallback'", "fallback"),
    ("0 ?? 'fallback'", 0),
    ("n ?? 'fallback'", "fallback"),
    ("missing ?? 'fallback'", "fallback"),
    ("'' ? 1 : 2", 2),
    ("!!'0'", True),
    # typeof.
    ("typeof null", "object"),
    ("typeof missing", "undefined"),
    ("typeof items", "object"),
    ("typeof inbox.sent_count", "number"),
    ("typeof ''", "string"),
    ("typeof !1", "boolean"),
    # Strings: UTF-16.
    ("emoji.length", 3),
    ("emoji[0] + emoji[1] === '😀'", True),
    ("emoji.slice(0, 1).length", 1),
    ("emoji.indexOf('x')", 2),
    ("emoji.at(-1)", "x"),
    ("'\\u{1F600}' === '😀'", True),
    ("'\\uD83D' + '\\uDE00' === '😀'", True),
    ("text.trim()", "Hello World"),
    ("'ß'.toUpperCase()", "SS"),
    ("'abc'.includes('')", True),
    ("'abc'.indexOf('', 10)", 3),
    ("'abc'.startsWith('b', 1)", True),
    ("'abc'.endsWith('b', 2)", True),
    ("'abc'.slice(-2)", "bc"),
    ("'abc'.slice(2, 1)", ""),
    ("'a1'.includes(1)", True),
    ("'abc'[5]", UNDEFINED),
    ("'abc'.foo", UNDEFINED),
    # Arrays.
    ("items.length", 3),
    ("items.filter(i => i.done).length", 2),
    ("items.map((x, i) => i)", [0, 1, 2]),
    ("items.map(x => x.id * 2)", [2.0, 4.0, 6.0]),
    ("items.some(x => x.id > 2)", True),
    ("items.every(x => x.id > 0)", True),
    ("empty.every(x => false)", True),
    ("empty.some(x => true)", False),
    ("items.find(x => x.done).id", 2),
    ("items.find(x => x.id > 5)", UNDEFINED),
    ("items.findIndex(x => x.done)", 1),
    ("items.findIndex(x => false)", -1),
    ("items.map((x, i, a) => a.length)", [3, 3, 3]),
    ("items.some(x => items.some(y => y.id === x.id + 2))", True),
    ("[1, NaN].includes(NaN)", True),
    ("[1, NaN].indexOf(NaN)", -1),
    ("[1, true].includes(1)", True),
    ("[true].includes(1)", False),
    ("[1, 2, 3].slice(-2)", [2, 3]),
    ("[1, 2, 3].at(-1)", 3),
    ("[1, 2, 3].at(3)", UNDEFINED),
    ("[1, null, undefined, [2, 3]].join()", "1,,,2,3"),
    ("[1, 2].join(undefined)", "1,2"),
    ("['a'].indexOf('a', 1)", -1),
    ("inbox.folders.includes('archive')", True),
    ("inbox.folders.includes('archive', -1)", True),
    ("inbox.folders.includes('inbox', 1)", False),
    ("items[1].id", 2),
    ("items['1'].id", 2),
    ("items[1.5]", UNDEFINED),
    ("items[-1]", UNDEFINED),
    ("items['length']", 3),
    # Objects and globals.
    ("Object.keys(numbers)", ["1", "2", "x"]),
    ("Object.values(numbers)", ["a", "b", "c"]),
    ("Object.entries(drone)", [["mode", "GUIDED"], ["altitude", 0]]),
    ("Object.keys('ab')", ["0", "1"]),
    ("Object.keys(5)", []),
    ("Array.isArray(items)", True),
    ("Array.isArray(obj)", False),
    ("Math.max()", -math.inf),
    ("Math.min()", math.inf),
    ("Math.max(1, '3', 2)", 3.0),
    ("Math.max(1, NaN)", math.nan),
    ("Math.min(0, -0)", -0.0),
    ("Math.max(-0, 0)", 0),
    ("Math.round(2.5)", 3.0),
    ("Math.round(-2.5)", -2.0),
    ("Math.round(-0.4)", -0.0),
    ("Math.round(0.49999999999999994)", 0.0),
    ("Math.floor(-0.5)", -1.0),
    ("Math.ceil(-0.5)", -0.0),
    ("Math.abs(-'2')", 2.0),
    ("Number.isInteger(5)", True),
    ("Number.isInteger(5.5)", False),
    ("Number.isInteger('5')", False),
    ("isNaN('abc')", True),
    ("isNaN('12')", False),
    ("Number()", 0),
    ("Number(null)", 0),
    ("Number(undefined)", math.nan),
    ("String()", ""),
    ("String([1, [2, 3]])", "1,2,3"),
    ("String(null)", "null"),
    ("Boolean([])", True),
    ("Boolean(NaN)", False),
    ("'sent_count' in inbox", True),
    ("'length' in items", True),
    ("2 in items", True),
    ("3 in items", False),
    ("Infinity > 1e308", True),
    # Optional chaining short-circuits the whole chain.
    ("missing?.a.b.c", UNDEFINED),
    ("n?.a", UNDEFINED),
    ("inbox?.folders?.[1]", "archive"),
    ("missing?.[1].x", UNDEFINED),
    ("inbox?.sent_count", 15),
    # Prototype names are ordinary missing keys.
    ("obj.constructor", UNDEFINED),
    ("obj.__proto__", UNDEFINED),
    ("obj.__class__", UNDEFINED),
    ("inbox.toString", UNDEFINED),
]


@pytest.mark.parametrize(("source", "expected"), CASES, ids=str)
def test_value_matches_javascript(source: str, expected: Any) -> None:
    actual = evaluate(source)
    assert same(actual, expected), f"{source} gave {actual!r}, JavaScript gives {expected!r}"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("inbox.missing.count", "inbox.missing is undefined (reading 'count')"),
        ("n.x", "n is null (reading 'x')"),
        ("missing.x", "missing is undefined (reading 'x')"),
        ("items[9].id", "items[9] is undefined (reading 'id')"),
        ("missing?.a.b + n.c", "n is null (reading 'c')"),
        ("drone.mode.includes.x", "drone.mode.includes is undefined (reading 'x')"),
        ("inbox.sent_count.includes(1)", "inbox.sent_count.includes is not a function"),
        ("obj.some(x => x)", "obj.some is not a function (obj is an object)"),
        ("drone.mode.some(x => x)", "drone.mode.some is not a function (drone.mode is a string)"),
        (
            "'a' in drone.mode",
            "cannot use 'in' to look for a key in drone.mode, which is a string; "
            "the right side of 'in' must be an object or an array",
        ),
        ("obj.x[drone.mode].y", "obj.x is undefined (reading [drone.mode])"),
        ("obj.x['y']", "obj.x is undefined (reading 'y')"),
        ("(drone.mode + 'x').q.r", "(drone.mode + 'x').q is undefined (reading 'r')"),
        ("(obj.x).y", "(obj.x) is undefined (reading 'y')"),
        ("((obj.q)).r", "((obj.q)) is undefined (reading 'r')"),
        ("(obj)?.x.y", "(obj)?.x is undefined (reading 'y')"),
        ("Object.keys(n)", "Object.keys cannot convert null to an object"),
    ],
)
def test_evaluation_errors_name_the_path(source: str, message: str) -> None:
    with pytest.raises(ExpressionEvaluationError) as caught:
        evaluate(source)
    assert str(caught.value).startswith(message)


def test_check_reports_an_error_as_a_null_result() -> None:
    check = compile_expression("inbox.missing.count > 1").check(STATE)
    assert check.result is None
    assert check.value is None
    assert check.error == "inbox.missing is undefined (reading 'count')"


def test_check_verdict_is_javascript_truthiness() -> None:
    assert compile_expression("empty").check(STATE).result is True
    assert compile_expression("0/0").check(STATE).result is False
    assert compile_expression("''").check(STATE).result is False


def test_test_matches_boolean_of_evaluate() -> None:
    for source in ("empty", "obj", "NaN", "items.length", "'0'", "missing", "-0"):
        expression = compile_expression(source)
        assert expression.test(STATE) is compile_expression(f"Boolean({source})").evaluate(STATE)


def test_a_state_key_shadows_a_global() -> None:
    state = {"NaN": 5, "Math": {"abs": 1}}
    assert evaluate("NaN + 1", state) == 6.0
    with pytest.raises(ExpressionEvaluationError, match="Math is a key of the state"):
        evaluate("Math.abs(-1)", state)


def test_arrow_parameters_shadow_state_keys() -> None:
    state = {"x": 100, "items": [1, 2]}
    assert evaluate("items.map(x => x + 1)", state) == [2.0, 3.0]
    assert evaluate("items.map(y => x)", state) == [100, 100]


@pytest.mark.parametrize(
    ("source", "keys"),
    [
        ("inbox.sent_count == 15 && drone.mode == 'GUIDED'", ("drone.mode", "inbox.sent_count")),
        ("inbox.folders.includes('archive')", ("inbox.folders",)),
        ("items.filter(i => i.done).length >= 1", ("items",)),
        ("orders[args.order_id].status", ("args.order_id", "orders")),
        ("Object.keys(numbers).length", ("numbers",)),
        ("a?.b.c", ("a.b.c",)),
        ("inbox['sent.count']", ('inbox["sent.count"]',)),
        ("Math.max(a, 1)", ("a",)),
        ("1 + 2", ()),
        # A literal key names the member evaluation converts it to.
        ("orders[1].status", ("orders.1.status",)),
        ("orders[1.5].status || orders[null]", ("orders.null", 'orders["1.5"].status')),
        ("orders[undefined].status", ("orders",)),
        ("orders[args.ids[0]].status", ("args.ids.0", "orders")),
        # `in` reads whether the object has that one member.
        ("'o1' in orders", ("orders.o1",)),
        ("2 in items && 'x' in obj.y", ("items.2", "obj.y.x")),
        ("args.order_id in orders", ("args.order_id", "orders")),
        ("('o' + n) in orders", ("n", "orders")),
    ],
)
def test_keys_lists_the_paths_read(source: str, keys: tuple[str, ...]) -> None:
    assert compile_expression(source).keys == keys


ARGS = {"order_id": "o1", "n": 3, "ref": {"id": "a.b"}}


@pytest.mark.parametrize(
    ("source", "keys"),
    [
        ("orders[args.order_id].status === 'x'", ("orders.o1.status",)),
        ("orders[args.order_id]?.status", ("orders.o1.status",)),
        ("orders[args.ref.id].status", ('orders["a.b"].status',)),
        # A number names the member JavaScript converts it to.
        ("orders[args.n].status", ("orders.3.status",)),
        ("orders[args.order_id].lines[args.n]", ("orders.o1.lines.3",)),
        # An object, a missing argument or one that cannot be read: the whole object is read.
        ("orders[args.ref].status", ("orders",)),
        ("orders[args.missing].status", ("orders",)),
        ("orders[args.missing.id].status", ("orders",)),
        ("orders[args.order_id][args.ref].status", ("orders.o1",)),
        # A callback's parameter named args is not the fire's.
        ("items.map(args => orders[args.order_id])", ("items", "orders")),
        (
            "orders[args.order_id].status && Object.keys(orders).length",
            ("orders", "orders.o1.status"),
        ),
        ("args.order_id === 'o1' && inbox.count", ("inbox.count",)),
        ("args.order_id in orders", ("orders.o1",)),
        ("args.n in orders[args.order_id].lines", ("orders.o1.lines.3",)),
        ("args.ref in orders", ("orders",)),
    ],
)
def test_keys_with_the_fires_arguments_name_the_members_they_key(
    source: str, keys: tuple[str, ...]
) -> None:
    assert compile_expression(source).keys_with(ARGS) == keys


CALLBACK_ARGS = {
    "ids": ["a", "b", 1, "a"],
    "items": [{"id": "x"}, {"id": 2}],
    "odd": [{"id": {}}],
    "none": [],
    "text": "ab",
    "n": 1,
}


@pytest.mark.parametrize(
    ("source", "keys"),
    [
        # A callback over an argument array reads the member each element names.
        (
            "args.ids.every(id => orders[id].status === 'x')",
            ("orders.1.status", "orders.a.status", "orders.b.status"),
        ),
        ("args.items.some(it => orders[it.id][args.n])", ("orders.2.1", "orders.x.1")),
        ("args.ids.some(id => id in orders)", ("orders.1", "orders.a", "orders.b")),
        (
            "args.items.find(it => orders[it.id].lines.some(l => l.ok))",
            ("orders.2.lines", "orders.x.lines"),
        ),
        ("args.ids.map(args => orders[args]).length", ("orders.1", "orders.a", "orders.b")),
        # No member named for sure: the object is read whole.
        ("args.odd.some(it => orders[it.id].ok)", ("orders",)),
        ("args.none.every(id => orders[id].ok)", ("orders",)),
        ("args.text.every(id => orders[id].ok)", ("orders",)),
        ("args.missing.every(id => orders[id].ok)", ("orders",)),
        ("args.ids.every((id, i) => orders[i].ok)", ("orders",)),
        ("args.ids.every(id => items.some(id => orders[id]))", ("items", "orders")),
        ("args.items.filter(it => it.id).every(it => orders[it.id])", ("orders",)),
    ],
)
def test_keys_with_a_callback_over_an_argument_array_name_each_member(
    source: str, keys: tuple[str, ...]
) -> None:
    # args.ids.every(id => orders[id].status === 'x') read all of orders.
    assert compile_expression(source).keys_with(CALLBACK_ARGS) == keys


def test_keys_with_too_many_members_to_name_read_the_object_whole() -> None:
    expression = compile_expression("args.ids.every(id => orders[id].ok)")
    assert len(expression.keys_with({"ids": list(range(MAX_FILLED))})) == MAX_FILLED
    assert expression.keys_with({"ids": list(range(MAX_FILLED + 1))}) == ("orders",)


@pytest.mark.parametrize(
    ("value", "key"),
    [
        (1, "orders.1.status"),
        (-7, "orders.-7.status"),
        (1.0, "orders.1.status"),
        (-0.0, "orders.0.status"),
        (1.5, 'orders["1.5"].status'),
        (0.1 + 0.2, 'orders["0.30000000000000004"].status'),
        (1e21, 'orders["1e+21"].status'),
        (10**21, 'orders["1e+21"].status'),
        (1e-7, "orders.1e-7.status"),
        (True, "orders.true.status"),
        (None, "orders.null.status"),
        (math.inf, "orders.Infinity.status"),
        # An array or an object as the key: read as the whole object.
        ([1], "orders"),
        ({"id": 1}, "orders"),
    ],
)
def test_keys_with_a_key_that_is_no_string_name_the_member_evaluation_reads(
    value: Any, key: str
) -> None:
    # orders[args.n] with n = 1 read all of orders, so another order's change was evidence.
    expression = compile_expression("orders[args.n].status === 'cancelled'")
    assert expression.keys_with({"n": value}) == (key,)
    if key != "orders":
        # Evaluation reads the member at exactly that key, and nothing else of orders.
        state: Any = "cancelled"
        for segment in reversed(parse_path(key)):
            state = {segment: state}
        assert expression.test({**state, "args": {"n": value}}) is True


@pytest.mark.parametrize("value", ["o1", 0, 7, -7, 2**53 - 1, 10**21])
def test_a_placeholder_fills_the_key_an_expression_reads_with_the_same_argument(
    value: Any,
) -> None:
    expression = compile_expression("orders[args.n].status === 'cancelled'")
    contract = compile_contract({"orders.{n}.status": {"eq": "cancelled"}})
    assert contract.bind({"n": value}).keys == expression.keys_with({"n": value})
    assert fill("orders.{n}.status", {"n": value}) == expression.keys_with({"n": value})[0]


@pytest.mark.parametrize("value", [1.5, 1.0, True, None, [1], {"id": 1}])
def test_a_placeholder_refuses_an_argument_that_is_no_string_or_integer(value: Any) -> None:
    with pytest.raises(ContractError, match="so it must be a string or an integer, got "):
        compile_contract({"orders.{n}.status": {"eq": "x"}}).bind({"n": value})
    with pytest.raises(ValueError, match="so it must be a string or an integer, got "):
        fill("orders.{n}.status", {"n": value})


def test_evaluation_never_mutates_the_state() -> None:
    import copy

    state = copy.deepcopy(STATE)
    before = copy.deepcopy(state)
    for source, _ in CASES:
        with contextlib.suppress(ExpressionEvaluationError):
            compile_expression(source).evaluate(state)
    assert state == before
