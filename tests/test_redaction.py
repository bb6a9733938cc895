"""Redaction: which paths are covered, and summaries that never show a covered value."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from assay.errors import ContractError, WrongTypeError
from assay.json.path import parse_path
from assay.json.values import number_to_string
from assay.redaction import ELLIPSIS, REDACTED, SUMMARY_LIMIT, Redaction
from strategies import json_values

SECRET = "hunter2-SECRET"


@pytest.mark.parametrize(
    ("pattern", "path", "covered"),
    [
        ("user.password", ("user", "password"), True),
        ("user.password", ("user", "password", "hash"), True),
        ("user.password", ("user",), False),
        ("user.password", ("user", "passwords"), False),
        ("*.token", ("github", "token"), True),
        ("*.token", ("token",), False),
        ("*.token", ("a", "b", "token"), False),
        ("**.token", ("a", "b", "token"), True),
        ("**.token", ("token",), True),
        ("secrets", ("secrets", "api", "key"), True),
        ("secrets.**", ("secrets",), True),
        ("secrets.**", ("secrets", "api", "key"), True),
        ("secrets.**", ("secret",), False),
        ("api_*", ("api_key",), True),
        ("api_*", ("api_",), True),
        ("api_*", ("xapi_key",), False),
        ("*_key_*", ("my_key_1",), True),
        ("a*b*c", ("abc",), True),
        ("a*b*c", ("axbyc",), True),
        ("a*b*c", ("acb",), False),
        ("a*a", ("a",), False),
        ('orders["a.b"].card', ("orders", "a.b", "card"), True),
        ('orders["a.b"].card', ("orders", "a", "b", "card"), False),
        # A key with dots: the pattern's dots may stand for the key's own.
        ("u.a.b", ("u", "a.b"), True),
        ("u.a.b", ("u", "a.b", "c"), True),
        ("u.a.b", ("u", "a.b.c"), True),
        ("u.a.b", ("u", "a", "b.c"), True),
        ("u.a.b", ("u.a", "b"), True),
        ("u.a.b", ("u.a.b",), True),
        ("u.a", ("u", "a.b"), True),
        ("u.a.b", ("u", "a.c"), False),
        ("u.a.b", ("u", "ab.c"), False),
        ("u.a.b", ("u", "a.bc"), False),
        ("u.a.b", ("u.a", "c"), False),
        ("u.*.c", ("u", "a.b", "c"), True),
        ("u.*.c", ("u", "a.b.c"), True),
        ("u.*.c", ("u", "a.b.d"), False),
        ("*.token", ("a.b", "token"), True),
        ("**.token", ("a.token",), True),
        ("**.token", ("a.tokens",), False),
        ("u.**.x", ("u", "a.b.x"), True),
        ('u["a.b"]', ("u", "a.b.c"), True),
        ('u["a.b"]', ("u", "a", "b"), False),
        ("a*", ("x.a",), False),
        ("items.*.secret", ("items", "0", "secret"), True),
        ("**", (), True),
    ],
)
def test_covers(pattern: str, path: tuple[str, ...], covered: bool) -> None:
    assert Redaction([pattern]).covers(path) is covered


_KEYS = ["a", "b", "a.b", "b.a", "a.a.b", "ab", "a*", ".", "a.", ""]
_TOKENS = ["a", "b", "a.b", "ab", "*", "**", "a*", "*b", "*.b", "a.*"]


def _format(tokens: list[str]) -> str:
    """Write pattern tokens as a path, in brackets when a token holds a dot."""
    text = ""
    for token in tokens:
        if "." in token:
            text += f"[{json.dumps(token)}]"
        else:
            text += f".{token}" if text else token
    return text


def _spellings(path: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Every path that ``path``'s dotted spelling could stand for: keys split at any dots."""
    if not path:
        return [()]
    pieces = path[0].split(".")
    heads: list[tuple[str, ...]] = [(pieces[0],)]
    for piece in pieces[1:]:
        heads = [h for head in heads for h in ((*head[:-1], f"{head[-1]}.{piece}"), (*head, piece))]
    return [(*head, *tail) for head in heads for tail in _spellings(path[1:])]


def _matches_a_prefix(tokens: tuple[str, ...], path: tuple[str, ...]) -> bool:
    """The segment-by-segment reading: ``*`` within one segment, ``**`` any segments."""
    if not tokens:
        return True
    if tokens[0] == "**":
        return any(_matches_a_prefix(tokens[1:], path[i:]) for i in range(len(path) + 1))
    glob = ".*".join(re.escape(part) for part in tokens[0].split("*"))
    return (
        bool(path)
        and re.fullmatch(glob, path[0], re.DOTALL) is not None
        and _matches_a_prefix(tokens[1:], path[1:])
    )


@given(
    tokens=st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=4),
    path=st.lists(st.sampled_from(_KEYS), max_size=4).map(tuple),
)
def test_a_path_is_covered_when_one_of_its_spellings_is(
    tokens: list[str], path: tuple[str, ...]
) -> None:
    pattern = _format(tokens)
    segments = parse_path(pattern)
    expected = any(_matches_a_prefix(segments, spelling) for spelling in _spellings(path))
    assert Redaction([pattern]).covers(path) is expected


def test_a_key_with_dots_is_withheld_wherever_a_pattern_could_spell_it() -> None:
    redaction = Redaction(["u.a.b", "v.*.pin"])
    state = {
        "u": {"a.b": SECRET, "a.c": "shown", "a": {"b.c": SECRET, "c": "shown"}},
        "v": {"x.y": {"pin": SECRET, "name": "shown"}},
    }
    assert redaction.summarize((), state) == (
        '{"u":{"a.b":"[redacted]","a.c":"shown","a":{"b.c":"[redacted]","c":"shown"}},'
        '"v":{"x.y":{"pin":"[redacted]","name":"shown"}}}'
    )
    assert redaction.summarize(("u", "a.b"), SECRET) is None
    assert redaction.summarize(("u", "a"), state["u"]["a"]) == ('{"b.c":"[redacted]","c":"shown"}')


def test_none_covers_nothing() -> None:
    assert Redaction.none().covers(("password",)) is False
    assert Redaction().covers(("password",)) is False
    assert Redaction.none().patterns == ()


def test_covers_is_cached_per_path_and_stays_correct() -> None:
    redaction = Redaction(["user.password"])
    assert redaction.covers(["user", "password"]) is True
    assert redaction.covers(("user", "password")) is True
    assert redaction.covers(("user", "name")) is False
    assert redaction.covers(("user", "name")) is False


def test_patterns_are_checked_when_configured() -> None:
    with pytest.raises(ContractError, match=r"invalid path 'a\.\.b' at position 2"):
        Redaction(["a..b"])
    with pytest.raises(WrongTypeError, match="not one string"):
        Redaction("user.password")


def test_repr() -> None:
    assert repr(Redaction(["user.password", "*.token"])) == (
        "Redaction(['user.password', '*.token'])"
    )


def test_summary_is_compact_json() -> None:
    none = Redaction.none()
    assert none.summarize(("a",), "billing") == '"billing"'
    assert none.summarize(("a",), 14) == "14"
    assert none.summarize(("a",), 1.5) == "1.5"
    assert none.summarize(("a",), None) == "null"
    assert none.summarize(("a",), True) == "true"
    assert none.summarize(("a",), {"b": [1, "x", None], "c": {}}) == '{"b":[1,"x",null],"c":{}}'
    assert none.summarize(("a",), "é\n") == '"é\\n"'


def test_summary_is_truncated_with_an_ellipsis() -> None:
    none = Redaction.none()
    long_text = none.summarize(("a",), "x" * 1000)
    assert long_text == '"' + "x" * (SUMMARY_LIMIT - 2) + ELLIPSIS
    assert long_text is not None
    assert len(long_text) == SUMMARY_LIMIT
    assert none.summarize(("a",), list(range(100)), limit=10) == "[0,1,2,3,…"
    assert none.summarize(("a",), "abcdefghij", limit=12) == '"abcdefghij"'
    assert none.summarize(("a",), "abcdefghijk", limit=12) == '"abcdefghij…'


def test_summary_of_a_huge_value_stops_early() -> None:
    huge = {f"k{i}": list(range(50)) for i in range(100_000)}
    summary = Redaction.none().summarize((), huge)
    assert summary is not None
    assert len(summary) == SUMMARY_LIMIT
    assert summary.startswith('{"k0":[0,1,2')


def test_summary_survives_deep_nesting() -> None:
    deep: Any = "bottom"
    for _ in range(100_000):
        deep = [deep]
    assert Redaction.none().summarize(("a",), deep, limit=8) == "[[[[[[[…"


def test_summary_escapes_lone_surrogates() -> None:
    assert Redaction.none().summarize(("a",), "a\ud800") == '"a\\ud800"'


def test_summary_of_a_covered_path_is_withheld() -> None:
    redaction = Redaction(["user.password", "secrets"])
    assert redaction.summarize(("user", "password"), SECRET) is None
    assert redaction.summarize(("secrets", "api", "key"), SECRET) is None


def test_summary_masks_covered_values_nested_inside() -> None:
    redaction = Redaction(["user.password", "*.token", "vault.**"])
    state = {
        "user": {"name": "ann", "password": SECRET},
        "github": {"token": SECRET, "org": "acme"},
        "vault": {"k": SECRET},
        "items": [{"token": "not-covered: depth 3"}],
    }
    assert redaction.summarize(("user",), state["user"]) == (
        f'{{"name":"ann","password":"{REDACTED}"}}'
    )
    assert redaction.summarize((), state) == (
        '{"user":{"name":"ann","password":"[redacted]"},'
        '"github":{"token":"[redacted]","org":"acme"},'
        '"vault":"[redacted]",'
        '"items":[{"token":"not-covered: depth 3"}]}'
    )


def test_summary_masks_array_elements_by_index() -> None:
    redaction = Redaction(["cards.*.number"])
    cards = [{"number": SECRET, "brand": "visa"}, {"number": SECRET}]
    assert redaction.summarize(("cards",), cards) == (
        '[{"number":"[redacted]","brand":"visa"},{"number":"[redacted]"}]'
    )


@given(
    state=st.dictionaries(
        st.sampled_from(["a", "b", "password", "token", "a.password", "x.token"]), json_values
    ),
    pattern=st.sampled_from(["password", "*.password", "**.token", "a.*", "b.**", "a.password"]),
    limit=st.integers(min_value=1, max_value=400),
)
def test_a_value_under_a_covered_key_never_appears_in_a_summary(
    state: dict[str, Any], pattern: str, limit: int
) -> None:
    redaction = Redaction([pattern])
    planted = _plant(state, redaction, ())
    for key in planted:
        summary = redaction.summarize((key,), planted[key], limit=limit)
        assert summary is None or SECRET not in summary
    summary = redaction.summarize((), planted, limit=limit)
    assert summary is not None
    assert SECRET not in summary


def _plant(value: Any, redaction: Redaction, path: tuple[str, ...]) -> Any:
    """Replace every covered value in ``value`` with the secret."""
    if redaction.covers(path):
        return SECRET
    if isinstance(value, dict):
        return {key: _plant(child, redaction, (*path, key)) for key, child in value.items()}
    if isinstance(value, list):
        return [_plant(child, redaction, (*path, str(i))) for i, child in enumerate(value)]
    return value


def _compact(value: Any) -> str:
    """The reference rendering, JSON.stringify's: compact, numbers as JavaScript writes them
    (1e-7, not Python's 1e-07); lone surrogates, which summaries escape, are left out."""
    text = _stringify(value)
    assume(text.encode("utf-8", "surrogatepass") == text.encode("utf-8", "ignore"))
    return text


def _stringify(value: Any) -> str:
    if isinstance(value, dict):
        members = (f"{json.dumps(k, ensure_ascii=False)}:{_stringify(v)}" for k, v in value.items())
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_stringify(item) for item in value) + "]"
    if type(value) is float:
        return number_to_string(value)
    return json.dumps(value, ensure_ascii=False)


def test_a_float_is_summarized_as_javascript_writes_it() -> None:
    summaries = [
        Redaction.none().summarize(("a",), value)
        for value in (2.0**53, 1e-7, 1e21, 2.5, -0.0, [0.1, {"x": 1e300}])
    ]
    assert summaries == ["9007199254740992", "1e-7", "1e+21", "2.5", "0", '[0.1,{"x":1e+300}]']


@given(json_values)
def test_untruncated_summary_is_the_compact_json(value: Any) -> None:
    expected = _compact(value)
    summary = Redaction.none().summarize(("a",), value, limit=10_000)
    assert summary == expected


@given(json_values, st.integers(min_value=1, max_value=60))
def test_truncated_summary_is_a_prefix_of_the_compact_json(value: Any, limit: int) -> None:
    expected = _compact(value)
    summary = Redaction.none().summarize(("a",), value, limit=limit)
    assert summary is not None
    assert len(summary) <= limit
    if len(expected) <= limit:
        assert summary == expected
    else:
        assert summary.endswith(ELLIPSIS)
        assert expected.startswith(summary[: -len(ELLIPSIS)])
