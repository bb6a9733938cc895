"""Properties of the compiler on arbitrary input: it answers, or rejects with its own errors."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from assay import ExpressionError, ExpressionSyntaxError, compile_expression

TOKENS = st.sampled_from(
    "a b items x 0 1 -1 .5 1e3 0x1F 'a' \"b\" true false null undefined NaN ( ) [ ] { } . ?. "
    "? : , => ! - + * / % < <= > >= == != === !== && || ?? in typeof = ++ ; ` \\ # @ "
    "includes( map( filter( some( length Math.max( Object.keys( x=> (x,i)=>".split(" ")
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats() | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "b", "items", "x", "0"]), children, max_size=4)
    ),
    max_leaves=12,
)
STATES = st.dictionaries(st.sampled_from(["a", "b", "items", "x"]), JSON, max_size=4)


@settings(max_examples=1500, deadline=None)
@given(st.text(max_size=60))
def test_any_text_compiles_or_raises_a_syntax_error(source: str) -> None:
    try:
        compile_expression(source)
    except ExpressionSyntaxError as error:
        assert 0 <= error.position <= len(source)
        assert error.caret.endswith("^")


@settings(max_examples=1500, deadline=None)
@given(st.lists(TOKENS, min_size=1, max_size=12).map(" ".join), STATES)
def test_token_soup_never_escapes_the_error_tree(source: str, state: dict[str, Any]) -> None:
    try:
        expression = compile_expression(source)
    except ExpressionSyntaxError as error:
        assert 0 <= error.position <= len(source)
        return
    before = copy.deepcopy(state)
    with contextlib.suppress(ExpressionError):
        expression.evaluate(state)
    check = expression.check(state)
    assert check.result in (True, False, None)
    assert (check.result is None) == (check.error is not None)
    assert state == before
