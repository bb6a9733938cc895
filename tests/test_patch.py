"""Merge patch (RFC 7396), set and replace by path copying: results, sharing, immutability."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.errors import StateError
from assay.state import StateStore, merge_patch
from strategies import normal, state_documents, state_patches, state_values


def reference_merge(target: Any, patch: Any) -> Any:
    """RFC 7396 section 2, literally, on deep copies."""
    if isinstance(patch, dict):
        result = copy.deepcopy(target) if isinstance(target, dict) else {}
        for key, value in patch.items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = reference_merge(result.get(key), value)
        return result
    return copy.deepcopy(patch)


RFC_7396_APPENDIX_A = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC_7396_APPENDIX_A)
def test_rfc_7396_appendix_a(target: Any, patch: Any, result: Any) -> None:
    before = copy.deepcopy(target)
    assert merge_patch(target, patch) == result
    assert target == before


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [
        case
        for case in RFC_7396_APPENDIX_A
        if isinstance(case[0], dict) and isinstance(case[1], dict)
    ],
)
def test_rfc_7396_appendix_a_through_a_store(target: Any, patch: Any, result: Any) -> None:
    store = StateStore(target)
    store.report(patch)
    assert store.current.objects == result


@given(state_documents, state_patches)
def test_merge_patch_agrees_with_the_reference(target: dict[str, Any], patch: Any) -> None:
    before = copy.deepcopy(target)
    merged = merge_patch(target, patch)
    assert normal(merged) == normal(reference_merge(target, patch))
    assert target == before  # never mutated
    for key, value in target.items():
        if key not in patch:
            assert merged[key] is value  # shared, not copied


@given(state_values, st.one_of(st.none(), state_values))
def test_merge_patch_on_any_json_agrees_with_the_reference(target: Any, patch: Any) -> None:
    assert normal(merge_patch(target, patch)) == normal(reference_merge(target, patch))


@given(state_documents, state_patches)
def test_a_patch_applied_twice_changes_nothing_the_second_time(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) is once


def test_merge_patch_copies_the_patch_values() -> None:
    inner = {"b": [1, 2]}
    merged = merge_patch({}, {"a": inner})
    inner["b"].append(3)
    assert merged == {"a": {"b": [1, 2]}}


def test_merge_patch_rejects_non_json() -> None:
    with pytest.raises(StateError) as caught:
        merge_patch({}, {"a": float("nan")})
    assert str(caught.value) == (
        "cannot store a: nan is not a JSON number; use a finite number, or null for no value"
    )


def test_equal_values_keep_the_stored_object() -> None:
    target = {"a": {"b": [1, 2]}, "n": 1}
    assert merge_patch(target, {"a": {"b": [1, 2]}, "n": 1.0}) is target
    assert merge_patch(target, {"n": True}) == {"a": {"b": [1, 2]}, "n": True}


def test_only_the_changed_path_is_copied() -> None:
    target: dict[str, Any] = {
        "orders": {"o1": {"status": "new", "items": [1]}, "o2": {"status": "new"}},
        "u": {},
    }
    merged = merge_patch(target, {"orders": {"o1": {"status": "paid"}}})
    assert merged["u"] is target["u"]
    assert merged["orders"]["o2"] is target["orders"]["o2"]
    assert merged["orders"]["o1"]["items"] is target["orders"]["o1"]["items"]
    assert merged["orders"] is not target["orders"]
    assert target["orders"]["o1"]["status"] == "new"


# set and replace, through the store


def test_set_replaces_each_given_key_wholesale() -> None:
    store = StateStore({"inbox": {"count": 1, "draft": {"to": "a", "cc": "b"}}, "drone": 1})
    store.set({"inbox.draft": {"to": "z"}, "inbox.flag": None})
    assert store.current.objects == {
        "inbox": {"count": 1, "draft": {"to": "z"}, "flag": None},
        "drone": 1,
    }


def test_set_under_a_scalar_makes_an_object() -> None:
    store = StateStore({"inbox": 3})
    store.set({"inbox.count": 4})
    assert store.current.objects == {"inbox": {"count": 4}}


def test_set_of_an_equal_value_shares_the_unchanged_parts() -> None:
    store = StateStore({"orders": {"o1": {"status": "new"}, "o2": {"status": "new"}}})
    old = store.current
    new = store.set({"orders": {"o1": {"status": "new"}, "o2": {"status": "paid"}}})
    assert new is not None
    assert new.objects["orders"]["o1"] is old.objects["orders"]["o1"]
    assert store.set({"orders": json.loads(json.dumps(new.objects["orders"]))}) is None


def test_replace_removes_the_keys_it_lacks_and_stores_nulls() -> None:
    store = StateStore({"a": 1, "b": {"c": 2}})
    old = store.current
    new = store.replace({"b": {"c": 2}, "n": None})
    assert new is not None
    assert new.objects == {"b": {"c": 2}, "n": None}
    assert new.objects["b"] is old.objects["b"]
    assert store.replace({"b": {"c": 2}, "n": None}) is None


def test_replace_with_nothing_empties_the_substrate() -> None:
    store = StateStore({"a": {"b": 1}})
    assert store.replace({}) is not None
    assert store.current.objects == {}
    assert [(c.key, c.kind) for c in store.changes_between(store.current, store.current)] == []
