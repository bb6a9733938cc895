"""Canonical JSON writes exactly what ``rfc8785.dumps`` writes, or refuses alike.

Plain JSON goes through the C module ``_canonical`` in one pass, everything else to
``rfc8785``; these properties aim at the edges of that split and of the C writer: floats in
every form ECMAScript writes them (and float-like text inside strings), integers at
±(2**53 - 1), keys whose UTF-16 order differs from their code-point order, escapes, lone
surrogates, and values the C module must hand on (subclasses, tuples, non-string keys).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import math
import struct
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from assay.ledger import _canonical
from assay.ledger.canonical import canonical_copy, canonical_json, loads

# Text that leans on the edges: controls, escapes, U+2028, the end of the BMP, non-BMP
# characters (whose UTF-16 order differs from code-point order) and lone surrogates.
_EDGES = '\x00\x01\x1f\x7f"\\/\b\f\n\r\t\u2028\u2029\ue000\uffef\uffff\U00010000\U0001f600é\xff'
# Text that looks like numbers: ":1.5", ",2e+3", "[4.0".
_NUMBERISH = st.from_regex(
    r"[:,\[\]{}\"\\ ]?-?[0-9]{1,3}([.][0-9]{1,2})?(e[+-]?[0-9])?", fullmatch=True
)
texts = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.sampled_from(_EDGES) | st.characters(), max_size=8),
    st.text(alphabet=st.sampled_from("ab\ud800\udfff\U00010000\ue000"), max_size=3),
    _NUMBERISH,
)
integers = st.one_of(
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([2**53 - 1, 2**53, -(2**53) + 1, -(2**53), 0, 2**63, -(2**63)]),
)
# Every double, by its bits as well as by value, so that subnormals and the largest
# magnitudes come up as often as everyday numbers.
_ANY_DOUBLE = st.integers(min_value=0, max_value=2**64 - 1).map(
    lambda bits: struct.unpack("<d", struct.pack("<Q", bits))[0]
)
floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    _ANY_DOUBLE,
    st.sampled_from([1.0, -0.0, 1e21, 1e-7, 1e-6, 1e20, 1e16, 0.1, 5e-324, 2.0**53, 2.0**53 - 1]),
)
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


@settings(max_examples=1500)
@given(json_like)
def test_canonical_json_writes_what_rfc8785_writes(value: Any) -> None:
    assert _outcome(canonical_json, value) == _outcome(rfc8785.dumps, value)


@settings(max_examples=1500)
@given(json_like)
def test_the_copy_is_what_the_canonical_text_reads_back_as(value: Any) -> None:
    try:
        text, copy = canonical_copy(value)
    except (ValueError, TypeError):
        assert _outcome(rfc8785.dumps, value) in (ValueError, TypeError)
        return
    assert text == rfc8785.dumps(value)
    assert rfc8785.dumps(copy) == text
    assert repr(copy) == repr(loads(text))


@settings(max_examples=3000)
@given(floats)
def test_every_finite_double_is_written_as_rfc8785_writes_it(number: float) -> None:
    if not math.isfinite(number):
        assert _canonical.canonical(number) is None
        return
    text = _canonical.canonical(number)
    assert text == rfc8785.dumps(number)
    assert text is not None and float(text) == number  # and it reads back as the same double


@given(
    st.recursive(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(2**53) + 1, 2**53 - 1),
            st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8),
            st.floats(allow_nan=False, allow_infinity=False),
        ),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=6),
                children,
                max_size=4,
            )
        ),
        max_leaves=20,
    )
)
def test_plain_json_never_leaves_the_c_module(value: Any) -> None:
    found = _canonical.canonical_copy(value)
    assert found is not None
    text, copy = found
    assert text == rfc8785.dumps(value)
    assert _canonical.canonical(value) == text
    assert repr(copy) == repr(loads(text))


def test_the_copy_shares_no_container_with_the_value() -> None:
    value = {"a": [1, {"b": []}], "c": {}}
    _, copy = canonical_copy(value)
    value["a"][1]["b"].append(2)  # type: ignore[index,union-attr]
    value["c"]["d"] = 1  # type: ignore[index]
    assert copy == {"a": [1, {"b": []}], "c": {}}


def test_object_members_are_sorted_by_utf16_code_units() -> None:
    # U+10000 is D800 DC00 in UTF-16, so it sorts before U+E000, though its code point is
    # greater; Latin-1 and ASCII keys sort by code point.
    value = {"\ue000": 1, "\U00010000": 2, "é": 3, "z": 4, "": 5, "zz": 6}
    text = canonical_json(value)
    assert text == '{"":5,"z":4,"zz":6,"é":3,"\U00010000":2,"\ue000":1}'.encode()


def test_a_value_nested_past_the_recursion_limit_is_refused_as_such() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        canonical_json(deep)


class _Colour(enum.StrEnum):
    RED = "red"


class _Size(enum.IntEnum):
    BIG = 7


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
        {"b": 1, "a": [True, None, "x"]},
        {"\U0001f600": 1, "\uffff": 2, "\ue000": 3},
        {"k": _Colour.RED, "n": _Size.BIG},
        {"deep": [[[[{"x": 2**53 - 1}]]]]},
        {"f": 1.0, "g": 1e21, "h": -0.0},
        ["\\", 1.0],
        {"a\\": 2.0, 'b\\"': [3.0], "c": '\\"1.5\\'},
        ['"', "\\\\", 1e21],
        {"a": [2, 1e16]},
        {"x": "1.5", "y": -1e16},
        [1.5e-7, 5e-324, 1e-6, 1e-7, 123e18, 1.7976931348623157e308],
        {"note": "version 1.5, 2e+3 and :1.0", "n": 2.0},
        {"a": float("nan")},
        {"a": float("inf")},
        {"a": (1, 2)},
        {"a": _Plain.A},
        {_Key("b"): 1, "a": 2},
        {"a": _Record(1)},
        {"a": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)},
        {1: "int key"},
        ("a", "tuple"),
        "\ud800",
        {"\udfff": 1},
        2**53,
        -(2**53),
        "\u2028 and \x1f and \x7f",
    ],
)
def test_chosen_edges_agree(value: Any) -> None:
    assert _outcome(canonical_json, value) == _outcome(rfc8785.dumps, value)
