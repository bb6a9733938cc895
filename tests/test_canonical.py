"""The fast canonical JSON path writes exactly what ``rfc8785.dumps`` writes, or refuses alike."""

from __future__ import annotations

import enum
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from assay.ledger.canonical import canonical_copy, canonical_json, loads

# Text that leans on the edges: controls, escapes, U+2028, the end of the BMP, non-BMP
# characters (whose UTF-16 order differs from code-point order) and lone surrogates.
_EDGES = '\x00\x01\x1f\x7f"\\/\b\f\n\r\t\u2028\u2029\ue000\uffef\uffff\U00010000\U0001f600é'
texts = st.one_of(
    st.text(),
    st.text(alphabet=st.sampled_from(_EDGES) | st.characters(), max_size=6),
    st.text(alphabet=st.sampled_from("ab\ud800\udfff"), max_size=3),
)
integers = st.one_of(
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([2**53 - 1, 2**53, -(2**53) + 1, -(2**53), 0]),
)
floats = st.floats(allow_nan=True, allow_infinity=True) | st.sampled_from([1.0, -0.0, 1e21])
scalars = st.one_of(st.none(), st.booleans(), integers, texts, floats)
json_like = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(texts, children, max_size=5),
        st.tuples(children, children),
        st.dictionaries(st.one_of(integers, st.booleans(), st.none()), children, max_size=2),
    ),
    max_leaves=30,
)


def _outcome(encode: Any, value: Any) -> bytes | type[BaseException]:
    try:
        result: bytes = encode(value)
    except (ValueError, TypeError) as exc:
        return ValueError if isinstance(exc, ValueError) else TypeError
    return result


@given(json_like)
def test_canonical_json_writes_what_rfc8785_writes(value: Any) -> None:
    assert _outcome(canonical_json, value) == _outcome(rfc8785.dumps, value)


@given(json_like)
def test_the_copy_is_what_the_canonical_text_reads_back_as(value: Any) -> None:
    try:
        text, copy = canonical_copy(value)
    except (ValueError, TypeError):
        return
    assert text == rfc8785.dumps(value)
    assert rfc8785.dumps(copy) == text
    assert repr(copy) == repr(loads(text))


class _Colour(enum.StrEnum):
    RED = "red"


class _Size(enum.IntEnum):
    BIG = 7


@pytest.mark.parametrize(
    "value",
    [
        {"b": 1, "a": [True, None, "x"]},
        {"\U0001f600": 1, "\uffff": 2, "\ue000": 3},
        {"k": _Colour.RED, "n": _Size.BIG},
        {"deep": [[[[{"x": 2**53 - 1}]]]]},
        {"f": 1.0, "g": 1e21, "h": -0.0},
        # Floats after strings that end in escapes: the float check must pair the quotes.
        ["\\", 1.0],
        {"a\\": 2.0, 'b\\"': [3.0], "c": '\\"1.5\\'},
        ['"', "\\\\", 1e21],
        # A float in every place JSON puts a number (after ":", "," and "["), negative, and in
        # each form orjson writes. orjson and RFC 8785 write 2.0, -3.0 and 1e16 differently,
        # so a float the check missed would show; 1.5e-7 and 5e-324 check the other forms.
        {"a": 2.0},
        [2.0],
        [1, -3.0],
        {"a": [2, 1e16]},
        {"x": "1.5", "y": -1e16},
        [1.5e-7, 5e-324],
        # Text that looks like a float but sits inside strings, beside a real one.
        {"note": "version 1.5, 2e+3 and :1.0", "n": 2.0},
        {"note": ",[:1e-5", "f": 1e16},
        {1: "int key"},
        ("a", "tuple"),
        "\ud800",
        2**53,
    ],
)
def test_chosen_edges_agree(value: Any) -> None:
    assert _outcome(canonical_json, value) == _outcome(rfc8785.dumps, value)
