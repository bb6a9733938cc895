"""The state store: ingest, versions, heartbeats, the change log, subscriptions."""

from __future__ import annotations

import asyncio
import copy
import enum
import gc
import logging
import tracemalloc
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay import compile_expression
from assay.clock import VirtualClock
from assay.errors import AssayError, StateError, WrongTypeError
from assay.ledger.canonical import canonical_json
from assay.state import (
    MAX_DEPTH,
    FieldChange,
    Snapshot,
    SourceSeen,
    StateStore,
    Subscription,
    changed_fields,
)
from assay.state.index import ChangedPaths
from strategies import normal, state_documents, state_patches


def advance(clock: VirtualClock, seconds: float) -> None:
    asyncio.run(clock.advance(seconds))


class Recorder:
    """A callback that records what it was called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, ChangedPaths]] = []

    def __call__(self, snapshot: Snapshot, paths: ChangedPaths) -> None:
        self.calls.append((snapshot.version, paths))

    @property
    def versions(self) -> list[int]:
        return [version for version, _ in self.calls]


def canonical_rows(changes: list[FieldChange]) -> list[tuple[str, Any, Any, str]]:
    return [(c.key, normal(c.before), normal(c.after), c.kind) for c in changes]


# Ingest: dotted keys, conflicts, non-JSON values


def test_dotted_keys_expand_into_nesting() -> None:
    store = StateStore({"view": {"domain": "sales", "tab": 1}})
    store.report({"view.domain": "billing", 'orders["a.b"].status': "paid", "cart": {"x.y": 1}})
    assert store.current.objects == {
        "view": {"domain": "billing", "tab": 1},
        "orders": {"a.b": {"status": "paid"}},
        "cart": {"x.y": 1},
    }


@given(state_patches)
def test_a_dotted_report_merges_like_the_nested_one(patch: dict[str, Any]) -> None:
    def dotted(prefix: str, value: Any, out: dict[str, Any]) -> None:
        if isinstance(value, dict) and value and not any("." in key or not key for key in value):
            for key, item in value.items():
                dotted(f"{prefix}.{key}", item, out)
        else:
            out[prefix] = value

    flat: dict[str, Any] = {}
    for key, value in patch.items():
        if key:
            dotted(key, value, flat)
        else:
            flat[key] = value
    nested, flattened = StateStore({"a": {"b": 1}, "c": 2}), StateStore({"a": {"b": 1}, "c": 2})
    nested.report(patch)
    flattened.report(flat)
    assert flattened.current.objects == nested.current.objects


@pytest.mark.parametrize(
    ("report", "message"),
    [
        (
            {"a": 1, "a.b": 2},
            "report keys 'a' and 'a.b' conflict: 'a' sets a value and 'a.b' writes inside it; "
            "send one of them, or nest the inner value in the outer one",
        ),
        (
            {"a.b.c": 2, "a": {"b": 1}},
            "report keys 'a' and 'a.b.c' conflict: 'a' sets a value and 'a.b.c' writes inside it; "
            "send one of them, or nest the inner value in the outer one",
        ),
        (
            {"a.b": 1, 'a["b"]': 2},
            "report keys 'a.b' and 'a[\"b\"]' both name a.b; send one of them",
        ),
        (
            {"a..b": 1},
            "report key 'a..b' is not a path: invalid path 'a..b' at position 2: empty segment "
            "before '.'; remove the extra dot; write [\"\"] for a key that is the empty string",
        ),
        (
            {"ok": 1, "inbox.tags": {1, 2}},
            "cannot store inbox.tags: set is not a JSON type; "
            "use objects, arrays, strings, numbers, booleans or null",
        ),
        (
            {"ok": 1, "drone": {"alt": float("nan")}},
            "cannot store drone.alt: nan is not a JSON number; "
            "use a finite number, or null for no value",
        ),
        (
            {"xs": [1, float("-inf")]},
            "cannot store xs.1: -inf is not a JSON number; "
            "use a finite number, or null for no value",
        ),
        (
            {"a": {3: "x"}},
            "cannot store a: the key 3 (int) is not a string; JSON object keys are strings",
        ),
        (
            {3: "x"},
            "cannot store the report: the key 3 (int) is not a string; "
            "JSON object keys are strings",
        ),
        (
            {"a": object()},
            "cannot store a: object is not a JSON type; "
            "use objects, arrays, strings, numbers, booleans or null",
        ),
        (["a", 1], "a report must be an object mapping keys to values, not list"),
        # What Python's json reads "\\ud800" as: half of a surrogate pair, no UTF-8 text.
        (
            {"ok": 2, "note": {"text": ["fine", "cut \ud83d"]}},
            "cannot store note.text.1: a string holds half of a surrogate pair, such as "
            "\\ud800 alone, which is not Unicode text; send each character whole or as a full "
            "surrogate pair",
        ),
        (
            {"note": {"\udc00": 1}},
            "cannot store note: a string holds half of a surrogate pair, such as \\ud800 "
            "alone, which is not Unicode text; send each character whole or as a full "
            "surrogate pair",
        ),
        (
            {"\ud800": 1},
            "cannot store the report: a string holds half of a surrogate pair, such as "
            "\\ud800 alone, which is not Unicode text; send each character whole or as a full "
            "surrogate pair",
        ),
    ],
)
def test_a_rejected_report_writes_nothing(report: Any, message: str) -> None:
    clock = VirtualClock(100.0)
    store = StateStore({"ok": 0, "a": 1}, clock=clock)
    before = store.current
    calls = Recorder()
    store.subscribe_all(calls)
    for method in (store.report, store.set, store.replace):
        with pytest.raises(StateError) as caught:
            method(report)
        assert str(caught.value) == message
    assert store.current is before
    assert before.objects == {"ok": 0, "a": 1}
    assert calls.calls == []
    assert store.last_heartbeat is None
    assert dict(store.sources) == {}


def test_integers_beyond_2_53_are_stored_as_the_double_they_round_to() -> None:
    store = StateStore()
    report = {"big": 2**70 + 1, "edge": 2**53, "safe": 2**53 - 1, "low": -(2**53), "on": True}
    store.report({"n": report})
    stored = store.current.objects["n"]
    assert stored == {
        "big": 2.0**70,
        "edge": 2.0**53,
        "safe": 2**53 - 1,
        "low": -(2.0**53),
        "on": True,
    }
    assert [type(value) for value in stored.values()] == [float, float, int, float, bool]
    # Evidence that holds the state can be written: RFC 8785 writes integers only up to
    # ±(2**53 - 1), and a settlement that held 2**53 as an integer could not be recorded.
    assert canonical_json(stored) == (
        b'{"big":1.1805916207174113e+21,"edge":9007199254740992,"low":-9007199254740992,'
        b'"on":true,"safe":9007199254740991}'
    )
    with pytest.raises(StateError, match=r"^cannot store n: the integer 10000000000000000000… "):
        store.report({"n": 10**400})


def test_state_errors_carry_the_keys() -> None:
    with pytest.raises(StateError) as caught:
        StateStore().report({"a.b": 2, "a": 1})
    assert (caught.value.key, caught.value.conflict) == ("a", "a.b")
    assert isinstance(caught.value, AssayError)
    assert isinstance(caught.value, ValueError)


def test_too_deep_a_value_is_rejected() -> None:
    value: Any = 1
    for _ in range(MAX_DEPTH):
        value = {"a": value}
    store = StateStore()
    store.report(value)
    with pytest.raises(StateError) as caught:
        store.report({"a": value})
    assert str(caught.value) == (
        f"cannot store a.a.a.a.a.a.a.a…: it nests deeper than {MAX_DEPTH} levels; "
        "flatten the value or store less of it"
    )


def test_values_are_copied_and_made_plain_on_ingest() -> None:
    class Mode(enum.StrEnum):
        GUIDED = "GUIDED"

    class Level(enum.IntEnum):
        HIGH = 3

    tags = ["a"]
    store = StateStore()
    store.report({"drone": {"mode": Mode.GUIDED, "level": Level.HIGH, "pos": (1, 2)}, "t": tags})
    tags.append("b")
    objects = store.current.objects
    assert objects == {"drone": {"mode": "GUIDED", "level": 3, "pos": [1, 2]}, "t": ["a"]}
    assert type(objects["drone"]["mode"]) is str
    assert type(objects["drone"]["level"]) is int


# Versions, no-ops and heartbeats


def test_each_change_makes_one_version_stamped_by_the_clock() -> None:
    clock = VirtualClock(100.0)
    store = StateStore({"a": 1}, clock=clock)
    assert (store.version, store.current.monotonic) == (0, 100.0)
    advance(clock, 5)
    snapshot = store.report({"a": 2})
    assert snapshot is store.current
    assert (snapshot.version, snapshot.monotonic) == (1, 105.0)
    assert snapshot.captured_at == datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC)


def test_a_report_that_changes_nothing_is_a_heartbeat_only() -> None:
    clock = VirtualClock(100.0)
    store = StateStore({"inbox": {"sent_count": 14}}, clock=clock)
    calls = Recorder()
    store.subscribe(["inbox.sent_count"], calls)
    store.subscribe_all(calls)
    before = store.current
    advance(clock, 1)
    assert store.report({"inbox.sent_count": 14}, source="app") is None
    assert store.report({"inbox": {"sent_count": 14.0}, "missing": None}, source="app") is None
    assert store.set({"inbox": {"sent_count": 14}}, source="probe") is None
    assert store.replace({"inbox": {"sent_count": 14}}, source="probe") is None
    assert store.current is before
    assert calls.calls == []
    assert store.last_heartbeat == 101.0
    assert dict(store.sources) == {
        "app": SourceSeen(last_seen=101.0, messages=2, changes=0),
        "probe": SourceSeen(last_seen=101.0, messages=2, changes=0),
    }


def test_heartbeats_and_sources() -> None:
    clock = VirtualClock(100.0)
    store = StateStore(clock=clock)
    assert store.last_heartbeat is None
    store.heartbeat("app")
    advance(clock, 2)
    store.report({"a": 1}, source="app")
    advance(clock, 1)
    store.set({"b": 1}, source="probe")
    assert store.last_heartbeat == 103.0
    assert store.sources["app"] == SourceSeen(last_seen=102.0, messages=2, changes=1)
    assert store.sources["probe"] == SourceSeen(last_seen=103.0, messages=1, changes=1)
    with pytest.raises(TypeError):
        store.sources["x"] = SourceSeen(0.0, 0, 0)  # type: ignore[index]


def test_history_must_be_a_count() -> None:
    with pytest.raises(StateError, match=r"history must be a whole number of versions >= 0"):
        StateStore(history=-1)


# Structural sharing


def big_document() -> dict[str, Any]:
    return {
        "users": {f"u{i}": {"name": f"user {i}", "tags": [i, i + 1]} for i in range(500)},
        "orders": {f"o{i}": {"status": "pending", "items": [{"id": i}]} for i in range(1000)},
    }


def test_a_report_copies_only_the_changed_path() -> None:
    store = StateStore(big_document())
    old = store.current
    frozen = copy.deepcopy(old.objects)
    new = store.report({"orders.o1.status": "shipped"})
    assert new is not None
    assert new.objects["users"] is old.objects["users"]
    assert new.objects["orders"]["o2"] is old.objects["orders"]["o2"]
    assert new.objects["orders"]["o1"]["items"] is old.objects["orders"]["o1"]["items"]
    assert old.objects == frozen
    assert new.objects["orders"]["o1"]["status"] == "shipped"
    assert store.changes_between(old, new) == [
        FieldChange("orders.o1.status", "pending", "shipped", "changed")
    ]


# The change log


def test_changes_between_composes_versions() -> None:
    store = StateStore({"a": 1, "b": {"c": 1}})
    first = store.current
    store.report({"a": 2})
    store.report({"a": 1, "b": {"c": 2}})
    store.report({"b": 7})
    last = store.current
    assert [(c.key, c.before, c.after, c.kind) for c in store.changes_between(first, last)] == [
        ("b", None, 7, "added"),
        ("b.c", 1, None, "removed"),
    ]
    assert [(c.key, c.before, c.after, c.kind) for c in store.changes_between(last, first)] == [
        ("b", 7, None, "removed"),
        ("b.c", None, 1, "added"),
    ]
    assert store.changes_between(last, last) == []


@pytest.mark.parametrize("method", ["report", "set"])
def test_an_object_emptied_by_a_report_becomes_a_leaf(method: str) -> None:
    store = StateStore({"a": {"b": 1}, "c": {"d": {"e": 1}}})
    first = store.current
    values: dict[str, Any] = {"a.b": None} if method == "report" else {"a": {}, "c.d": {}}
    getattr(store, method)(values)
    expected: list[tuple[str, Any, Any, str]] = [
        ("a", None, {}, "added"),
        ("a.b", 1, None, "removed"),
    ]
    if method == "set":
        expected += [("c.d", None, {}, "added"), ("c.d.e", 1, None, "removed")]
    assert [
        (c.key, c.before, c.after, c.kind) for c in store.changes_between(first, store.current)
    ] == expected


def test_snapshots_older_than_the_history_are_diffed() -> None:
    store = StateStore({"a": 0}, history=2)
    first = store.current
    for value in range(1, 6):
        store.report({"a": value, f"k{value}": value})
    changes = store.changes_between(first, store.current)
    assert [(c.key, c.before, c.after) for c in changes] == [
        ("a", 0, 5),
        ("k1", None, 1),
        ("k2", None, 2),
        ("k3", None, 3),
        ("k4", None, 4),
        ("k5", None, 5),
    ]


def test_snapshots_of_another_store_are_diffed() -> None:
    one, other = StateStore({"a": 1}), StateStore({"a": 2})
    one.report({"b": 1})
    assert [(c.key, c.kind) for c in one.changes_between(other.current, one.current)] == [
        ("a", "changed"),
        ("b", "added"),
    ]


operations = st.lists(
    st.one_of(
        st.tuples(st.just("report"), state_patches),
        st.tuples(st.just("set"), state_documents),
        st.tuples(st.just("replace"), state_documents),
    ),
    max_size=5,
)


def merge_patch_to(current: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    """The merge patch that turns ``current`` into ``target`` (which holds no nulls)."""
    patch: dict[str, Any] = {key: None for key in current if key not in target}
    for key, value in target.items():
        old = current.get(key)
        if isinstance(value, dict) and isinstance(old, dict):
            patch[key] = merge_patch_to(old, value)
        else:
            patch[key] = value
    return patch


def has_null(value: Any) -> bool:
    if isinstance(value, dict):
        return any(item is None or has_null(item) for item in value.values())
    return False


@given(
    state_documents,
    state_documents,
    operations,
    st.sampled_from(["replace", "set", "report"]),
    st.data(),
)
def test_the_change_log_agrees_with_changed_fields(
    a: dict[str, Any],
    b: dict[str, Any],
    steps: list[tuple[str, dict[str, Any]]],
    finish: str,
    data: st.DataObject,
) -> None:
    store = StateStore(a, history=data.draw(st.sampled_from([0, 2, 1024])))
    start = store.current
    held = [(start, copy.deepcopy(start.objects))]
    for method, values in steps:
        before = store.current
        after = getattr(store, method)(values)
        if after is None:
            assert store.current is before
            continue
        assert after.version == before.version + 1
        assert canonical_rows(store.changes_between(before, after)) == canonical_rows(
            changed_fields(before.objects, after.objects)
        )
        held.append((after, copy.deepcopy(after.objects)))
    if finish == "report" and not has_null(b):
        store.report(merge_patch_to(store.current.objects, b))
    elif finish in ("set", "report"):
        store.report({key: None for key in store.current.objects if key not in b})
        store.set(b)
    else:
        store.replace(b)
    end = store.current
    assert normal(end.objects) == normal(b)
    for snapshot, frozen in held:  # no change ever touched a tree a snapshot holds
        assert snapshot.objects == frozen
    direct = changed_fields(start.objects, end.objects)
    assert canonical_rows(store.changes_between(start, end)) == canonical_rows(direct)
    for older, _ in held:
        assert canonical_rows(store.changes_between(older, end)) == canonical_rows(
            changed_fields(older.objects, end.objects)
        )
        assert canonical_rows(store.changes_between(end, older)) == canonical_rows(
            changed_fields(end.objects, older.objects)
        )
        other, _ = data.draw(st.sampled_from(held))  # two versions before the end
        assert canonical_rows(store.changes_between(older, other)) == canonical_rows(
            changed_fields(older.objects, other.objects)
        )
        keys = data.draw(st.lists(st.sampled_from(_keys_near(older.objects, end.objects))))
        assert canonical_rows(store.changes_under(older, end, keys)) == canonical_rows(
            [c for c in changed_fields(older.objects, end.objects) if _related(c.path, keys)]
        )


def _keys_near(*trees: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every path in ``trees``, each with a segment below it, and the root's first key."""
    found: set[tuple[str, ...]] = {("a",)}

    def walk(value: Any, path: tuple[str, ...]) -> None:
        if path:
            found.update((path, (*path, "z")))
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, (*path, key))

    for tree in trees:
        walk(tree, ())
    return sorted(found)


def _related(path: tuple[str, ...], keys: list[tuple[str, ...]]) -> bool:
    return any(path[: len(key)] == key or key[: len(path)] == path for key in keys)


@given(state_documents, st.lists(state_patches, min_size=1, max_size=4))
def test_equal_subtrees_stay_shared(a: dict[str, Any], steps: list[dict[str, Any]]) -> None:
    store = StateStore(a)
    for patch in steps:
        old = store.current
        store.report(patch)
        assert_shared_where_equal(old.objects, store.current.objects)


def assert_shared_where_equal(old: dict[str, Any], new: dict[str, Any]) -> None:
    for key, value in new.items():
        if key in old and old[key] is not value:
            assert normal(old[key]) != normal(value), key
            if isinstance(value, dict) and isinstance(old[key], dict):
                assert_shared_where_equal(old[key], value)


# Subscriptions


@pytest.mark.parametrize(
    ("key", "report", "woken"),
    [
        ("inbox.sent_count", {"inbox.sent_count": 15}, True),
        ("inbox.sent_count", {"inbox": 5}, True),
        ("inbox.sent_count", {"inbox": None}, True),
        ("inbox", {"inbox.sent_count": 15}, True),
        ("inbox.sent_count.total", {"inbox.sent_count": 15}, True),
        ("inbox.sent_count", {"inbox.drafts": 1}, False),
        ("inbox.sent_count", {"drone.mode": "LOITER"}, False),
        ("inbox.sent", {"inbox.sent_count": 15}, False),
        ("inbox.sent_count", {"inbox": {"sent_count": 14, "drafts": 9}}, False),
        ("items.0.done", {"items": [{"done": True}]}, True),
        ('orders["a.b"]', {'orders["a.b"].status': "paid"}, True),
        ("inbox.a", {'inbox["a.b"]': 1}, False),
        ("orders.o1", {"orders.o2": 1}, True),  # orders appeared: orders.o1 now reads undefined
        ("drone.camera.zoom", {"drone.camera.mode": "ir"}, True),
        ("drone.camera", {"drone": None}, True),  # drone went: reading drone.camera fails
        ("drone.camera", {"drone.altitude": 3}, False),
    ],
)
def test_which_changes_wake_a_subscription(key: str, report: dict[str, Any], woken: bool) -> None:
    store = StateStore({"inbox": {"sent_count": 14, "drafts": 3}, "drone": {"mode": "GUIDED"}})
    calls = Recorder()
    store.subscribe([key], calls)
    store.report(report)
    assert calls.versions == ([1] if woken else [])


def test_callbacks_get_the_snapshot_and_every_changed_path() -> None:
    store = StateStore({"inbox": {"sent_count": 14, "drafts": 3}})
    seen: list[tuple[Snapshot, ChangedPaths]] = []
    store.subscribe(["inbox.sent_count"], lambda snapshot, paths: seen.append((snapshot, paths)))
    snapshot = store.report({"inbox": {"sent_count": 15, "drafts": 4}})
    assert seen == [(snapshot, (("inbox", "sent_count"), ("inbox", "drafts")))]


def test_keys_of_a_compiled_expression_subscribe() -> None:
    store = StateStore({"inbox": {"sent_count": 14}, "drone": {"mode": "AUTO"}})
    expression = compile_expression('inbox.sent_count >= 15 && drone["mode"] == "GUIDED"')
    calls = Recorder()
    subscription = store.subscribe(expression.keys, calls)
    store.report({"drone.mode": "GUIDED"})
    store.report({"drone.altitude": 3})
    store.report({"inbox.sent_count": 15})
    assert calls.versions == [1, 3]
    assert subscription.keys == ("drone.mode", "inbox.sent_count")


def test_one_change_wakes_a_subscription_once_and_in_subscribe_order() -> None:
    store = StateStore()
    order: list[str] = []
    store.subscribe(["a.b"], lambda *_: order.append("first"))
    store.subscribe_all(lambda *_: order.append("all"))
    store.subscribe(["a", "a.c", "z"], lambda *_: order.append("third"))
    store.report({"a": {"b": 1, "c": 2}})
    assert order == ["first", "all", "third"]


def test_cancel_stops_callbacks_and_is_idempotent() -> None:
    store = StateStore()
    calls = Recorder()
    subscription = store.subscribe(["a"], calls)
    every = store.subscribe_all(calls)
    assert store.waiting == 2
    store.report({"a": 1})
    subscription.cancel()
    subscription.cancel()
    every.cancel()
    store.report({"a": 2})
    assert calls.versions == [1, 1]
    assert store.waiting == 0
    assert not subscription.active
    assert repr(subscription) == "<Subscription to a, cancelled>"
    again = Recorder()
    store.subscribe(["a.b"], again)
    store.report({"a": {"b": 1}})
    assert again.versions == [3]


def test_a_callback_may_cancel_one_not_yet_called() -> None:
    store = StateStore()
    later = Recorder()
    subscriptions: list[Subscription] = []
    subscriptions.append(store.subscribe(["a"], lambda *_: subscriptions[1].cancel()))
    subscriptions.append(store.subscribe(["a"], later))
    store.report({"a": 1})
    assert later.calls == []


def test_a_raising_callback_is_logged_and_the_others_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = StateStore()
    calls = Recorder()

    def broken(snapshot: Snapshot, paths: ChangedPaths) -> None:
        raise RuntimeError("waiter bug")

    store.subscribe(["a"], broken)
    store.subscribe(["a"], calls)
    with caplog.at_level(logging.ERROR, logger="assay.state"):
        store.report({"a": 1})
        store.report({"a": 2})
    assert calls.versions == [1, 2]
    assert store.version == 2
    assert [record.getMessage() for record in caplog.records] == [
        "<Subscription to a> raised on version 1; the store and other subscribers go on",
        "<Subscription to a> raised on version 2; the store and other subscribers go on",
    ]
    assert caplog.records[0].exc_info is not None


def test_a_report_from_a_callback_is_delivered_after_the_current_one() -> None:
    store = StateStore()
    every = Recorder()
    store.subscribe(["a"], lambda snapshot, _: store.report({"b": snapshot.version}))
    store.subscribe_all(every)
    store.report({"a": 1})
    assert every.versions == [1, 2]
    assert store.current.objects == {"a": 1, "b": 1}


def test_subscribe_wants_a_list_of_keys() -> None:
    store = StateStore()
    with pytest.raises(WrongTypeError) as caught:
        store.subscribe("inbox.sent_count", Recorder())
    assert str(caught.value) == (
        "keys must be an iterable of dotted paths, not one string; write ['inbox.sent_count']"
    )


def test_idle_subscriptions_are_small_and_never_called() -> None:
    store = StateStore(big_document())
    calls = Recorder()
    gc.collect()
    tracemalloc.start()
    try:
        start, _ = tracemalloc.get_traced_memory()
        subscriptions = [store.subscribe([f"users.u{i}.name"], calls) for i in range(10_000)]
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (end - start) / len(subscriptions) < 1024
    for i in range(50):
        store.report({f"orders.o{i}.status": "shipped"})
    assert calls.calls == []
    store.report({"users.u7.name": "seven"})
    assert len(calls.calls) == 1
    for subscription in subscriptions:
        subscription.cancel()
    assert store.waiting == 0


def test_a_dotted_report_key_never_writes_inside_an_array() -> None:
    # a[0] turned the array a into the object {"0": 5}, silently.
    store = StateStore({"a": [1, 2], "o": {"n": [3]}})
    for key in ("a[0]", "a.0", "o.n[0].x"):
        with pytest.raises(StateError, match=r"writes inside .*, which is an array in the state"):
            store.report({key: 5})
    assert store.current.objects == {"a": [1, 2], "o": {"n": [3]}}
    assert store.report({"a": {"0": 5}}) is not None  # nested, it replaces: RFC 7396
    assert store.current.objects["a"] == {"0": 5}
