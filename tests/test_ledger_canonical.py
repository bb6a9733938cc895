"""The ledger's orjson path for canonical JSON agrees with ``rfc8785`` byte for byte.

``canonical_copy`` hands JSON to orjson when it can prove orjson writes what RFC 8785 does,
and to ``rfc8785`` otherwise; these properties aim at the edges of that proof: floats (and
float-like text inside strings, which must not fool the search for float tokens), integers
at ±(2**53 - 1), keys whose UTF-16 order differs from their code-point order, escapes, and
values orjson would write but RFC 8785 refuses or writes otherwise.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.ledger.canonical import canonical_copy, canonical_json, loads

# Text that looks like numbers where a float search might look: ":1.5", ",2e+3", "[4.0".
_NUMBERISH = st.from_regex(
    r"[:,\[\]{}\"\\ ]?-?[0-9]{1,3}([.][0-9]{1,2})?(e[+-]?[0-9])?", fullmatch=True
)
_EDGE_TEXT = st.text(
    alphabet=st.sampled_from('\x00\x1f\x7f"\\/\b\n\u2028\ue000\uffff\U00010000\U0001f600é.e+-:,[')
    | st.characters(),
    max_size=8,
)
texts = st.one_of(st.text(max_size=12), _EDGE_TEXT, _NUMBERISH)
integers = st.one_of(
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.sampled_from([2**53 - 1, 2**53, -(2**53) + 1, -(2**53), 2**63, -(2**64)]),
)
floats = st.floats() | st.sampled_from([1.0, -0.0, 1e21, 1e16, 1e-7, 0.1, 5e-324])
scalars = st.one_of(st.none(), st.booleans(), integers, texts, floats)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.dictionaries(texts, children, max_size=5),
    ),
    max_leaves=25,
)
float_free = st.recursive(
    st.one_of(st.none(), st.booleans(), integers, texts),
    lambda children: st.one_of(
        st.lists(children, max_size=5), st.dictionaries(texts, children, max_size=5)
    ),
    max_leaves=25,
)


def _outcome(encode: Any, value: Any) -> bytes | type[BaseException]:
    try:
        result: bytes = encode(value)
    except (ValueError, TypeError) as exc:
        return ValueError if isinstance(exc, ValueError) else TypeError
    return result


@settings(max_examples=800)
@given(json_values)
def test_canonical_json_is_rfc8785_on_any_json(value: Any) -> None:
    assert _outcome(canonical_json, value) == _outcome(rfc8785.dumps, value)


@settings(max_examples=800)
@given(float_free)
def test_the_copy_of_float_free_json_is_equal_and_plain(value: Any) -> None:
    try:
        text, copy = canonical_copy(value)
    except (ValueError, TypeError):
        assert _outcome(rfc8785.dumps, value) in (ValueError, TypeError)
        return
    assert text == rfc8785.dumps(value)
    assert repr(copy) == repr(loads(text))


class _Plain(enum.Enum):
    A = "a"


class _Key(str):
    pass


@dataclasses.dataclass
class _Record:
    x: int


@pytest.mark.parametrize(
    "value",
    [
        {"a": "x:1.5", "b": ["[2.0", ",3e+4"]},  # float-like text in strings
        {"a": "x:1.5\\n", "b": 1.5},  # with an escape, and a real float
        {"a": [1.5]},
        {"a": {"b": -2e-7}},
        {"a": float("nan")},
        {"a": float("inf")},
        {"a": 2**53},
        {"\U00010000": 1, "\ue000": 2},  # UTF-16 order differs from code-point order
        {"a": (1, 2)},
        {"a": _Plain.A},
        {_Key("b"): 1, "a": 2},
        {"a": _Record(1)},
        {"a": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)},
        {"a": "\ud800"},
        [1, "two", None, True],
        "\u2028 and \x1f",
    ],
)
def test_values_at_the_edge_of_the_fast_path_agree(value: Any) -> None:
    assert _outcome(canonical_json, value) == _outcome(rfc8785.dumps, value)
