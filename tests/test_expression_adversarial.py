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
from assay import UNDEFINED, ExpressionError, compile_expression

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


ALLOWED_NAME = __import__("re").compile(r"\A(state|_[a-zA-Z_]+\d*|type|len|enumerate|append)\Z")
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
    for function in (expression.evaluate, expression.test):
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
