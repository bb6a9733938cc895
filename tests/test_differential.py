"""assay's expression language against Node.js, the oracle of SPEC §3.

Hypothesis draws a state and a batch of expressions over the whole language; every case is
evaluated by assay and by ``node`` (one persistent process, one round trip per batch), and the
two must agree on the value (compared in the canonical form of ``js_oracle``) and on whether
evaluation throws. assay may not reject a generated expression at compile time nor hit a
limit: the generator stays inside the language and far inside the default limits.

By default the run is derandomized (reproducible in CI) with 2,000 examples of 10 cases.
For a bigger random campaign::

    ASSAY_DIFF_RANDOM=1 ASSAY_DIFF_EXAMPLES=20000 .venv/bin/pytest tests/test_differential.py
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assay
from assay.state.store import StateStore
from js_oracle import (
    JsError,
    JsOracle,
    JsResult,
    JsSyntaxError,
    canonical,
    js_property_order,
    render,
)
from strategies import expressions, json_states, json_values

CASES_PER_EXAMPLE = 10
EXAMPLES = int(os.environ.get("ASSAY_DIFF_EXAMPLES", "2000"))
RANDOM = os.environ.get("ASSAY_DIFF_RANDOM") == "1"
MIN_CASES = 20_000

DIFFERENTIAL = settings(
    max_examples=EXAMPLES,
    derandomize=not RANDOM,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass(frozen=True, slots=True)
class Rejected:
    """assay failed in a way that is wrong for any generated case: a compile-time rejection,
    a limit, or a Python exception that is not an ``ExpressionEvaluationError``."""

    reason: str


def evaluate_with_assay(source: str, state: dict[str, Any]) -> JsResult | Rejected:
    try:
        expression = assay.compile_expression(source)
    except assay.ExpressionSyntaxError as error:
        return Rejected(f"rejected at compile time: {error.reason} at {error.position}")
    try:
        value = expression.evaluate(state)
    except assay.ExpressionLimitError as error:
        return Rejected(f"hit a limit ({error.limit} > {error.bound}): {error}")
    except assay.ExpressionEvaluationError as error:
        return JsError(type(error).__name__, str(error))
    except Exception as error:  # a crash is a finding too, reported with the case
        return Rejected(f"crashed with {type(error).__name__}: {error}")
    return canonical(value, undefined=assay.UNDEFINED)


def agree(node: JsResult, ours: JsResult | Rejected) -> bool:
    if isinstance(ours, Rejected):
        return False
    if isinstance(node, JsError) or isinstance(ours, JsError):
        return isinstance(node, JsError) and isinstance(ours, JsError)
    return node == ours


def describe(source: str, state: dict[str, Any], node: JsResult, ours: JsResult | Rejected) -> str:
    assay_text = ours.reason if isinstance(ours, Rejected) else render(ours)
    shown = source if source.isprintable() else f"{source!r} (as a Python literal)"
    return (
        f"  expression: {shown}\n"
        f"  state:      {json.dumps(state)}\n"
        f"  node:       {render(node)}\n"
        f"  assay:      {assay_text}"
    )


@st.composite
def batches(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    state = draw(json_states())
    sources = expressions(tuple(state))
    batch = draw(st.lists(sources, min_size=CASES_PER_EXAMPLE, max_size=CASES_PER_EXAMPLE))
    return state, batch


def test_assay_agrees_with_node_on_generated_expressions(js_oracle: JsOracle) -> None:
    cases_run = 0

    @DIFFERENTIAL
    @given(batches())
    def check(batch: tuple[dict[str, Any], list[str]]) -> None:
        nonlocal cases_run
        state, sources = batch
        # assay sees exactly what a JSON substrate would give it, as node does.
        wire_state = json.loads(json.dumps(state))
        node_results = js_oracle.evaluate([(source, state) for source in sources])
        invalid = [
            f"  {source}: {render(result)}"
            for source, result in zip(sources, node_results, strict=True)
            if isinstance(result, JsSyntaxError) or result == ("function",)
        ]
        if invalid:
            raise AssertionError("the generator left the language:\n" + "\n".join(invalid))
        disagreements: dict[str, str] = {}
        for source, node in zip(sources, node_results, strict=True):
            ours = evaluate_with_assay(source, wire_state)
            if not agree(node, ours):
                disagreements[source] = describe(source, state, node, ours)
        cases_run += len(sources)
        if disagreements:
            raise AssertionError(
                f"assay disagrees with node on {len(disagreements)} distinct expressions:\n"
                + "\n\n".join(disagreements.values())
            )

    check()
    expected = min(MIN_CASES, EXAMPLES * CASES_PER_EXAMPLE)
    assert cases_run >= expected, f"only {cases_run} cases ran, expected at least {expected}"


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(json_values)
def test_js_oracle_round_trips_json_values(js_oracle: JsOracle, value: Any) -> None:
    assert js_oracle.evaluate_one("data", {"data": value}) == canonical(js_property_order(value))


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "[0 / 0, 1 / 0, -1 / 0, -0, 0, undefined, null]",
            "[NaN, Infinity, -Infinity, -0, 0, undefined, null]",
        ),
        ('"\\uD83D" + "\\uDE00"', '"\U0001f600"'),
        ('"\U0001f600".slice(0, 1)', '"\\uD83D"'),
        ('"a\\u{1F600}b".length', "4"),
        ("missing === undefined && typeof nope", '"undefined"'),
        (
            "[Math.max(), Number.isInteger(5), isNaN(NaN), Infinity]",
            "[-Infinity, true, true, Infinity]",
        ),
        ('"\U0001f600".at(0)', '"\\uD83D"'),
        ("(5).includes", "undefined"),
        ('(5).includes("5")', "throws TypeError: 5.includes is not a function"),
        (
            "items.map(x => x.done)",
            "throws TypeError: Cannot read properties of undefined (reading 'map')",
        ),
        ("(x => x)", "<function>"),
        ("1 +", "does not compile in node: Unexpected token ')'"),
    ],
)
def test_js_oracle_resolves_and_encodes_as_spec(
    js_oracle: JsOracle, source: str, expected: str
) -> None:
    assert render(js_oracle.evaluate_one(source, {"count": 1})) == expected


# JSON.parse reads an integer beyond 2**53 as the double it rounds to; the state stores it so.
BIG_INTEGERS = (
    '{"a": 1180591620717411303425, "b": -18446744073709551617, "c": 9007199254740993, '
    '"d": 9007199254740992}'
)


@pytest.mark.parametrize(
    "source",
    [
        "a == 1180591620717411303425",
        "a === 1180591620717411303424",
        "a > 1180591620717411303424",
        "b === -18446744073709551616",
        "c === d",
        "c - d",
        "String(a) + String(b)",
        "[a + 1, b * 2, c, d]",
        "typeof a",
    ],
)
def test_integers_beyond_2_53_in_the_state_evaluate_as_in_node(
    js_oracle: JsOracle, source: str
) -> None:
    stored = StateStore(json.loads(BIG_INTEGERS)).current.objects
    node = js_oracle.evaluate_one(source, json.loads(BIG_INTEGERS))
    ours = evaluate_with_assay(source, dict(stored))
    assert agree(node, ours), describe(source, json.loads(BIG_INTEGERS), node, ours)
