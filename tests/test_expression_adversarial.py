"""Hostile input is rejected with a typed error, mutates nothing and crashes nothing.

The time each case takes is reported by ``bench/adversarial.py`` (no timing thresholds in
unit tests); here every case must end in its typed error or a plain JSON value.
"""

from __future__ import annotations

import copy
import json
import types
from typing import Any

import pytest

from adversarial import CASES, Case
from assay import (
    UNDEFINED,
    ExpressionError,
    ExpressionLimitError,
    ExpressionLimits,
    compile_expression,
)

JSON_TYPES = (dict, list, str, int, float, bool, type(None))


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_hostile_expression_is_contained(case: Case) -> None:
    _, source, state, limits, expected = case
    before = copy.deepcopy(state)
    expression_or_error: Any
    try:
        expression_or_error = compile_expression(source, limits=limits).evaluate(state)
    except ExpressionError as error:
        expression_or_error = error
    if isinstance(expression_or_error, ExpressionError):
        assert expected is not None, f"valid expression raised {expression_or_error!r}"
        assert isinstance(expression_or_error, expected), expression_or_error
    else:
        value = expression_or_error
        assert expected in (None, Exception), f"expected {expected}, but it evaluated"
        assert value is UNDEFINED or isinstance(value, JSON_TYPES)
        json.dumps(value if value is not UNDEFINED else None)
    assert state == before


ALLOWED_NAME = __import__("re").compile(
    r"\A(state|_[a-zA-Z_]+\d*|type|len|enumerate|append|steps)\Z"
)
HOSTILE = [
    "a.__class__.__bases__",
    "a['__globals__']['os']",
    "__builtins__",
    "__import__",
    "state.constructor",
    "a[\"'); import os; os.system('x') #\"]",
    "items.map(__class__ => __class__.__dict__)",
    "items.filter(exec => exec.eval)",
    "'\\u0000' + a['\\n\\\\']",
    "items.some(__dict__ => __dict__ == [__dict__] + __import__)",
]


def code_objects(code: types.CodeType) -> list[types.CodeType]:
    found = [code]
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            found.extend(code_objects(constant))
    return found


@pytest.mark.parametrize("source", HOSTILE)
def test_expression_text_reaches_code_only_as_constants(source: str) -> None:
    expression = compile_expression(source)
    functions = [expression.evaluate, expression.test]
    metered = expression.evaluate.__globals__.get("_metered_evaluate")
    if metered is not None:  # what an evaluation that converts an array runs instead
        functions.extend(metered.__self__.compiled())
    for function in functions:
        assert isinstance(function, types.FunctionType)
        for code in code_objects(function.__code__):
            for name in (*code.co_names, *code.co_varnames, *code.co_freevars, *code.co_cellvars):
                assert ALLOWED_NAME.match(name), f"{name!r} from {source!r} reached the code"
        assert function.__globals__["__builtins__"] == {
            "type": type,
            "len": len,
            "enumerate": enumerate,
        }


def test_identifiers_become_dictionary_keys_not_names() -> None:
    expression = compile_expression("__class__.__dict__")
    code = expression.evaluate.__code__
    assert "__class__" not in code.co_names
    assert "__class__" in code.co_consts or any(
        isinstance(c, tuple) and "__class__" in c for c in code.co_consts
    )
    assert expression.evaluate({"__class__": {"__dict__": 7}}) == 7


def _state_with_python_object() -> dict[str, Any]:
    return {"a": object()}


def test_non_json_values_in_the_state_are_never_looked_into() -> None:
    with pytest.raises(ExpressionError, match="not a JSON value"):
        compile_expression("a.x").evaluate(_state_with_python_object())
    with pytest.raises(ExpressionError, match="not a JSON value"):
        compile_expression("a + 1").evaluate(_state_with_python_object())


SECRET = "hunterSECRET"
SECRET_NUMBER = 73_914_662
SECRET_STATE: dict[str, Any] = {
    "secret": {"token": SECRET, "pin": SECRET_NUMBER, "flag": True, "list": [SECRET]},
    "pub": {"k": 5, "s": "public", "o": {}, "a": [1, 2]},
}
LEAKING = [
    "'a' in secret.token",
    "'a' in secret.pin",
    "'a' in secret.flag",
    "secret.token in pub.k",
    "secret.pin in pub.s",
    "secret.list in pub.s",
    "secret.token in secret.token",
    "secret.token.some(x => x)",
    "secret.pin.map(x => x)",
    "secret.token.join()",
    "secret.pin.includes(1)",
    "secret.flag.at(0)",
    "secret.list[0].filter(x => x)",
    "pub.missing[secret.token]",
    "pub.missing[secret.pin].x",
    "pub?.missing[secret.token]",
    "pub.o[secret.token].x",
    "pub.o[secret.token][secret.pin]",
    "pub.a[secret.pin].x",
    "(secret.token + 'x').q.r",
    "(secret.pin + 1).q.r",
    "secret.list.map(x => x.y.z)",
    "secret.list.filter(x => x in pub.k)",
    "secret.list.some(x => pub.k in x)",
    "Object.keys(secret.token).map(k => pub.none[k])",
    "Object.entries(secret).find(e => e[1].q.r)",
    "String(secret.token).q.r",
    "[secret.token][0].x.y",
    "(secret.token ?? 1).x.y",
    "(pub.k ? secret.token : 1).x.y",
]


@pytest.mark.parametrize("source", LEAKING)
def test_evaluation_errors_never_show_a_state_value(source: str) -> None:
    check = compile_expression(source).check(SECRET_STATE)
    assert check.error is not None, f"{source} did not fail"
    for secret in (SECRET, str(SECRET_NUMBER), "hunter"):
        assert secret not in check.error, f"{source} leaked a value: {check.error}"


CUBE = {"a": list(range(300))}
SHARED = "a.map(x => a.map(y => a))"  # 300 x 300 references to one array: 27M numbers


@pytest.mark.parametrize(
    "source",
    [
        f"String({SHARED}) == ''",
        f"{SHARED}.join() == ''",
        f"{SHARED}.join('') == ''",
        f"{SHARED} == ''",
        f"{SHARED} < ''",
        f"{SHARED} + ''",
        f"{SHARED} - 1",
        f"-{SHARED}",
        f"Number({SHARED})",
        f"Math.max({SHARED})",
        f"isNaN({SHARED})",
        f"'x'.includes({SHARED})",
        f"'x'.slice({SHARED})",
        f"a[{SHARED}]",
        f"{SHARED} in a",
        f"[{SHARED}].join()",
    ],
)
def test_converting_a_shared_array_to_a_string_stops_at_the_string_limit(source: str) -> None:
    with pytest.raises(ExpressionLimitError) as caught:
        compile_expression(source).evaluate(CUBE)
    assert caught.value.limit == "max_string_length"
    assert "converting an array to a string would produce more than 1000000 characters" in str(
        caught.value
    )


@pytest.mark.parametrize(
    "source",
    [
        "String(a)",
        "a == 'x'",
        "a < 'x'",
        "a + ''",
        "a * 1",
        "+a",
        "Number(a)",
        "'x'.startsWith(a)",
        "o[a]",
        "a in o",
        "a.join()",
        "[a, a].join('')",
    ],
)
def test_every_conversion_obeys_a_configured_string_limit(source: str) -> None:
    state = {"a": list(range(100)), "o": {}}  # 289 characters as a string
    limits = ExpressionLimits(max_string_length=200)
    with pytest.raises(ExpressionLimitError) as caught:
        compile_expression(source, limits=limits).evaluate(state)
    assert (caught.value.limit, caught.value.bound) == ("max_string_length", 200)
    compile_expression(source).evaluate(state)  # within the default limit


def test_converting_arrays_counts_the_elements_visited() -> None:
    # 600 arrays holding one empty array each: no characters, 1,200 elements to visit.
    state = {"a": [[[]] for _ in range(600)]}
    source = "a.join('') == ''"
    with pytest.raises(ExpressionLimitError, match="or visit more than as many elements"):
        compile_expression(source, limits=ExpressionLimits(max_string_length=1_000)).evaluate(state)
    assert compile_expression(source).evaluate(state) is True


def test_a_shared_array_within_the_limit_converts_as_javascript_does() -> None:
    state = {"a": [1, [2, None]], "b": []}
    assert compile_expression("String([a, a, b, [b]]) + '|' + [a, a].join(';')").evaluate(
        state
    ) == ("1,2,,1,2,,," + "|" + "1,2,;1,2,")


@pytest.mark.parametrize(
    "source",
    [
        "Object.keys(o).map(k => Object.keys(o))",
        "Object.keys(o).map(k => Object.values(o))",
        "a.map(x => Object.entries(o))",
        "a.some(x => Object.entries(o).length < 0)",
    ],
)
def test_object_keys_values_and_entries_count_their_elements_in_callbacks(source: str) -> None:
    state = {"o": {f"k{i}": i for i in range(3_000)}, "a": list(range(60))}
    with pytest.raises(ExpressionLimitError) as caught:
        compile_expression(source).evaluate(state)
    assert caught.value.limit == "max_steps"


STEPS_EXCEEDED = (
    "evaluation exceeded 500000 steps (max_steps); array callbacks, the strings and arrays "
    "they scan, and every array converted to a string count toward it"
)
NULLS = [None] * 10_000  # an empty string each: 10,000 elements to visit, 9,999 commas


@pytest.mark.parametrize(
    "source",
    [
        "a.map(x => b == '')",
        "a.map(x => x == b)",
        "a.map(x => b != 0)",
        "a.map(x => String(b))",
        "a.map(x => b.join())",
        "a.map(x => b + '')",
        "a.map(x => b < '')",
        "a.map(x => b - 1)",
        "a.map(x => -b)",
        "a.map(x => Number(b))",
        "a.map(x => Math.max(b))",
        "a.map(x => isNaN(b))",
        "a.map(x => 'x'.includes(b))",
        "a.map(x => 'x'.slice(b))",
        "a.map(x => o[b])",
        "a.map(x => b in o)",
        "a.map(x => [b].join())",
        "a.some(x => String(b) == 'x')",
        pytest.param(" || ".join(["b == 'x'"] * 60), id="60 conversions outside callbacks"),
    ],
)
def test_arrays_converted_to_strings_spend_the_step_budget(source: str) -> None:
    # 60 conversions of 10,000 elements: within the string limit each time, 600,000 steps.
    state = {"a": list(range(60)), "b": NULLS, "o": {}}
    with pytest.raises(ExpressionLimitError) as caught:
        compile_expression(source).evaluate(state)
    assert (caught.value.limit, caught.value.bound) == ("max_steps", 500_000)
    assert str(caught.value) == STEPS_EXCEEDED


def test_conversions_and_callbacks_spend_one_budget() -> None:
    # The callback costs 3 steps per element (x >= 0), the conversion 8,000 elements plus
    # 7,999 commas by 16: each fits in 10,000 steps, the two together do not.
    state = {"a": list(range(1_000)), "b": [None] * 8_000}
    limits = ExpressionLimits(max_steps=10_000)
    callbacks = "a.filter(x => x >= 0).length"
    conversion = "String(b).length"
    assert compile_expression(callbacks, limits=limits).evaluate(state) == 1_000
    assert compile_expression(conversion, limits=limits).evaluate(state) == 7_999
    for source in (f"{callbacks} + {conversion}", f"{conversion} + {callbacks}"):
        with pytest.raises(ExpressionLimitError) as caught:
            compile_expression(source, limits=limits).evaluate(state)
        assert (caught.value.limit, caught.value.bound) == ("max_steps", 10_000)


def test_a_conversion_stops_before_it_walks_more_elements_than_steps_are_left() -> None:
    state = {"b": [None] * 2_000}
    with pytest.raises(ExpressionLimitError) as caught:
        compile_expression("String(b)", limits=ExpressionLimits(max_steps=1_000)).evaluate(state)
    assert str(caught.value) == (
        "evaluation exceeded 1000 steps (max_steps); array callbacks, the strings and arrays "
        "they scan, and every array converted to a string count toward it"
    )


@pytest.mark.parametrize(
    ("source", "value"),
    [
        ("a.filter(x => x > 1).length + [a, [b]] + ''", "21,2,3,"),
        ("a.map(x => [x, [x]]).join(';')", "1,1;2,2;3,3"),
        ("a.some(x => x == '2') && b == ''", True),
        ("a.find(x => [x] == '3')", 3),
        ("a.map(x => b + x).length > 2 ? String(a) : 'no'", "1,2,3"),
    ],
)
def test_an_evaluation_that_converts_arrays_has_the_value_javascript_gives(
    source: str, value: Any
) -> None:
    state = {"a": [1, 2, 3], "b": []}
    expression = compile_expression(source)
    assert expression.evaluate(state) == value
    assert expression.test(state) is bool(value)


def nested(depth: int) -> list[Any]:
    array: list[Any] = []
    for _ in range(depth):
        array = [array]
    return array


def test_an_array_or_object_is_looked_for_by_identity_never_by_its_contents() -> None:
    # Equal-looking but distinct: Python's == would recurse through all 5,000 levels.
    deep, twin = nested(5_000), nested(5_000)
    state = {"a": [twin, deep], "b": deep, "o": [{"k": twin}], "p": {"k": deep}}
    cases = {
        "a.indexOf(b)": 1,
        "a.indexOf(b, 1)": 1,
        "a.indexOf(a[0], 1)": -1,
        "a.includes(b)": True,
        "a.includes(b, -1)": True,
        "a.includes(a[0], 1)": False,
        "o.includes(p)": False,
        "o.indexOf(o[0])": 0,
    }
    for source, value in cases.items():
        assert compile_expression(source).evaluate(state) == value, source


@pytest.mark.parametrize(
    ("source", "length"),
    [
        ("s.toUpperCase()", 12),  # 'ß' is 'SS'
        ("t.toUpperCase()", 18),  # 'ΐ' is three characters
        ("u.toLowerCase()", 12),  # 'İ' is 'i' and a combining dot
    ],
)
def test_a_case_change_that_grows_a_string_obeys_the_string_limit(source: str, length: int) -> None:
    state = {"s": "ß" * 6, "t": "ΐ" * 6, "u": "İ" * 6}
    limits = ExpressionLimits(max_string_length=10)
    with pytest.raises(ExpressionLimitError) as caught:
        compile_expression(source, limits=limits).evaluate(state)
    assert (caught.value.limit, caught.value.bound) == ("max_string_length", 10)
    assert str(caught.value) == (
        f"a string of {length} characters exceeds the limit of 10 (max_string_length)"
    )
    assert len(compile_expression(source).evaluate(state)) == length
