"""What a pending answer waits on: everything that must still happen for it to settle, each
part named until it has happened (SPEC §11: a pending answer that does not say what it waits
for must never happen)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from assay.clock import VirtualClock
from assay.graph import Session, build_navigation_graph
from assay.host import Application, Host
from assay.host.wire import ActionRequest, ReportRequest
from assay.ledger import Ledger
from assay.ledger.backends.memory import MemoryBackend

T = TypeVar("T")

CONTRACT = '{"cart.paid":{"eq":true}}'

GRAPH = build_navigation_graph(
    "shop",
    pages={
        "cart": {
            "actions": {
                "pay": {"does": "Pay", "writes": ["cart.paid"]},
                "pay-checked": {
                    "does": "Pay, then check the cart is paid",
                    "writes": ["cart.paid"],
                    "verify": {"cart.paid": {"eq": True}},
                    "settle_ms": 500,
                },
                "pay-at-once": {
                    "does": "Pay, checked at once",
                    "writes": ["cart.paid"],
                    "verify": {"cart.paid": {"eq": True}},
                },
            }
        }
    },
)


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


def shop(clock: VirtualClock, release: asyncio.Event) -> Session:
    """A session whose handlers run until ``release`` is set."""

    async def handler(args: dict[str, Any]) -> None:
        await release.wait()

    s = GRAPH.create_session(node="cart", state={"cart": {"paid": False}}, clock=clock)
    s.register_actions("cart", {"pay": handler, "pay-checked": handler, "pay-at-once": handler})
    return s


def test_a_writes_only_fire_waits_on_its_report_and_its_handler_until_each_happens() -> None:
    # It said "a state report writing cart.paid" while its async handler ran too, and named
    # the handler only once the report had landed.
    async def main(clock: VirtualClock) -> list[str | None]:
        seen: list[str | None] = []
        for report_first in (True, False):
            release = asyncio.Event()
            s = shop(clock, release)
            fired = s.fire("cart.pay")
            tid = fired.transition_id or ""
            seen.append(s.did_it_work(tid).waiting_on)
            await clock.advance(1)
            seen.append(s.did_it_work(tid).waiting_on)
            if report_first:
                s.report({"cart.paid": True})
            else:
                release.set()
                await clock.advance(0)
            seen.append(s.did_it_work(tid).waiting_on)
            release.set()
            s.report({"cart.paid": True})
            await clock.advance(0)
            seen.append(s.did_it_work(tid).answer)
            await s.close()
        return seen

    both = "a state report writing cart.paid and the handler to finish"
    assert run(main) == [
        both,
        both,
        "the handler to finish (the state report landed)",
        "worked",
        both,
        both,
        "a state report writing cart.paid",
        "worked",
    ]


def test_a_contract_fire_waits_on_its_handler_and_its_contract_checked_after_settle_ms() -> None:
    # It said "the handler to finish" right after the fire, then "the verify contract ... to
    # hold" once the verification started, never both, and "to hold" within settle_ms,
    # before anything had been checked.
    async def main(clock: VirtualClock) -> list[str | None]:
        release = asyncio.Event()
        s = shop(clock, release)
        fired = s.fire("cart.pay-checked")
        tid = fired.transition_id or ""
        seen = [s.did_it_work(tid).waiting_on]
        await clock.advance(0.2)  # the verification started, within its settle_ms
        seen.append(s.did_it_work(tid).waiting_on)
        await clock.advance(0.5)  # checked, and it does not hold
        seen.append(s.did_it_work(tid).waiting_on)
        release.set()
        await clock.advance(0)
        seen.append(s.did_it_work(tid).waiting_on)
        s.report({"cart.paid": True})
        await clock.advance(0)
        seen.append(s.did_it_work(tid).answer)
        await s.close()
        return seen

    contract = f"the verify contract {CONTRACT} to hold (checked from 500 ms after the fire)"
    assert run(main) == [
        f"the handler to finish and {contract}",
        f"the handler to finish and {contract}",
        f"the handler to finish and {contract}",
        contract,
        "worked",
    ]


def test_a_contract_that_holds_before_the_handler_returns_leaves_the_handler() -> None:
    async def main(clock: VirtualClock) -> list[str | None]:
        release = asyncio.Event()
        s = shop(clock, release)
        fired = s.fire("cart.pay-at-once")
        tid = fired.transition_id or ""
        seen = [s.did_it_work(tid).waiting_on]
        s.report({"cart.paid": True})
        await clock.advance(0.1)
        seen.append(s.did_it_work(tid).waiting_on)
        release.set()
        await clock.advance(0)
        seen.append(s.did_it_work(tid).answer)
        await s.close()
        return seen

    assert run(main) == [
        f"the handler to finish and the verify contract {CONTRACT} to hold",
        "the handler to finish (the contract already holds)",
        "worked",
    ]


ORDERS = build_navigation_graph(
    "shop",
    pages={"desk": {"actions": {"ship": {"does": "Ship", "writes": ["orders.{id}.status"]}}}},
)


@pytest.mark.anyio
async def test_a_queued_fire_counts_the_fires_other_sessions_queued_ahead_of_it() -> None:
    # A second session's fire said "a state report writing orders.1.status" with nothing
    # queued before it, though the first session's fire on that key takes the next report:
    # the count was of its own session's queue only. A changed key settles the earliest
    # fire on it in the first session told, and sessions are told in the order opened, so
    # a fire of the first session is ahead even when it was fired later.
    application = Application.in_process(
        ORDERS,
        start="desk",
        state={"orders": {"1": {"status": "new"}, "2": {"status": "new"}}},
        handlers={"desk.ship": lambda args: None},
    )
    async with Host(application, Ledger(MemoryBackend())) as host:
        later = host.open_session().id

        async def ship(session: str | None, id: str) -> str:
            request = ActionRequest(session=session, action="desk.ship", args={"id": id})
            fired = await host.fire(request)
            assert fired.answer == "pending"
            return fired.transition_id or ""

        def waits(session: str | None, transition_id: str) -> str | None:
            said = host.did_it_work(session, transition_id)
            assert (
                said.why
                == f"Still pending: waiting on {said.waiting_on}. Nothing has settled it yet."
            )
            return said.waiting_on

        second = await ship(later, "1")  # fired first, in the session opened second
        other_key = await ship(later, "2")
        first = await ship(None, "1")
        assert waits(None, first) == "a state report writing orders.1.status"
        assert waits(later, second) == (
            "a state report writing orders.1.status; 1 earlier fire(s) are queued before it"
        )
        assert waits(later, other_key) == "a state report writing orders.2.status"
        host.report(ReportRequest(values={"orders.1.status": "shipped"}))
        assert host.did_it_work(None, first).answer == "worked"
        assert waits(later, second) == "a state report writing orders.1.status"
        host.report(ReportRequest(values={"orders.1.status": "delivered"}))
        assert host.did_it_work(later, second).answer == "worked"


def test_an_already_true_fire_with_its_own_expression_waits_on_its_handler_then_on_it() -> None:
    # It said it waited on the handler alone, though its own verify_expression is checked
    # once the handler has returned, before it settles.
    async def main(clock: VirtualClock) -> list[str | None]:
        release = asyncio.Event()
        s = shop(clock, release)
        s.report({"cart.paid": True})
        fired = s.fire("cart.pay-at-once", verify_expression="cart.paid === true")
        assert fired.already_true is not None
        tid = fired.transition_id or ""
        seen = [s.did_it_work(tid).waiting_on]
        release.set()
        await clock.advance(0)
        seen.append(s.did_it_work(tid).answer)
        await s.close()
        return seen

    contract = (
        f"the verify contract {CONTRACT} (declared) and cart.paid === true (given with the fire) "
        "to hold"
    )
    assert run(main) == [
        f"the handler to finish (it has not returned yet), then {contract}",
        "unobservable",
    ]
