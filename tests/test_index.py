"""The key index: which waiters a change wakes, from its changed leaves and the two trees."""

from __future__ import annotations

from typing import Any

import pytest

from assay.state.index import KeyIndex
from assay.state.snapshot import changed_fields


def woken(keys: list[str], before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The keys of those of ``keys`` (one waiter each) that the leaves changed from
    ``before`` to ``after`` wake."""
    index = KeyIndex()
    waiters = {index.subscribe([key], lambda *_: None): key for key in keys}
    paths = [change.path for change in changed_fields(before, after)]
    return [waiters[s] for s in index.woken(paths, before, after)]


KEYS = ["orders.o1", "orders.o1.status", "orders", "drone.mode", "a.b.c.d", "a.y"]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        # orders appeared with o2: reading orders.o1 went from failing to undefined.
        ({}, {"orders": {"o2": 1}}, ["orders.o1", "orders.o1.status", "orders"]),
        # ... and went again.
        ({"orders": {"o2": 1}}, {}, ["orders.o1", "orders.o1.status", "orders"]),
        # orders was there before and after: o2 is no change of o1.
        ({"orders": {"o3": 1}}, {"orders": {"o3": 1, "o2": 1}}, ["orders"]),
        ({"orders": {}}, {"orders": {"o2": 1}}, ["orders"]),  # o1 was undefined and is
        # a.b appeared under an a that was there: a.y did not move.
        ({"a": {"y": 1}}, {"a": {"y": 1, "b": {"x": 2}}}, ["a.b.c.d"]),
        ({"a": {"b": 1}}, {"a": {"b": {"x": 2}}}, ["a.b.c.d"]),  # a scalar turned object
        ({"drone": {"mode": "AUTO"}}, {"drone": {"mode": "LOITER"}}, ["drone.mode"]),
    ],
)
def test_a_change_wakes_the_waiters_under_an_object_that_appeared_or_went(
    before: dict[str, Any], after: dict[str, Any], expected: list[str]
) -> None:
    assert sorted(woken(KEYS, before, after)) == sorted(expected)


def test_a_waiter_is_woken_once_in_subscribe_order_whatever_woke_it() -> None:
    index = KeyIndex()
    every = index.subscribe(None, lambda *_: None)
    first = index.subscribe(["orders.o1"], lambda *_: None)
    second = index.subscribe(["orders.o2.status", "orders"], lambda *_: None)
    index.subscribe(["drone"], lambda *_: None)
    paths = [("orders", "o2", "status"), ("orders", "o3")]
    after = {"orders": {"o2": {"status": "open"}, "o3": 1}}
    assert index.woken(paths, {}, after) == [every, first, second]
