"""What a settled fire rests on: the contract as observed at settlement, the snapshot it held
on, and the keys it reads beyond those the action declares writing.

Each case was a false pass: an answer of ``worked`` that nothing observed supports. The clock
is virtual; reports are pushed by the test, in an order the event loop keeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from assay.clock import VirtualClock
from assay.graph import Session, build_navigation_graph
from test_session_claims import unattributed

T = TypeVar("T")


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


def session(
    clock: VirtualClock, actions: dict[str, Any], state: dict[str, Any], **handlers: Any
) -> Session:
    graph = build_navigation_graph(
        "desk", pages={"p": {"actions": actions}, "billing": {"actions": {}}}
    )
    created = graph.create_session(node="p", state=state, clock=clock)
    created.register_actions("p", handlers=handlers)
    return created


def test_an_already_true_fire_whose_contract_no_longer_holds_is_no_success() -> None:
    # The contract held at fire time; while the handler ran, someone moved the view away.
    # It answered worked ("A state report established the declared change"), its contract
    # never evaluated again, and the session moved to billing.
    open_billing = {
        "does": "open billing",
        "writes": ["view.domain"],
        "to": "billing",
        "verify": {"view.domain": {"eq": "billing"}},
        "verify_timeout_ms": 1000,
    }

    async def main(clock: VirtualClock) -> Any:
        async def handler(args: dict[str, Any]) -> None:
            await clock.sleep(0.2)  # does nothing

        s = session(clock, {"open": open_billing}, {"view": {"domain": "billing"}}, open=handler)
        fired = s.fire("p.open")
        assert fired.already_true is not None
        s.report({"view.domain": "sales"})  # not the fire's doing
        await clock.advance(0.2)
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or ""), s.node

    answer, node = run(main)
    assert (answer.answer, node) == ("failed", "p")
    assert answer.outcome is not None and answer.outcome.passed is False
    assert answer.error is not None
    assert 'view.domain changed from "billing" to "sales"' in answer.error


def test_an_already_true_fire_whose_declared_key_moved_and_still_holds_works() -> None:
    send = {
        "does": "send",
        "writes": ["inbox.sent_count"],
        "verify": {"inbox.sent_count": {"gte": 1}},
    }

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"send": send}, {"inbox": {"sent_count": 1}}, send=lambda args: None)
        s.register_actions("p", handlers={"send": lambda args: s.report({"inbox.sent_count": 2})})
        fired = s.fire("p.send")
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or "")

    answer = run(main)
    assert answer.answer == "worked"
    assert answer.already_true is not None
    assert [c.key for c in answer.commit] == ["inbox.sent_count"]


def test_one_change_to_a_key_read_but_not_declared_is_credited_to_one_fire() -> None:
    # The fires declare writing lamp.requested; their own contract reads lamp.on. The lamp
    # came on once, and both answered worked with an empty commit: no declared key changed,
    # so nothing was claimed.
    switch_on = {"does": "switch on", "writes": ["lamp.requested"], "settle_ms": 100}

    async def main(clock: VirtualClock) -> Any:
        s = session(
            clock,
            {"switch_on": switch_on},
            {"lamp": {"on": False, "requested": 0}},
            switch_on=lambda args: None,
        )
        fires = [s.fire("p.switch_on", verify_expression="lamp.on === true") for _ in range(2)]
        s.report({"lamp.on": True})
        await clock.advance(1)
        return [s.did_it_work(f.transition_id or "") for f in fires]

    first, second = run(main)
    assert (first.answer, first.error) == ("worked", None)
    assert (second.answer, second.error) == (
        "unobservable",
        unattributed("lamp.on", "p.switch_on#1"),
    )


def test_a_contract_that_held_only_briefly_is_credited_once_and_shown_as_no_longer_held() -> None:
    # The lamp came on and went off again before the verifications ran: both answered
    # worked with an empty commit (the commit was taken on the current state, where the lamp
    # was off), and nothing said the contract no longer held.
    switch_on = {
        "does": "switch on",
        "writes": ["lamp.on"],
        "verify_expression": "lamp.on === true",
    }

    async def main(clock: VirtualClock) -> Any:
        s = session(
            clock, {"switch_on": switch_on}, {"lamp": {"on": False}}, switch_on=lambda a: None
        )
        fires = [s.fire("p.switch_on") for _ in range(2)]
        await clock.advance(0)  # both have checked once and wait for a change
        s.report({"lamp.on": True})
        s.report({"lamp.on": False})
        await clock.advance(1)
        return [s.did_it_work(f.transition_id or "") for f in fires]

    first, second = run(main)
    assert first.answer == "worked"
    assert [(c.key, c.before, c.after) for c in first.commit] == [("lamp.on", False, True)]
    assert first.outcome_now is not None
    assert first.outcome_now.result is False
    assert first.outcome_now.detail.startswith("since settlement the contract no longer holds")
    assert (second.answer, second.error) == (
        "unobservable",
        unattributed("lamp.on", "p.switch_on#1"),
    )


HELD_BEFORE = (
    "The contract holds, but it held before the action fired too, and none of the keys it "
    "reads changed"
)
TASKS = {"items": [{"done": False}, {"done": True}]}
"""Arrays are leaves of the diff: a change to one element changes the leaf ``items``."""
CANCELLED = {"status": "cancelled"}


@pytest.mark.parametrize(
    ("expression", "state", "args", "report", "writes"),
    [
        pytest.param(
            "orders[args.order_id].status === 'cancelled'",
            {"orders": {"o1": CANCELLED, "o2": {"status": "open"}}},
            {"order_id": "o1"},
            {"orders.o2.status": "shipped"},
            [],
            id="a member keyed by an argument",
        ),
        pytest.param(
            "orders[args.n].status === 'cancelled'",
            {"orders": {"1": CANCELLED, "2": {"status": "open"}}},
            {"n": 1},
            {"orders.2.status": "shipped"},
            [],
            id="a member keyed by a number",
        ),
        pytest.param(
            "args.order_id in orders",
            {"orders": {"o1": {"status": "open"}}},
            {"order_id": "o1"},
            {"orders.o2.status": "open"},
            [],
            id="whether a member exists",
        ),
        pytest.param(
            "orders[1].status === 'cancelled'",
            {"orders": {"1": CANCELLED, "2": {"status": "open"}}},
            None,
            {"orders.2.status": "shipped"},
            [],
            id="a member keyed by a literal number",
        ),
        pytest.param(
            "items[1].done === true",
            TASKS,
            None,
            {"items": [{"done": True}, {"done": True}]},
            ["items"],
            id="an array element",
        ),
        pytest.param(
            "items.length === 2",
            TASKS,
            None,
            {"items": [{"done": True}, {"done": True}]},
            ["items"],
            id="the length of an array",
        ),
    ],
)
def test_a_contract_that_held_before_rests_on_the_keys_it_reads(
    expression: str,
    state: dict[str, Any],
    args: dict[str, Any] | None,
    report: dict[str, Any],
    writes: list[str],
) -> None:
    # Each contract held before the fire and the handler did nothing; a report then moved a
    # key beside the one the contract reads (another order, another element). The contract
    # was read as reading the whole object or array, so that change counted, and the fire
    # answered worked.
    act = {"does": "act", "writes": writes, "settle_ms": 200, "verify_expression": expression}

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"act": act}, state, act=lambda args: None)
        fired = s.fire("p.act", args)
        s.report(report)
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or "")

    answer = run(main)
    assert answer.answer == "unobservable"
    assert answer.why is not None and answer.why.startswith(HELD_BEFORE)
    assert [c.key for c in answer.commit] == writes  # the array changed, as a whole


def test_fires_keyed_by_numbers_are_each_credited_with_their_own_member() -> None:
    # Each fire read all of orders, so one report cancelling orders 1 and 2 was claimed whole
    # by the first fire to settle, and the other answered unobservable.
    cancel = {
        "does": "cancel an order",
        "verify_expression": "orders[args.n].status === 'cancelled'",
    }
    state = {"orders": {"1": {"status": "open"}, "2": {"status": "open"}}}

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"cancel": cancel}, state, cancel=lambda args: None)
        fires = [s.fire("p.cancel", {"n": n}) for n in (1, 2)]
        await clock.advance(0)  # both have checked once and wait for a change
        s.report({"orders.1.status": "cancelled", "orders.2.status": "cancelled"})
        await clock.advance(1)
        return [s.did_it_work(f.transition_id or "") for f in fires]

    answers = run(main)
    assert [(a.answer, a.error) for a in answers] == [("worked", None), ("worked", None)]


def test_a_contract_over_an_argument_array_rests_on_the_members_it_names() -> None:
    # args.ids.every(id => orders[id]...) read all of orders: orders 1 and 2 were cancelled
    # before the fire, order 3 moved meanwhile, and a cancel of 1 and 2 whose handler did
    # nothing answered worked.
    cancel = {
        "does": "cancel orders",
        "settle_ms": 200,
        "verify_expression": "args.ids.every(id => orders[id].status === 'cancelled')",
    }
    cancelled = {"status": "cancelled"}
    state = {"orders": {"1": cancelled, "2": cancelled, "3": {"status": "open"}}}

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"cancel": cancel}, state, cancel=lambda args: None)
        fired = s.fire("p.cancel", {"ids": [1, 2]})
        s.report({"orders.3.status": "shipped"})
        await clock.advance(1)
        moved = s.fire("p.cancel", {"ids": [2, 3]})
        s.report({"orders.3.status": "cancelled"})
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or ""), s.did_it_work(moved.transition_id or "")

    answer, moved = run(main)
    assert answer.answer == "unobservable"
    assert answer.why is not None and answer.why.startswith(HELD_BEFORE)
    assert (moved.answer, moved.error) == ("worked", None)


def test_a_contract_on_an_array_element_works_when_that_element_changes() -> None:
    complete = {
        "does": "complete a task",
        "writes": ["items"],
        "settle_ms": 200,
        "verify_expression": "items[0].done === true",
    }

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"complete": complete}, TASKS, complete=lambda args: None)
        fired = s.fire("p.complete")
        s.report({"items": [{"done": True}, {"done": True}]})
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or "")

    answer = run(main)
    assert (answer.answer, answer.error) == ("worked", None)
    assert [(c.key, c.kind) for c in answer.commit] == [("items", "changed")]


def test_an_already_true_fire_on_an_array_element_rests_on_that_element_only() -> None:
    # The declarative contract covers the write and held at fire time; the report landed
    # while the handler ran, and another element's change answered worked.
    complete = {
        "does": "complete a task",
        "writes": ["items"],
        "verify": {"items.1.done": {"eq": True}},
    }

    async def main(clock: VirtualClock) -> Any:
        async def handler(args: dict[str, Any]) -> None:
            await clock.sleep(0.2)  # does nothing

        s = session(clock, {"complete": complete}, TASKS, complete=handler)
        fired = s.fire("p.complete")
        assert fired.already_true is not None
        s.report({"items": [{"done": True}, {"done": True}]})
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or "")

    answer = run(main)
    assert answer.answer == "unobservable"
    assert answer.why is not None and answer.why.startswith(HELD_BEFORE)


def test_a_write_declared_inside_an_array_is_settled_only_by_a_change_of_that_element() -> None:
    # complete declares writing items[1].done and nothing else; its handler did nothing,
    # and a report that set items[0].done touched the leaf items, settling it as worked.
    complete = {"does": "complete a task", "writes": ["items[1].done"]}
    tasks = {"items": [{"done": False}, {"done": False}]}

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"complete": complete}, tasks, complete=lambda args: None)
        fired = s.fire("p.complete")
        s.report({"items": [{"done": True}, {"done": False}]})
        await clock.advance(1)
        unmoved = s.did_it_work(fired.transition_id or "")
        s.report({"items": [{"done": True}, {"done": True}]})
        await clock.advance(1)
        return unmoved, s.did_it_work(fired.transition_id or "")

    unmoved, moved = run(main)
    assert unmoved.answer == "pending"
    assert (moved.answer, moved.error) == ("worked", None)
    assert [(c.key, c.kind) for c in moved.commit] == [("items", "changed")]


def test_a_write_declared_in_an_empty_object_is_not_settled_by_a_key_added_beside_it() -> None:
    # orders was {}, a leaf of the diff; adding orders.o2 removes that leaf in the store's
    # log, which touched orders.o1, and a create of o1 that did nothing answered worked.
    create = {"does": "create order o1", "writes": ["orders.o1"]}

    graph = build_navigation_graph("desk", pages={"p": {"actions": {"create": create}}})

    async def main(clock: VirtualClock) -> Any:
        # orders.o1 is not there, so coverage is 0: no threshold, or the fire is refused.
        s = graph.create_session(
            node="p", state={"orders": {}}, clock=clock, thresholds={"reversible": 0}
        )
        s.register_actions("p", handlers={"create": lambda args: None})
        fired = s.fire("p.create")
        s.report({"orders.o2": {"status": "open"}})
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or "")

    assert run(main).answer == "pending"


UNSET = {"items": {"1": {"done": True}}}
"""``items`` turned into an object holding its element 1 as it was, as PHP's json_encode
writes an array once an element is unset: the diff lists ``items.1.done`` as added."""


@pytest.mark.parametrize(
    ("action", "handler_s", "answer"),
    [
        pytest.param(
            {"verify_expression": "items[1].done === true", "settle_ms": 200},
            0,
            "unobservable",
            id="a contract that held before",
        ),
        pytest.param(
            {"writes": ["items"], "verify": {"items.1.done": {"eq": True}}},
            0.2,
            "unobservable",
            id="already true",
        ),
        pytest.param({"writes": ["items.1.done"]}, 0, "pending", id="writes only"),
    ],
)
def test_an_array_turned_into_an_object_moves_no_element_that_kept_its_value(
    action: dict[str, Any], handler_s: float, answer: str
) -> None:
    # items[1].done was true before and after; the diff's added items.1.done counted as its
    # change, and each fire, whose handler did nothing, answered worked.
    act = {"does": "complete task 1", **action}

    async def main(clock: VirtualClock) -> Any:
        async def handler(args: dict[str, Any]) -> None:
            if handler_s:
                await clock.sleep(handler_s)  # does nothing

        s = session(clock, {"act": act}, TASKS, act=handler)
        fired = s.fire("p.act")
        s.report(UNSET)
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or "")

    assert run(main).answer == answer
