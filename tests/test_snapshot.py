"""Snapshots and ``changed_fields``: leaves, kinds, type changes, completeness."""

from __future__ import annotations

import copy
import dataclasses
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given

from assay.state import FieldChange, Snapshot, changed_fields
from assay.state.diff import Change, diff_objects, invert
from assay.state.snapshot import field_changes
from strategies import normal, state_documents


def rows(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, Any, Any, str]]:
    return [(c.key, c.before, c.after, c.kind) for c in changed_fields(before, after)]


def apply_changes(tree: dict[str, Any], changes: list[FieldChange]) -> dict[str, Any]:
    """Apply a change list as documented: removals first, pruning the objects they empty,
    then additions and changes, making the objects on their way."""
    result = copy.deepcopy(tree)
    for change in changes:
        if change.kind != "removed":
            continue
        *parents, last = change.path
        trail = [result]
        for segment in parents:
            trail.append(trail[-1][segment])
        del trail[-1][last]
        for depth in range(len(parents), 0, -1):
            if trail[depth]:
                break
            del trail[depth - 1][parents[depth - 1]]
    for change in changes:
        if change.kind == "removed":
            continue
        *parents, last = change.path
        node = result
        for segment in parents:
            node = node.setdefault(segment, {})
        node[last] = copy.deepcopy(change.after)
    return result


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ({"a": 1}, {"a": 2}, [("a", 1, 2, "changed")]),
        ({}, {"a": 1}, [("a", None, 1, "added")]),
        ({"a": 1}, {}, [("a", 1, None, "removed")]),
        ({"a": None}, {}, [("a", None, None, "removed")]),
        ({"a": None}, {"a": 0}, [("a", None, 0, "changed")]),
        ({"a": True}, {"a": 1}, [("a", True, 1, "changed")]),
        ({"a": 1}, {"a": 1.0}, []),
        (
            {"a": [1, {"b": 2}]},
            {"a": [1, {"b": 3}]},
            [("a", [1, {"b": 2}], [1, {"b": 3}], "changed")],
        ),
        (
            {"a": {"b": 1, "c": {"d": 2}}},
            {"a": 5},
            [("a", None, 5, "added"), ("a.b", 1, None, "removed"), ("a.c.d", 2, None, "removed")],
        ),
        (
            {"a": [1]},
            {"a": {"b": 1}},
            [("a", [1], None, "removed"), ("a.b", None, 1, "added")],
        ),
        # An empty object that gains keys was not removed: only what it gained is listed.
        ({"a": {}}, {"a": {"b": 1}}, [("a.b", None, 1, "added")]),
        ({"a": {"x": {}}}, {"a": {"x": {"y": {"z": 1}}}}, [("a.x.y.z", None, 1, "added")]),
        (
            {"a": {}, "b": {}},
            {"a": {"c": 1}},
            [("a.c", None, 1, "added"), ("b", {}, None, "removed")],
        ),
        ({"a": {"b": 1}}, {"a": {}}, [("a", None, {}, "added"), ("a.b", 1, None, "removed")]),
        ({"a": {}}, {"a": []}, [("a", {}, [], "changed")]),
        ({"a": {}}, {}, [("a", {}, None, "removed")]),
        (
            {"orders": {"a.b": {"status": "new"}}, "z": 1},
            {"orders": {"a.b": {"status": "paid"}}, "y": 1},
            [
                ('orders["a.b"].status', "new", "paid", "changed"),
                ("y", None, 1, "added"),
                ("z", 1, None, "removed"),
            ],
        ),
    ],
)
def test_changed_fields(before: dict[str, Any], after: dict[str, Any], expected: list[Any]) -> None:
    assert rows(before, after) == expected


def test_changed_fields_are_sorted_by_key() -> None:
    before = {"b": {"z": 1, "a": 1}, "a": 1}
    after = {"b": {"z": 2, "a": 2}, "a": 2}
    assert [c.key for c in changed_fields(before, after)] == ["a", "b.a", "b.z"]


def test_identical_subtrees_are_not_read() -> None:
    class Unreadable(dict[str, Any]):
        def items(self) -> Any:
            raise AssertionError("an identical subtree was read")

    shared = Unreadable(x=1)
    assert rows({"s": shared, "a": 1}, {"s": shared, "a": 2}) == [("a", 1, 2, "changed")]


def test_field_change_path_reads_its_key() -> None:
    change = FieldChange('orders["a.b"].status', "new", "paid", "changed")
    assert change.path == ("orders", "a.b", "status")


@given(state_documents, state_documents)
def test_applying_changed_fields_gives_the_second_document(
    a: dict[str, Any], b: dict[str, Any]
) -> None:
    changes = changed_fields(a, b)
    assert normal(apply_changes(a, changes)) == normal(b)
    assert len({c.key for c in changes}) == len(changes)


@given(state_documents, state_documents)
def test_changed_fields_backwards_is_the_inverse(a: dict[str, Any], b: dict[str, Any]) -> None:
    # Leaf for leaf, before the one asymmetry: an empty object that gains keys lists only
    # what it gained, while one that loses its last keys also lists the {} it becomes.
    forwards: list[Change] = []
    diff_objects(a, b, (), forwards)
    backwards: list[Change] = []
    diff_objects(b, a, (), backwards)
    assert sorted(map(repr, backwards)) == sorted(map(repr, invert(forwards)))
    assert changed_fields(b, a) == field_changes(invert(forwards))
    inverse = {"added": "removed", "removed": "added", "changed": "changed"}
    mirrored = [(c.key, c.after, c.before, inverse[c.kind]) for c in changed_fields(a, b)]

    def leaves(listed: list[tuple[str, Any, Any, str]]) -> list[tuple[str, Any, Any, str]]:
        return [row for row in listed if not (row[3] != "changed" and {} in (row[1], row[2]))]

    assert leaves(rows(b, a)) == leaves(mirrored)


@given(state_documents)
def test_a_document_and_its_copy_have_no_changed_fields(a: dict[str, Any]) -> None:
    assert changed_fields(a, copy.deepcopy(a)) == []


def test_snapshot_is_frozen_and_compares_by_identity() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    one = Snapshot({"a": 1}, 1, at, 0.0)
    same = Snapshot({"a": 1}, 1, at, 0.0)
    assert one != same
    assert one == one
    assert len({one, same}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.version = 2  # type: ignore[misc]


def test_snapshot_repr_names_a_few_keys_not_the_whole_state() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    snapshot = Snapshot({key: list(range(1000)) for key in "abcdefg"}, 7, at, 0.0)
    assert repr(snapshot) == (
        "Snapshot(version=7, captured_at=2026-01-01T00:00:00+00:00, objects={a, b, c, d, e, …})"
    )
