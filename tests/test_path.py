"""Dotted state paths: parsing, formatting and reading."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import assay
from assay.errors import ContractError
from assay.json.path import (
    MISSING,
    PathRead,
    array_index,
    format_path,
    parse_path,
    read_path,
)
from strategies import json_states


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("inbox", ("inbox",)),
        ("inbox.sent_count", ("inbox", "sent_count")),
        ('orders["a.b"].status', ("orders", "a.b", "status")),
        ("orders['a.b'].status", ("orders", "a.b", "status")),
        ("items[0]", ("items", "0")),
        ("items[12].name", ("items", "12", "name")),
        ("items.0", ("items", "0")),
        ('["a.b"].c', ("a.b", "c")),
        ('a[""]', ("a", "")),
        ('a["x"]["y"]', ("a", "x", "y")),
        ("orders.{order_id}.status", ("orders", "{order_id}", "status")),
        ("open-billing.$ref", ("open-billing", "$ref")),
        ("first name.é", ("first name", "é")),
    ],
)
def test_parse_path(text: str, segments: tuple[str, ...]) -> None:
    assert parse_path(text) == segments


@pytest.mark.parametrize(
    ("text", "segment"),
    [
        (r'a["say \"hi\""]', 'say "hi"'),
        (r"a['it\'s']", "it's"),
        (r'a["back\\slash"]', "back\\slash"),
        (r'a["\n\t\r\b\f\v\0"]', "\n\t\r\b\f\v\0"),
        (r'a["\x41\u0042\u{1F600}"]', "AB\U0001f600"),
        (r'a["\uD83D\uDE00"]', "\U0001f600"),
        (r'a["\uD800"]', "\ud800"),
        (r'a["\q"]', "q"),
        (r'a["]["]', "]["),
    ],
)
def test_parse_path_bracket_escapes_follow_javascript(text: str, segment: str) -> None:
    assert parse_path(text) == ("a", segment)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "",
            "invalid path '': it is empty; write a dotted path such as inbox.sent_count",
        ),
        (
            "a..b",
            "invalid path 'a..b' at position 2: empty segment before '.'; "
            'remove the extra dot; write [""] for a key that is the empty string',
        ),
        (
            ".a",
            "invalid path '.a' at position 0: empty segment before '.'; "
            'remove the extra dot; write [""] for a key that is the empty string',
        ),
        (
            "inbox.",
            "invalid path 'inbox.' at position 6: the path ends with '.'; "
            "remove the trailing dot or name the key",
        ),
        (
            "a[0",
            "invalid path 'a[0' at position 1: '[' is never closed; "
            'close it: write a[0] or a["key"]',
        ),
        (
            "a]",
            "invalid path 'a]' at position 1: ']' without a matching '['; write a[0] or a[\"key\"]",
        ),
        (
            "a[b].c",
            "invalid path 'a[b].c' at position 2: a key in brackets must be quoted or an "
            'array index; write a["b"].c',
        ),
        (
            "a[01]",
            "invalid path 'a[01]' at position 2: '01' is not a canonical array index; "
            'write a[1], or a["01"] for a key',
        ),
        (
            'a["b',
            "invalid path 'a[\"b' at position 2: the string opened by \" is never closed; "
            'close it with "]',
        ),
        (
            'a["b"x]',
            "invalid path 'a[\"b\"x]' at position 5: expected ']' after the key in brackets; "
            'close the bracket: a["key"]',
        ),
        (
            'a["b"]c',
            "invalid path 'a[\"b\"]c' at position 6: 'c' after ']'; "
            "continue with '.' or '[', or end the path",
        ),
        (
            "a.[0]",
            "invalid path 'a.[0]' at position 1: '.' before '['; write a[0]",
        ),
        (
            r'a["\1"]',
            "invalid path 'a[\"\\\\1\"]' at position 3: octal escape '\\1'; "
            "write \\u00XX with the code in hex",
        ),
    ],
)
def test_parse_path_errors_name_position_and_remedy(text: str, message: str) -> None:
    with pytest.raises(ContractError) as caught:
        parse_path(text)
    assert str(caught.value) == message
    assert caught.value.key == text


@pytest.mark.parametrize(
    "text", ["a[]", "a[-1]", "a[1.5]", 'a["\\x4"]', 'a["\\u12"]', 'a["\\u{110000}"]', "a[x"]
)
def test_parse_path_rejects_malformed_brackets(text: str) -> None:
    with pytest.raises(ContractError, match="invalid path"):
        parse_path(text)


@pytest.mark.parametrize(
    ("segments", "text"),
    [
        (("inbox", "sent_count"), "inbox.sent_count"),
        (("orders", "a.b", "status"), 'orders["a.b"].status'),
        (("items", "0"), "items.0"),
        (("a.b", "c"), '["a.b"].c'),
        (("a", ""), 'a[""]'),
        (("a", 'say "hi"'), 'a["say \\"hi\\""]'),
        (("a", "line\nbreak"), 'a["line\\nbreak"]'),
        (("orders", "{order_id}"), "orders.{order_id}"),
        (("a", "first name"), 'a["first name"]'),
    ],
)
def test_format_path(segments: tuple[str, ...], text: str) -> None:
    assert format_path(segments) == text


@given(st.lists(st.text(), min_size=1, max_size=6).map(tuple))
def test_format_then_parse_round_trips(segments: tuple[str, ...]) -> None:
    assert parse_path(format_path(segments)) == segments


@given(
    st.lists(
        st.text(alphabet=st.sampled_from("ab.[]\"'\\0 {}"), max_size=4), min_size=1, max_size=4
    ).map(tuple)
)
def test_format_then_parse_round_trips_on_syntax_characters(segments: tuple[str, ...]) -> None:
    assert parse_path(format_path(segments)) == segments


@given(st.text(max_size=30))
def test_parse_path_either_parses_or_raises_contract_error(text: str) -> None:
    try:
        segments = parse_path(text)
    except ContractError:
        return
    assert segments
    assert parse_path(format_path(segments)) == segments


STATE = {
    "inbox": {"sent_count": 14, "last": None, "a.b": {"c": 1}},
    "items": [{"name": "x"}, {"name": "y"}],
    "flag": False,
}


@pytest.mark.parametrize(
    ("segments", "value"),
    [
        (("inbox", "sent_count"), 14),
        (("inbox", "last"), None),
        (("inbox", "a.b", "c"), 1),
        (("items", "1", "name"), "y"),
        (("flag",), False),
        ((), STATE),
    ],
)
def test_read_path_finds_values(segments: tuple[str, ...], value: object) -> None:
    read = read_path(STATE, segments)
    assert read == PathRead(segments, value, len(segments))
    assert read.found
    assert read.value is value or read.value == value


@pytest.mark.parametrize(
    ("segments", "resolved", "explanation"),
    [
        (("inbox", "missing"), 1, "inbox.missing is missing (inbox has no key 'missing')"),
        (("outbox", "count"), 0, "outbox.count is missing (the state has no key 'outbox')"),
        (
            ("inbox", "sent_count", "x"),
            2,
            "inbox.sent_count.x is missing (inbox.sent_count is a number, not an object or array)",
        ),
        (
            ("inbox", "last", "x"),
            2,
            "inbox.last.x is missing (inbox.last is null, not an object or array)",
        ),
        (("items", "2", "name"), 1, "items.2.name is missing (items has 2 elements)"),
        (
            ("items", "01"),
            1,
            "items.01 is missing (items is an array, and '01' is not an index)",
        ),
        (
            ("items", "name"),
            1,
            "items.name is missing (items is an array, and 'name' is not an index)",
        ),
        (
            ("inbox", "a.b", "d"),
            2,
            """inbox["a.b"].d is missing (inbox["a.b"] has no key 'd')""",
        ),
    ],
)
def test_read_path_says_where_it_stopped(
    segments: tuple[str, ...], resolved: int, explanation: str
) -> None:
    read = read_path(STATE, segments)
    assert read.value is MISSING
    assert not read.found
    assert read.resolved == resolved
    assert read.explain() == explanation


def test_missing_is_distinct_from_null() -> None:
    assert read_path({"a": None}, ("a",)).value is None
    assert read_path({}, ("a",)).value is MISSING
    assert repr(MISSING) == "MISSING"


def test_read_path_does_not_index_into_strings() -> None:
    read = read_path({"name": "abc"}, ("name", "0"))
    assert read.value is MISSING
    assert read.explain() == "name.0 is missing (name is a string, not an object or array)"


@st.composite
def _state_and_segments(draw: st.DrawFn) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A state, and a path into it as an expression's keys name one: a top-level name, then
    segments that are keys or indices present, ``length``, or names that are not there."""
    state = draw(json_states())
    segments = [draw(st.sampled_from([*state, "length", "missing"]))]
    value = state.get(segments[0], MISSING)
    while value is not MISSING and (len(segments) == 1 or draw(st.booleans())):
        present: list[str] = []
        if isinstance(value, dict):
            present = list(value)
        elif isinstance(value, list):
            present = [str(index) for index in range(len(value))]
        segment = draw(st.sampled_from([*present, "length", "length", "missing", "0", "2"]))
        if isinstance(value, str) and array_index(segment) is not None:
            break  # a string's index is read by an expression, but never named as a key
        segments.append(segment)
        value = read_path(state, segments, lengths=True).value
    return state, tuple(segments)


@settings(max_examples=300)
@given(_state_and_segments())
def test_read_path_with_lengths_reads_what_the_expression_reads(
    case: tuple[dict[str, Any], tuple[str, ...]],
) -> None:
    """The value a narrative names for a key is the value the expression read there (the
    evaluator agrees with Node.js: test_differential.py); undefined there is missing here."""
    state, segments = case
    source = segments[0] + "".join(f"?.[{json.dumps(segment)}]" for segment in segments[1:])
    evaluated = assay.compile_expression(source).evaluate(state)
    read = read_path(state, segments, lengths=True)
    if evaluated is assay.UNDEFINED:
        assert not read.found, (source, state)
    else:
        assert read.found, (source, state)
        assert read.value == evaluated, (source, state)
