"""The declarative form's quantifiers against the expression form, and both against Node.js.

Hypothesis draws a contract whose conditions are ``all``, ``any`` and ``contains_all``
(nested conditions of every operator but ``contains`` and ``matches``, up to three levels of
arrays) together with the expression that says the same (``strategies.quantified_contracts``
spells out where the two forms differ on purpose), and a state of arrays of small records.
The contract's verdict must be the expression's, and the expression must never fail to
evaluate. The expression evaluator is itself tested against Node.js
(``test_differential.py``); a sample of these expressions goes to ``node`` as well, so the
filter form is held to JavaScript's ``every``, ``some`` and ``includes`` directly too.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.expr import compile_contract, compile_expression
from js_oracle import JsOracle
from strategies import quantified_contracts, quantifier_scalars, quantifier_states

CASES = settings(max_examples=600, derandomize=True, database=None, deadline=None)


@CASES
@given(quantified_contracts(), quantifier_states)
def test_each_quantified_condition_gives_the_verdict_of_its_expression(
    case: tuple[dict[str, Any], list[str]], state: dict[str, Any]
) -> None:
    mapping, sources = case
    ours = compile_contract(mapping).check(state)
    assert len(ours.conditions) == len(sources)
    for condition, source in zip(ours.conditions, sources, strict=True):
        expected = compile_expression(source).check(state)
        assert expected.error is None and expected.result is not None, source
        assert condition.result is expected.result, (
            f"{condition.key} {condition.op} {json.dumps(condition.threshold)} is "
            f"{condition.result}, expression {source} is {expected.result}, "
            f"on {json.dumps(state)}"
        )
    assert ours.result is all(condition.result for condition in ours.conditions)


@CASES
@given(st.lists(quantifier_scalars, max_size=6), st.lists(quantifier_scalars, max_size=4))
def test_contains_all_of_scalars_is_every_value_included(
    array: list[Any], values: list[Any]
) -> None:
    # The general case above rarely puts two confusable values (true and 1) in one array.
    ours = compile_contract({"a": {"contains_all": values}}).check({"a": array})
    listed = json.dumps(values)
    expected = compile_expression(f"{listed}.every(v => a.includes(v))").check({"a": array})
    assert ours.result is expected.result, (array, values)


@settings(max_examples=60, derandomize=True, database=None, deadline=None)
@given(st.lists(st.tuples(quantified_contracts(), quantifier_states), min_size=10, max_size=10))
def test_node_agrees_with_the_contract(
    js_oracle: JsOracle, cases: list[tuple[tuple[dict[str, Any], list[str]], dict[str, Any]]]
) -> None:
    sources = [" && ".join(f"({source})" for source in tests) for (_, tests), _ in cases]
    states = [state for _, state in cases]
    results = js_oracle.evaluate(list(zip(sources, states, strict=True)))
    for ((mapping, _), state), source, node in zip(cases, sources, results, strict=True):
        ours = compile_contract(mapping).check(state)
        assert node == ("boolean", ours.result), (
            f"contract {json.dumps(mapping)} is {ours.result}, node says {node} for "
            f"{source} on {json.dumps(state)}"
        )
