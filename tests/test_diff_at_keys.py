"""What a change does at a key an expression reads: arrays are leaves of the diff, but a key
read inside one (``items.1.done``) changed only when its own value did."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from assay.json.path import MISSING, read_path
from assay.state import FieldChange, changed_fields
from assay.state.canonical import same_value
from assay.state.snapshot import changes_at
from strategies import state_documents

ITEMS = FieldChange(
    "items", [{"done": False}, {"done": True}], [{"done": True}, {"done": True}], "changed"
)


def test_a_key_inside_an_array_changed_only_when_its_own_value_did() -> None:
    assert ITEMS.at(("items", "1", "done")) is None
    assert ITEMS.at(("items", "0", "done")) == FieldChange("items.0.done", False, True, "changed")
    assert ITEMS.at(("items", "length")) is None
    assert ITEMS.at(("items", "5", "done")) is None  # missing on both sides


def test_a_key_at_or_above_the_leaf_is_the_change_itself_and_another_key_none() -> None:
    inner = FieldChange("orders.o1.status", "open", "shipped", "changed")
    assert ITEMS.at(("items",)) is ITEMS
    assert inner.at(("orders",)) is inner
    assert inner.at(("orders", "o2")) is None
    assert inner.at(("orders", "o1", "status", "length")) == FieldChange(
        "orders.o1.status.length", 4, 7, "changed"
    )


def test_a_length_and_an_element_that_appears_are_changes() -> None:
    grown = FieldChange("items", [1], [1, 2], "changed")
    assert grown.at(("items", "length")) == FieldChange("items.length", 1, 2, "changed")
    assert grown.at(("items", "1")) == FieldChange("items.1", None, 2, "added")
    added = FieldChange("items", None, [{"done": True}], "added")
    assert added.at(("items", "0", "done")) == FieldChange("items.0.done", None, True, "added")


def test_where_a_side_cannot_be_followed_the_values_there_count_whole() -> None:
    # A string's character is read by an expression but not followed here: the strings are
    # compared whole, so a change is never missed.
    name = FieldChange("name", "abc", "abd", "changed")
    assert name.at(("name", "0")) == name.at(("name",)) == name
    assert name.at(("name", "length")) is None
    retyped = FieldChange("items", [{"done": True}], "none", "changed")
    assert retyped.at(("items", "0", "done")) == FieldChange(
        "items", [{"done": True}], "none", "changed"
    )


def test_the_values_at_a_key_are_known_only_at_or_inside_the_leaf() -> None:
    assert ITEMS.values_at(("items", "1", "done")) == (True, True)
    assert ITEMS.values_at(("items", "3")) == (MISSING, MISSING)
    assert ITEMS.values_at(("items", "1", "done", "x")) is None  # a boolean has no keys
    assert FieldChange("orders.o1.status", "a", "b", "changed").values_at(("orders",)) is None


def test_changes_at_keys_keep_a_change_whole_when_a_key_reads_it_whole() -> None:
    keys = [("items", "0", "done"), ("items", "1", "done")]
    assert changes_at([ITEMS], keys) == [FieldChange("items.0.done", False, True, "changed")]
    assert changes_at([ITEMS], [*keys, ("items",)]) == [ITEMS]
    assert changes_at([ITEMS], [("orders",)]) == []


_SEGMENTS = st.sampled_from(["a", "b", "c", "", "x.y", "0", "1", "2", "length"])


@given(state_documents, state_documents, st.lists(_SEGMENTS, min_size=1, max_size=4))
def test_no_change_at_a_key_is_missed_and_none_is_made_up(
    before: dict[str, Any], after: dict[str, Any], segments: list[str]
) -> None:
    key = tuple(segments)
    found = changes_at(changed_fields(before, after), [key])
    read_before = read_path(before, key, lengths=True).value
    read_after = read_path(after, key, lengths=True).value
    if not same_value(read_before, read_after):
        assert found  # a change an expression can see is never missed
    for change in found:
        if len(change.path) >= len(key):  # at the key or a leaf under it: a real change
            assert not same_value(read_before, read_after)
