"""Sessions: the four settlement paths and every condition of the already-true rule."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from assay.clock import VirtualClock
from assay.errors import GraphError, NotFoundError, SessionError, WrongTypeError
from assay.graph import Session, build_navigation_graph
from assay.graph.declaration import Reversibility
from assay.graph.session import DEFAULT_THRESHOLDS

T = TypeVar("T")

PAGES: dict[str, Any] = {
    "workspace": {
        "actions": {
            "open-billing": {
                "does": "Open the billing domain view",
                "writes": ["view.domain"],
                "verify": {"view.domain": {"eq": "billing"}},
                "to": "billing",
            },
            "open-billing-blind": {
                "does": "Open the billing view, declaring writes only",
                "writes": ["view.domain"],
            },
            "refresh": {"does": "Refresh the page (writes nothing)"},
            "send": {
                "does": "Send the draft",
                "writes": ["inbox.sent_count"],
                "verify_expression": "inbox.sent_count > 0",
                "single_flight": True,
            },
            "unwired": {"does": "An action with no handler", "writes": ["x"]},
        }
    },
    "billing": {"actions": {"pay": {"does": "Pay", "writes": ["cart.paid"]}}},
}
GRAPH = build_navigation_graph("desk", pages=PAGES)


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


# Every key the graph's actions write, so that coverage (and so confidence) is full.
BASE: dict[str, Any] = {
    "view": {"domain": "workspace"},
    "inbox": {"sent_count": 0},
    "x": 0,
    "cart": {"paid": False},
}


def session(clock: VirtualClock, state: dict[str, Any], **handlers: Any) -> Session:
    full = {**BASE, **state}
    created = GRAPH.create_session(node="workspace", state=full, clock=clock)
    created.register_actions("workspace", handlers=handlers)
    return created


def test_already_true_fire_carries_the_evidence_and_settles_on_its_handler() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "billing"}}, **{"open-billing": lambda args: None})
        fired = s.fire("workspace.open-billing", source="agent")
        return fired, s.did_it_work(fired.transition_id or ""), s.queue, s.node

    fired, answer, queue, node = run(main)
    assert fired.ok is True
    assert fired.effect_status == "settled"
    assert [e.key for e in fired.already_true or []] == ["view.domain"]
    assert fired.already_true[0].actual_summary == '"billing"'  # type: ignore[index]
    assert fired.why is not None
    assert fired.why.startswith("These declared verify conditions held before this action fired.")
    assert answer.answer == "unobservable"
    assert answer.commit == []
    assert queue == []  # never joined the state-report queue
    assert node == "billing"


def test_already_true_handler_that_raises_is_still_a_failure() -> None:
    def broken(args: dict[str, Any]) -> None:
        raise RuntimeError("billing service down")

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "billing"}}, **{"open-billing": broken})
        fired = s.fire("workspace.open-billing")
        return fired, s.did_it_work(fired.transition_id or ""), s.node

    fired, answer, node = run(main)
    assert fired.effect_status == "failed"
    assert fired.already_true is not None
    assert fired.error == "the handler raised RuntimeError: billing service down"
    assert answer.answer == "failed"
    assert node == "workspace"


def test_already_true_with_an_unresolved_handler_is_still_pending_on_the_handler() -> None:
    async def main(clock: VirtualClock) -> Any:
        never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def hangs(args: dict[str, Any]) -> None:
            await never

        s = session(clock, {"view": {"domain": "billing"}}, **{"open-billing": hangs})
        fired = s.fire("workspace.open-billing")
        await clock.advance(30)
        answer = s.did_it_work(fired.transition_id or "")
        await s.close()
        return fired, answer

    fired, answer = run(main)
    assert fired.effect_status == "pending"
    assert fired.already_true is not None
    assert answer.answer == "pending"
    assert answer.waiting_on == "the handler to finish (it has not returned yet)"
    assert answer.pending_for_ms == 30_000
    assert answer.why == (
        "Still pending: waiting on the handler to finish (it has not returned yet). "
        "Nothing has settled it yet."
    )


def test_phantom_case_another_report_never_settles_an_already_true_fire() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(
            clock,
            {"view": {"domain": "billing"}},
            **{"open-billing": lambda a: None, "open-billing-blind": lambda a: None},
        )
        s.node = "workspace"
        first = s.fire("workspace.open-billing-blind")  # a real pending fire, FIFO first
        s.node = "workspace"
        already = s.fire("workspace.open-billing")  # already true: settles on its handler
        s.node = "workspace"
        second = s.fire("workspace.open-billing-blind")  # another real pending fire
        s.report({"view.domain": "workspace"}, source="someone-else")
        answers = [s.did_it_work(f.transition_id or "") for f in (first, already, second)]
        s.report({"view.domain": "billing"}, source="someone-else")
        answers.append(s.did_it_work(second.transition_id or ""))
        return answers

    first, already, second_before, second_after = run(main)
    assert first.answer == "worked"  # FIFO: the earliest real fire takes the first report
    assert [(c.key, c.before, c.after) for c in first.commit] == [
        ("view.domain", "billing", "workspace")
    ]
    assert already.answer == "unobservable"  # settled by its handler, not by the report
    assert already.commit == []
    assert second_before.answer == "pending"
    assert second_after.answer == "worked"


def test_writes_without_declarative_verify_get_no_already_true_and_wait_for_a_report() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "billing"}}, **{"open-billing-blind": lambda a: 1})
        fired = s.fire("workspace.open-billing-blind")
        return fired, s.did_it_work(fired.transition_id or "")

    fired, answer = run(main)
    assert fired.model_dump() == {
        "ok": True,
        "did": "workspace.open-billing-blind",
        "effect_status": "pending",
        "transition_id": "workspace.open-billing-blind#1",
        "already_true": None,
        "why": None,
        "outcome": None,
        "outcome_now": None,
        "error": None,
        "refusal": None,
        "refusal_figures": None,
        "materialized": True,
        "failure": None,
    }
    assert answer.answer == "pending"
    assert answer.waiting_on == "a state report writing view.domain"
    assert answer.result == 1


def test_unmaterialized_fire_is_never_stamped_already_true() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"x": 1})
        fired = s.fire("workspace.unwired")
        return fired, s.did_it_work(fired.transition_id or "")

    fired, answer = run(main)
    assert fired.materialized is False
    assert fired.already_true is None
    assert answer.answer == "unmaterialized"
    assert answer.why == (
        "No handler is wired for this action, so nothing was executed and nothing will settle."
    )


def test_contract_path_settles_through_verification_and_navigates() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "workspace"}}, **{"open-billing": lambda a: None})
        fired = s.fire("workspace.open-billing")
        await clock.advance(0.2)
        s.report({"view.domain": "billing"})
        settled = await s.wait(fired.transition_id or "", 5)
        return fired, settled, s.node

    fired, settled, node = run(main)
    assert fired.effect_status == "pending"
    assert settled.effect_status == "settled"
    assert settled.outcome is not None
    assert settled.outcome.poll_cycles == 2
    assert settled.outcome.elapsed_ms == 200
    assert node == "billing"


def test_contract_that_never_holds_fails_with_the_narrative() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"inbox": {"sent_count": 0}}, send=lambda a: None)
        fired = s.fire("workspace.send")
        await clock.advance(6)
        return s.did_it_work(fired.transition_id or "")

    answer = run(main)
    assert answer.answer == "failed"
    assert answer.error == (
        "inbox.sent_count remained 0 after 1 poll cycle (5000ms); nothing observable changed. "
        "The action may have failed silently."
    )


def test_single_flight_refuses_a_second_fire_naming_the_holder() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"inbox": {"sent_count": 0}}, send=lambda a: None)
        first = s.fire("workspace.send")
        second = s.fire("workspace.send")
        s.report({"inbox.sent_count": 1})
        await clock.advance(0)
        third = s.fire("workspace.send")
        return first, second, third

    first, second, third = run(main)
    assert first.ok is True
    assert second.ok is False
    assert second.refusal == "single_flight"
    assert second.error == (
        "workspace.send is single-flight and workspace.send#1 is still pending; wait for it "
        "to settle (did_it_work) before firing again"
    )
    assert third.ok is True
    assert third.transition_id == "workspace.send#3"


def test_single_flight_holds_across_the_sessions_on_one_application() -> None:
    # Sessions of one host share the application: a second session could release an
    # irreversible payload while the first session's release was still pending.
    async def main(clock: VirtualClock) -> Any:
        first = session(clock, {"inbox": {"sent_count": 0}}, send=lambda a: None)
        second = GRAPH.create_session(node="workspace", substrate=first.substrate, clock=clock)
        second.register_actions("workspace", handlers={"send": lambda a: None})
        elsewhere = session(clock, {"inbox": {"sent_count": 0}}, send=lambda a: None)
        held = first.fire("workspace.send")
        refused = second.fire("workspace.send")
        apart = elsewhere.fire("workspace.send")  # another application: not held
        first.report({"inbox.sent_count": 1})
        await clock.advance(0)
        released = second.fire("workspace.send")
        return first.id, held, refused, apart, released

    holder_session, held, refused, apart, released = run(main)
    assert held.ok is True
    assert refused.refusal == "single_flight"
    assert refused.error == (
        f"workspace.send is single-flight and workspace.send#1 of session {holder_session!r} "
        "is still pending; wait for it to settle (did_it_work) before firing again"
    )
    assert refused.refusal_figures is not None
    assert refused.refusal_figures.holder == "workspace.send#1"
    assert refused.refusal_figures.holder_session == holder_session
    assert apart.ok is True
    assert released.ok is True


# The declared verify covers the message's status, not the count it also writes.
SEND_PAGES: dict[str, Any] = {
    "outbox": {
        "actions": {
            "send": {
                "does": "Send a message by id; the app ignores an id it has sent",
                "writes": ["sent_count", "sent.{message_id}.status"],
                "verify": {"sent.{message_id}.status": {"eq": "sent"}},
            },
            "ping": {
                "does": "Ping; writes nothing it declares",
                "verify_expression": "online === true",
            },
        }
    }
}
SEND_GRAPH = build_navigation_graph("mail", pages=SEND_PAGES)


def _outbox(clock: VirtualClock, state: dict[str, Any]) -> Session:
    created = SEND_GRAPH.create_session(node="outbox", state=state, clock=clock)

    def send(args: dict[str, Any]) -> None:
        sent = created.store.current.objects.get("sent", {})
        if args["message_id"] not in sent:  # a duplicate is ignored, answering as usual
            count = created.store.current.objects["sent_count"]
            created.report({"sent_count": count + 1, f"sent.{args['message_id']}.status": "sent"})

    created.register_actions("outbox", handlers={"send": send, "ping": lambda args: None})
    return created


def test_a_contract_that_held_before_the_fire_with_nothing_declared_changed_is_no_success() -> None:
    # A repeated send of one message answered "worked", effect observed, with an empty
    # commit: the contract held before the fire, and nothing the action writes changed.
    async def main(clock: VirtualClock) -> Any:
        s = _outbox(clock, {"sent_count": 0, "sent": {}, "online": True})
        answers = []
        for _ in range(2):
            fired = s.fire("outbox.send", {"message_id": "m1"})
            await s.wait(fired.transition_id or "", 5)
            answers.append(s.did_it_work(fired.transition_id or ""))
        pinged = s.fire("outbox.ping")
        await s.wait(pinged.transition_id or "", 5)
        answers.append(s.did_it_work(pinged.transition_id or ""))
        return answers

    first, again, ping = run(main)
    assert (first.answer, first.effect) == ("worked", "observed")
    assert [change.key for change in first.commit] == ["sent.m1.status", "sent_count"]
    for repeated in (again, ping):
        assert (repeated.answer, repeated.effect, repeated.commit) == (
            "unobservable",
            "unobservable",
            [],
        )
        assert repeated.outcome is not None and repeated.outcome.passed is True
        assert repeated.error is None
        assert repeated.why is not None
        assert repeated.why.startswith(
            "The contract holds, but it held before the action fired too, and none of the "
            "keys it reads changed: nothing observed shows that the action had any effect. "
        )
        assert repeated.why.endswith(repeated.outcome.narrative)


def test_a_contract_that_held_before_with_only_keys_it_does_not_read_changed_is_no_success() -> (
    None
):
    # A repeated send of m1 while the count moved for another message (sent by something
    # assay never fired) answered "worked" on the count's change: the contract, which reads
    # only m1's status, held before the fire, and nothing it reads changed.
    async def main(clock: VirtualClock) -> Any:
        s = _outbox(clock, {"sent_count": 1, "sent": {"m1": {"status": "sent"}}, "online": True})
        fired = s.fire("outbox.send", {"message_id": "m1"})
        s.report({"sent_count": 2, "sent.m2.status": "sent"})  # not this fire's doing
        await s.wait(fired.transition_id or "", 5)
        return s.did_it_work(fired.transition_id or "")

    again = run(main)
    assert (again.answer, again.effect) == ("unobservable", "unobservable")
    assert [change.key for change in again.commit] == ["sent_count"]
    assert again.outcome is not None and again.outcome.passed is True
    assert again.why is not None
    assert again.why.startswith(
        "The contract holds, but it held before the action fired too, and none of the keys "
        "it reads changed: nothing observed shows that the action had any effect. "
    )


def test_a_pending_contract_names_the_keys_its_arguments_resolved() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = SEND_GRAPH.create_session(
            node="outbox", state={"sent_count": 0, "sent": {}}, clock=clock
        )
        s.register_actions("outbox", handlers={"send": lambda args: None})
        fired = s.fire("outbox.send", {"message_id": "m3"})
        await clock.advance(1)
        answer = s.did_it_work(fired.transition_id or "")
        await s.close()
        return answer

    answer = run(main)
    assert answer.waiting_on == (
        'the verify contract {"sent.{message_id}.status":{"eq":"sent"}} to hold (on sent.m3.status)'
    )


def test_an_already_true_fire_checks_its_own_expression_within_its_own_timeout() -> None:
    # The fire's verify_timeout_ms was ignored (the action's 5000 ms applied), and while
    # the expression was checked the answer said it waited on the handler, long returned.
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "billing"}}, **{"open-billing": lambda a: None})
        fired = s.fire("workspace.open-billing", verify_expression="x > 1", verify_timeout_ms=500)
        await clock.advance(0.3)
        midway = s.did_it_work(fired.transition_id or "")
        await clock.advance(0.3)
        return fired, midway, s.did_it_work(fired.transition_id or "")

    fired, midway, settled = run(main)
    assert fired.already_true is not None
    assert midway.answer == "pending"
    assert midway.waiting_on == (
        'the verify contract {"view.domain":{"eq":"billing"}} (declared) and x > 1 (given with '
        "the fire) to hold"
    )
    assert settled.answer == "failed"
    assert settled.outcome is not None
    assert settled.outcome.elapsed_ms == 500


def test_an_action_not_available_here_is_refused_naming_where_it_is() -> None:
    async def main(clock: VirtualClock) -> Any:
        return session(clock, {}).fire("billing.pay")

    refused = run(main)
    assert refused.refusal == "not_available_here"
    assert (
        refused.error == "billing.pay is not available at 'workspace'; it is available at billing"
    )


def test_low_confidence_refuses_with_both_figures() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "x"}}, **{"open-billing": lambda a: None})
        await clock.advance(120)  # nothing heard for four expected intervals
        return s.fire("workspace.open-billing")

    refused = run(main)
    assert refused.refusal == "low_confidence"
    assert refused.error is not None
    assert refused.error.startswith(
        "confidence 0.00 is below the 0.50 that a reversible action needs (freshness 0.00"
    )


def test_no_writes_no_contract_settles_on_handler_completion() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {}, refresh=lambda a: None)
        fired = s.fire("workspace.refresh")
        return fired, s.did_it_work(fired.transition_id or "")

    fired, answer = run(main)
    assert fired.effect_status == "settled"
    assert answer.answer == "unobservable"


def test_a_later_report_that_undoes_the_effect_shows_in_outcome_now() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "workspace"}}, **{"open-billing": lambda a: None})
        fired = s.fire("workspace.open-billing")
        s.report({"view.domain": "billing"})
        settled = await s.wait(fired.transition_id or "", 5)
        s.report({"view.domain": "workspace"})
        return settled, s.did_it_work(fired.transition_id or "")

    settled, later = run(main)
    assert settled.outcome_now is None
    assert later.answer == "worked"  # the receipt is never rewritten
    assert later.outcome is not None and later.outcome.passed is True
    assert later.outcome_now is not None
    assert later.outcome_now.result is False
    assert (
        later.outcome_now.detail
        == "since settlement the contract no longer holds (state version 2)"
    )


def test_journey_counts_settled_steps() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "billing"}}, **{"open-billing": lambda a: None})
        journey = s.start_journey("pay the bill", ["workspace.open-billing", "billing.pay"])
        s.fire("workspace.open-billing")
        return journey.progress()

    progress = run(main)
    assert (progress.done, progress.total, progress.next, progress.complete) == (
        1,
        2,
        "billing.pay",
        False,
    )


@pytest.mark.parametrize(
    ("steps", "error", "message"),
    [
        (
            ["workspace.open-billing", "billing.refund"],
            GraphError,
            "the journey 'j': no action is called 'billing.refund', so it could never be done; "
            "steps are page.action ids of the graph",
        ),
        (
            "workspace.open-billing",
            WrongTypeError,
            "the journey 'j': steps must be a list of action ids, not the string "
            "'workspace.open-billing'",
        ),
        ([], GraphError, "the journey 'j' has no steps; give it one action id or more"),
    ],
)
def test_a_journey_that_could_never_be_done_is_refused(
    steps: Any, error: type[Exception], message: str
) -> None:
    s = GRAPH.create_session(node="workspace", state=BASE)
    with pytest.raises(error) as raised:
        s.start_journey("j", steps)
    assert str(raised.value) == message
    assert s.journeys == {}


@pytest.mark.parametrize(
    ("pages", "message"),
    [
        ({"p": {"actions": {"a": {"does": "x", "verify": {"k": {"eqq": 1}}}}}}, "p.a: verify: "),
        (
            {"p": {"actions": {"a": {"does": "x", "writes": ["a.b"], "verify": {"c.d": 1}}}}},
            "p.a: verify: the contract reads 'c.d', which is outside the declared writes (a.b)",
        ),
        (
            {"p": {"actions": {"a": {"does": "x", "reversibility": "irreversible"}}}},
            "p.a: verify: an irreversible action must declare a verify contract",
        ),
        ({"p": {"actions": {"a.b": {"does": "x"}}}}, "p.a.b: the action name 'a.b' cannot"),
        ({"p#1": {"actions": {}}}, "p#1: the page name 'p#1' cannot form a transition id"),
        ({"p": {"actions": {"a": {"does": "x", "to": "nowhere"}}}}, "p.a: to: no page is called"),
        ({"p": {"actions": {"a": {"does": "x", "speed": 1}}}}, "p.a: speed: unknown field"),
        ({"p": {"actions": {"a": {"writes": []}}}}, "p.a: does: expected a sentence"),
    ],
)
def test_declaration_errors_name_page_action_and_field(pages: Any, message: str) -> None:
    from assay.errors import GraphError

    with pytest.raises(GraphError) as caught:
        build_navigation_graph("app", pages=pages)
    assert str(caught.value).startswith(message), str(caught.value)


CANCEL = build_navigation_graph(
    "shop",
    pages={
        "desk": {
            "actions": {
                "cancel": {
                    "does": "Cancel an order",
                    "writes": ["orders.{order_id}.status"],
                    "verify": {"orders.{order_id}.status": "cancelled"},
                }
            }
        }
    },
)


def test_an_argument_with_a_dot_stays_one_path_segment() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = CANCEL.create_session(
            node="desk", state={"orders": {"a.b": {"status": "cancelled"}}}, clock=clock
        )
        s.register_actions("desk", handlers={"cancel": lambda a: None})
        return s.fire("desk.cancel", {"order_id": "a.b"})

    fired = run(main)
    assert fired.already_true is not None
    assert [e.key for e in fired.already_true] == ['orders["a.b"].status']


def test_an_argument_with_brackets_is_bound_safely() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = CANCEL.create_session(node="desk", state={"orders": {}}, clock=clock)
        s.register_actions("desk", handlers={"cancel": lambda a: None})
        fired = s.fire("desk.cancel", {"order_id": "x]y"})
        s.report({"orders": {"x]y": {"status": "cancelled"}}})
        return await s.wait(fired.transition_id or "", 1)

    settled = run(main)
    assert settled.effect_status == "settled"


def test_a_missing_argument_is_refused_before_anything_runs() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = CANCEL.create_session(node="desk", state={"orders": {}}, clock=clock)
        s.register_actions("desk", handlers={"cancel": lambda a: None})
        return s.fire("desk.cancel", {})

    refused = run(main)
    assert refused.refusal == "bad_arguments"
    assert (
        refused.error
        == "desk.cancel needs the argument order_id (used in its writes or verify contract)"
    )


def test_args_that_are_not_a_mapping_are_refused_naming_what_was_given() -> None:
    calls: list[Any] = []

    async def main(clock: VirtualClock) -> list[Any]:
        s = CANCEL.create_session(node="desk", state={"orders": {}}, clock=clock)
        s.register_actions("desk", handlers={"cancel": calls.append})
        # dict() raised TypeError or ValueError for these, or took pairs as names.
        return [s.fire("desk.cancel", given) for given in ([1], "ab", 5, (("order_id", "o"),))]

    refused = run(main)
    assert [(r.refusal, r.error) for r in refused] == [
        (
            "bad_arguments",
            f"args must be an object mapping argument names to values, not {kind}; pass None "
            "or {} for none",
        )
        for kind in ("list", "str", "int", "tuple")
    ]
    assert calls == []


def test_arguments_of_the_wrong_type_raise_before_anything_is_done() -> None:
    calls: list[Any] = []

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {}, **{"open-billing": calls.append})
        for given, said in (
            ({"action_id": 5}, "action_id must be a string, not int"),
            ({"source": 5}, "source must be a string, not int"),
            ({"verify_expression": 5}, "verify_expression must be a string or None, not int"),
            (
                {"verify_timeout_ms": "5"},
                "verify_timeout_ms must be a whole number of milliseconds or None, not str",
            ),
            (
                {"verify_timeout_ms": True},
                "verify_timeout_ms must be a whole number of milliseconds or None, not bool",
            ),
        ):
            fire = {"action_id": "workspace.open-billing", **given}
            with pytest.raises(WrongTypeError, match=f"^{said}$"):
                s.fire(**fire)
        assert s.transitions == {}
        return s.fire("workspace.open-billing", verify_timeout_ms=-5)

    refused = run(main)
    assert (refused.refusal, refused.error) == (
        "bad_arguments",
        "verify_timeout_ms must be from 0 to 86,400,000 milliseconds (a day), not -5",
    )
    assert calls == []


def test_a_wait_ceiling_that_is_not_a_number_of_seconds_raises() -> None:
    """A string or None raised a bare TypeError from asyncio's comparison, and NaN waited
    for a timer that never fires; 0 or less answers at once."""

    async def main(clock: VirtualClock) -> str:
        s = session(clock, {}, **{"open-billing": lambda args: None})
        fired = s.fire("workspace.open-billing", verify_timeout_ms=60_000)
        assert fired.transition_id is not None
        for ceiling, said in (("2", "str"), (None, "NoneType"), (True, "bool"), (math.nan, "NaN")):
            with pytest.raises(
                WrongTypeError, match=f"^ceiling_s must be a number of seconds, not {said}$"
            ):
                await s.wait(fired.transition_id, ceiling)  # type: ignore[arg-type]
        return (await s.wait(fired.transition_id, -1)).effect_status

    assert run(main) == "pending"


def test_wiring_mistakes_name_what_is_declared_and_what_a_handler_is() -> None:
    async def main(clock: VirtualClock) -> None:
        s = session(clock, {})
        with pytest.raises(
            GraphError, match=r"the actions of the page 'billing' are: billing\.pay"
        ):
            s.register_actions("billing", handlers={"refund": lambda a: None})
        with pytest.raises(WrongTypeError, match=r"the handler for billing\.pay is int, not a"):
            s.register_actions("billing", handlers={"pay": 5})
        with pytest.raises(GraphError, match="no page is called 'attic'; pages are"):
            GRAPH.create_session(node="attic")

    run(main)


def test_an_unknown_transition_is_not_found_naming_the_session() -> None:
    async def main(clock: VirtualClock) -> None:
        s = session(clock, {})
        with pytest.raises(NotFoundError, match=r"has no transition 'x#1'; transition ids") as e:
            s.did_it_work("x#1")
        assert (e.value.kind, e.value.id) == ("transition", "x#1")
        with pytest.raises(NotFoundError, match=f"session {s.id!r} has no transition 'x#2'"):
            await s.wait("x#2", 1)

    run(main)


def test_a_fire_outside_a_running_event_loop_is_refused_before_anything_is_done() -> None:
    from assay.ledger import Ledger, MemoryBackend

    ledger = Ledger(MemoryBackend())
    calls: list[dict[str, Any]] = []
    s = GRAPH.create_session(node="workspace", state=BASE, evidence=ledger)
    s.register_actions("workspace", handlers={"send": calls.append})
    with pytest.raises(SessionError) as raised:
        s.fire("workspace.send")
    assert str(raised.value) == (
        "Session.fire needs a running asyncio event loop, where the fire settles and is "
        "verified; call it from async code, such as a coroutine run by asyncio.run"
    )
    # Nothing ran, nothing was recorded, and the single-flight action is free.
    assert (calls, ledger.size, s.flights) == ([], 0, {})


HALF_PAIR = (
    "a string holds half of a surrogate pair, such as \\ud800 alone, which is not Unicode "
    "text; send each character whole or as a full surrogate pair"
)


@pytest.mark.parametrize(
    ("fire", "error"),
    [
        ({"args": {"note": "\ud800"}}, f"args.note: {HALF_PAIR}"),
        (
            {"args": {"tags": {1, 2}}},
            "args.tags: set is not a JSON type; use objects, arrays, "
            "strings, numbers, booleans or null",
        ),
        (
            {"args": {"n": float("nan")}},
            "args.n: nan is not a JSON number; use a finite number, or null for no value",
        ),
        (
            {"args": {"id": 2**53}},
            "args.id: the integer 9007199254740992 is beyond "
            "±(2**53 - 1), where JSON numbers stop being exact; send it as a string",
        ),
        ({"args": {}, "source": "agent-\udc80"}, f"source: {HALF_PAIR}"),
        ({"args": {}, "verify_expression": "x !== '\udfff'"}, f"verify_expression: {HALF_PAIR}"),
    ],
)
@pytest.mark.parametrize("ledger", [False, True], ids=["no ledger", "ledger"])
def test_a_fire_the_ledger_could_not_record_is_refused_with_or_without_one(
    fire: dict[str, Any], error: str, ledger: bool
) -> None:
    """What a handler may be given does not depend on whether a ledger is attached: args
    are JSON RFC 8785 writes exactly, or the fire is refused before anything runs."""
    from assay.ledger import Ledger, MemoryBackend

    evidence = Ledger(MemoryBackend()) if ledger else None
    calls: list[dict[str, Any]] = []

    async def main(clock: VirtualClock) -> Any:
        s = GRAPH.create_session(node="workspace", state=BASE, clock=clock, evidence=evidence)
        s.register_actions("workspace", handlers={"refresh": calls.append})
        return s.fire("workspace.refresh", **fire)

    refused = run(main)
    assert (refused.effect_status, refused.refusal, refused.error) == (
        "refused",
        "bad_arguments",
        error,
    )
    assert calls == []
    if evidence is not None:
        (entry,) = evidence.query()
        assert (entry.kind, entry.body["refusal"], entry.body["error"]) == (
            "refusal",
            "bad_arguments",
            error,
        )


def test_a_handler_is_given_a_plain_copy_of_the_args_as_recorded() -> None:
    calls: list[dict[str, Any]] = []

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {}, refresh=calls.append)
        args: dict[str, Any] = {"ids": (1, 2), "filter": {"from": "ada"}}
        s.fire("workspace.refresh", args)
        args["filter"]["from"] = "mallory"  # changed by the caller after the fire
        return None

    run(main)
    assert calls == [{"ids": [1, 2], "filter": {"from": "ada"}}]


def test_a_declaration_holding_half_a_surrogate_pair_is_refused_naming_its_field() -> None:
    pages = {
        "p": {
            "actions": {"a": {"does": "x", "writes": ["k"], "verify_expression": "k !== '\ud800'"}}
        }
    }
    with pytest.raises(GraphError) as raised:
        build_navigation_graph("desk", pages=pages)
    assert str(raised.value) == f"p.a: verify_expression: {HALF_PAIR}"


def test_an_async_handler_that_raises_after_the_contract_held_is_a_failure() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = CANCEL.create_session(
            node="desk", state={"orders": {"o1": {"status": "x"}}}, clock=clock
        )

        async def cancel(args: dict[str, Any]) -> None:
            s.report({"orders.o1.status": "cancelled"})
            await asyncio.sleep(0)
            raise RuntimeError("the refund failed")

        s.register_actions("desk", handlers={"cancel": cancel})
        fired = s.fire("desk.cancel", {"order_id": "o1"})
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or "")

    answer = run(main)
    assert answer.answer == "failed"
    assert answer.error == "the handler raised RuntimeError: the refund failed"


def test_an_async_handler_that_ends_cancelled_fails_at_once_saying_so() -> None:
    """A handler whose own work was cancelled did not finish: that is its failure, named as
    such, not a contract that timed out with nothing observable changed."""

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {})

        async def send(args: dict[str, Any]) -> None:
            upload = asyncio.ensure_future(asyncio.sleep(3600))
            upload.cancel()
            await upload  # raises CancelledError into the handler

        s.register_actions("workspace", handlers={"send": send})
        fired = s.fire("workspace.send")
        await clock.advance(0.001)
        return s.did_it_work(fired.transition_id or "")

    answer = run(main)
    assert answer.answer == "failed"
    assert answer.error == "the handler was cancelled before it finished (CancelledError)"


def test_closing_a_session_settles_what_is_pending_as_unobservable_saying_so() -> None:
    """Its handlers are cancelled, not failed; what was pending settles as unobservable, in
    the ledger too, instead of staying a fire that never settles."""
    from assay.ledger import Ledger, MemoryBackend

    ledger = Ledger(MemoryBackend())

    async def main(clock: VirtualClock) -> Any:
        s = GRAPH.create_session(node="workspace", state=BASE, clock=clock, evidence=ledger)
        started = asyncio.Event()

        async def send(args: dict[str, Any]) -> None:
            started.set()
            await asyncio.sleep(3600)

        s.register_actions("workspace", handlers={"send": send})
        fired = s.fire("workspace.send")
        await started.wait()
        await clock.advance(0.25)
        await s.close()
        return s.did_it_work(fired.transition_id or ""), s.flights

    answer, flights = run(main)
    closed = (
        "the session was closed while it waited on the handler to finish and the verify "
        "contract inbox.sent_count > 0 to hold (250 ms); nothing settled it, and nothing more "
        "of it is observed"
    )
    assert (answer.answer, answer.error, answer.why) == ("unobservable", closed, closed)
    assert flights == {}  # the single-flight action is free again
    fire, settlement = ledger.query()
    assert (fire.kind, settlement.kind) == ("fire", "settlement")
    assert (settlement.body["answer"], settlement.body["error"]) == ("unobservable", closed)


def test_writes_only_action_answers_byte_identically_whether_or_not_it_already_holds() -> None:
    async def main(clock: VirtualClock) -> Any:
        results = []
        for domain in ("billing", "workspace"):
            s = session(
                clock, {"view": {"domain": domain}}, **{"open-billing-blind": lambda a: None}
            )
            fired = s.fire("workspace.open-billing-blind")
            answer = s.did_it_work(fired.transition_id or "")
            results.append((fired.model_dump_json(), answer.model_dump_json()))
        return results

    holds, does_not_hold = run(main)
    assert holds == does_not_hold


def test_redacted_keys_never_appear_in_fire_results_or_answers() -> None:
    graph = build_navigation_graph(
        "vault",
        pages={
            "vault": {
                "actions": {
                    "rotate": {
                        "does": "Rotate the API token",
                        "writes": ["user.token"],
                        "verify": {"user.token": {"matches": "^sk-"}},
                    },
                    "keep": {
                        "does": "Keep the API token",
                        "writes": ["user.token"],
                        "verify": {"user.token": {"exists": True}},
                    },
                }
            }
        },
    )

    async def main(clock: VirtualClock) -> Any:
        s = graph.create_session(
            node="vault",
            state={"user": {"token": "sk-live-OLD"}},
            clock=clock,
            redaction=["user.token"],
        )
        s.register_actions(
            "vault",
            handlers={
                "rotate": lambda a: s.report({"user.token": "sk-live-NEW"}),
                "keep": lambda a: None,
            },
        )
        kept = s.fire("vault.keep")
        rotated = s.fire("vault.rotate")
        settled = await s.wait(rotated.transition_id or "", 1)
        answers = [s.did_it_work(t.transition_id or "") for t in (kept, rotated)]
        return [kept, settled, *answers]

    texts = [item.model_dump_json() for item in run(main)]
    assert texts[0].count('"redacted":true') == 1
    for text in texts:
        assert "sk-live" not in text


def test_one_report_settles_the_earliest_fire_per_changed_key() -> None:
    graph = build_navigation_graph(
        "two",
        pages={
            "p": {
                "actions": {
                    "a": {"does": "Write a", "writes": ["a"]},
                    "b": {"does": "Write b", "writes": ["b"]},
                }
            }
        },
    )

    async def main(clock: VirtualClock) -> Any:
        s = graph.create_session(node="p", state={"a": 0, "b": 0}, clock=clock)
        s.register_actions("p", handlers={"a": lambda x: None, "b": lambda x: None})
        first_a = s.fire("p.a")
        second_a = s.fire("p.a")
        only_b = s.fire("p.b")
        s.report({"a": 1, "b": 1})
        return [s.did_it_work(f.transition_id or "").answer for f in (first_a, second_a, only_b)]

    assert run(main) == ["worked", "pending", "worked"]


def test_an_unknown_action_is_answered_with_the_ones_it_may_have_meant() -> None:
    """An agent that drops the page or spells the separators its own way is pointed at the
    action; one merely spelt alike (pay for repay, arm for disarm) is never offered."""

    async def main(clock: VirtualClock) -> list[str | None]:
        s = session(clock, {})
        given = ("open-billing", "Workspace.open_billing", "billing.openBilling", "repay", "nope")
        return [s.fire(action).error for action in given]

    available = "available here: workspace.open-billing, workspace.open-billing-blind, "
    assert run(main) == [
        f"no action is called 'open-billing' (did you mean 'workspace.open-billing'?); {available}"
        "workspace.refresh, workspace.send, workspace.unwired",
        "no action is called 'Workspace.open_billing' (did you mean 'workspace.open-billing'?); "
        f"{available}workspace.refresh, workspace.send, workspace.unwired",
        "no action is called 'billing.openBilling' (did you mean 'workspace.open-billing'?); "
        f"{available}workspace.refresh, workspace.send, workspace.unwired",
        f"no action is called 'repay'; {available}workspace.refresh, workspace.send, "
        "workspace.unwired",
        f"no action is called 'nope'; {available}workspace.refresh, workspace.send, "
        "workspace.unwired",
    ]


def test_a_session_holds_its_latest_settled_transitions_and_every_pending_one() -> None:
    """A session that fires for weeks held every transition it ever made, with its
    snapshots: about 10 KB per fire, never freed. The ledger keeps the evidence of all."""

    async def main(clock: VirtualClock) -> Any:
        s = GRAPH.create_session(node="workspace", state=BASE, clock=clock, keep_settled=2)
        s.register_actions(
            "workspace",
            handlers={"refresh": lambda a: None, "open-billing-blind": lambda a: None},
        )
        blind = s.fire("workspace.open-billing-blind")  # pending: no report will come
        refreshed = [s.fire("workspace.refresh").transition_id for _ in range(4)]
        with pytest.raises(NotFoundError) as let_go:
            s.did_it_work("workspace.refresh#1")
        with pytest.raises(NotFoundError) as never:
            s.did_it_work("workspace.refresh#5")
        # Ids it never minted are not "let go": a leading zero, other digits, 5,000 digits
        # (which int() refused with a ValueError).
        for number in ("01", "\u0661", "9" * 5000):
            unminted = f"workspace.refresh#{number}"
            assert not s.let_go(unminted)
            with pytest.raises(NotFoundError, match="has no transition"):
                s.did_it_work(unminted)
        return (
            blind.transition_id,
            refreshed,
            list(s.transitions),
            s.fired,
            s.did_it_work(blind.transition_id or "").answer,
            str(let_go.value),
            str(never.value),
        )

    blind, refreshed, held, fired, answer, let_go, never = run(main)
    assert refreshed == [f"workspace.refresh#{n}" for n in (1, 2, 3, 4)]
    assert held == [blind, "workspace.refresh#3", "workspace.refresh#4"]
    assert (fired, answer) == (5, "pending")
    assert re.fullmatch(
        r"session 'desk-[0-9a-f]{12}' no longer holds transition 'workspace\.refresh#1': it "
        r"settled, and a session holds only its latest 2 settled transitions; its evidence is "
        r"in the ledger, by session and transition",
        let_go,
    )
    assert "has no transition 'workspace.refresh#5'" in never
    with pytest.raises(WrongTypeError, match="keep_settled must be a whole number"):
        GRAPH.create_session(node="workspace", keep_settled=0)


def test_a_closed_session_refuses_to_fire() -> None:
    # A fire after close ran its handler and answered pending on a report that could never
    # settle it: the closed session no longer observes the state.
    async def main(clock: VirtualClock) -> Any:
        calls: list[Any] = []
        s = session(clock, {}, **{"open-billing-blind": calls.append})
        await s.close()
        with pytest.raises(SessionError, match=r"session '.*' is closed: it no longer observes"):
            s.fire("workspace.open-billing-blind")
        return calls, s.fired

    assert run(main) == ([], 0)


def test_thresholds_are_tiers_with_numbers_from_0_to_1_the_rest_defaults() -> None:
    partial = GRAPH.create_session(node="workspace", thresholds={"irreversible": 0.99})
    assert partial.thresholds == {**DEFAULT_THRESHOLDS, Reversibility.IRREVERSIBLE: 0.99}
    # A NaN threshold turned the confidence gate off; the rest failed only when firing.
    for wrong, says in (
        ({"irreversible": math.nan}, "irreversible must be a number from 0 to 1, not nan"),
        ({"irreversible": "0.9"}, "irreversible must be a number from 0 to 1, not '0.9'"),
        ({"irreversible": True}, "irreversible must be a number from 0 to 1, not True"),
        ({"reckless": 0.1}, "'reckless' is not a reversibility tier; tiers are reversible, "),
    ):
        with pytest.raises(WrongTypeError, match=re.escape(f"thresholds: {says}")):
            GRAPH.create_session(node="workspace", thresholds=wrong)


def test_a_write_key_placeholder_takes_a_string_or_an_integer() -> None:
    # None, True, 1.0 and objects were written with str(): orders.None.status and the like,
    # keys no application writes, so the fire waited on a report that could never come.
    pages = {"desk": {"actions": {"ship": {"does": "Ship", "writes": ["orders.{id}.status"]}}}}
    graph = build_navigation_graph("shop", pages=pages)

    async def main(clock: VirtualClock) -> Any:
        s = graph.create_session(node="desk", state={"orders": {}}, clock=clock)
        s.register_actions("desk", handlers={"ship": lambda args: None})
        answers = [s.fire("desk.ship", {"id": value}) for value in (None, True, 1.0, {"x": 1})]
        fine = [s.fire("desk.ship", {"id": value}) for value in ("a.b", 7)]
        waits = [s.did_it_work(f.transition_id or "").waiting_on for f in fine]
        await s.close()
        return answers, waits

    refused, waits = run(main)
    assert [r.refusal for r in refused] == ["bad_arguments"] * 4
    assert refused[0].error == (
        "writes key 'orders.{id}.status': argument 'id' stands in the path, so it must be a "
        "string or an integer, got null"
    )
    assert waits == [
        'a state report writing orders["a.b"].status',
        "a state report writing orders.7.status; 1 earlier fire(s) are queued before it",
    ]


def test_a_verification_that_cannot_run_fails_rather_than_pending_for_ever() -> None:
    # verify_timeout_ms of 10**400 killed the verification task with an OverflowError, and
    # did_it_work went on answering pending, waiting on the contract, with nothing running.
    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "workspace"}}, **{"open-billing": lambda a: None})
        huge = s.fire("workspace.open-billing", verify_timeout_ms=10**400)
        return huge

    huge = run(main)
    assert huge.refusal == "bad_arguments"
    assert huge.error == (
        f"verify_timeout_ms must be from 0 to 86,400,000 milliseconds (a day), not {10**400}"
    )
    with pytest.raises(GraphError, match=r"verify_timeout_ms: expected a whole number of "):
        build_navigation_graph(
            "desk", pages={"p": {"actions": {"a": {"does": "A", "verify_timeout_ms": 10**400}}}}
        )


def test_a_verification_that_raises_settles_failed_saying_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the store went away")

    monkeypatch.setattr("assay.verify.loop.Verification.run", broken)

    async def main(clock: VirtualClock) -> Any:
        s = session(clock, {"view": {"domain": "workspace"}}, **{"open-billing": lambda a: None})
        fired = s.fire("workspace.open-billing")
        await clock.advance(1)
        return s.did_it_work(fired.transition_id or ""), s.tasks

    answer, tasks = run(main)
    assert (answer.answer, answer.error) == (
        "failed",
        "the verification could not run (RuntimeError: the store went away), so nothing "
        "established the effect",
    )
    assert not tasks


def test_a_written_key_with_a_placeholder_counts_for_coverage_by_its_fixed_part() -> None:
    # Coverage ignored orders.{order_id}.status: with no orders at all it read 1.0, and an
    # irreversible fire went ahead on a state that held none of what it writes.
    pages = {
        "desk": {
            "actions": {
                "cancel": {
                    "does": "Cancel an order",
                    "writes": ["orders.{order_id}.status", "{tenant}.audit", "log.last"],
                    "verify": {"orders.{order_id}.status": "cancelled"},
                    "reversibility": "irreversible",
                }
            }
        }
    }
    graph = build_navigation_graph("shop", pages=pages)
    assert graph.declared_writes() == ["orders", "log.last"]

    async def main(clock: VirtualClock) -> Any:
        s = graph.create_session(node="desk", state={"log": {"last": 1}}, clock=clock)
        s.register_actions("desk", handlers={"cancel": lambda args: None})
        return s.fire("desk.cancel", {"order_id": "A1", "tenant": "t"})

    refused = run(main)
    assert refused.refusal == "low_confidence"
    assert refused.refusal_figures is not None
    assert refused.refusal_figures.coverage == 0.5


def test_a_low_confidence_refusal_shows_its_figures_apart() -> None:
    # "confidence 0.95 is below the 0.95 that ..." for a confidence of 0.946.
    async def main(clock: VirtualClock) -> Any:
        s = GRAPH.create_session(
            node="workspace", state=BASE, clock=clock, thresholds={"reversible": 0.95}
        )
        s.register_actions("workspace", handlers={"open-billing": lambda a: None})
        await clock.advance(33.24)  # freshness falls from 1 after 30 s, to 0 at 90 s
        return s.fire("workspace.open-billing")

    refused = run(main)
    assert refused.refusal_figures is not None
    assert refused.refusal_figures.confidence == pytest.approx(0.946)
    assert refused.error is not None
    assert refused.error.startswith("confidence 0.946 is below the 0.950 that a reversible")


def test_a_contract_on_a_key_whose_object_appears_with_another_key_holds_when_it_does() -> None:
    # orders.o1 === undefined could not be evaluated while orders was missing; a report
    # added orders.o2 and the contract held, but the fire failed at its deadline: the change
    # to orders.o2 did not wake the verification waiting on orders.o1.
    graph = build_navigation_graph(
        "desk",
        pages={
            "p": {
                "actions": {
                    "clear": {
                        "does": "clear order o1",
                        "verify_expression": "orders.o1 === undefined",
                        "verify_timeout_ms": 1000,
                    }
                }
            }
        },
    )

    async def main(clock: VirtualClock) -> Any:
        s = graph.create_session(node="p", state={}, clock=clock)
        s.register_actions("p", handlers={"clear": lambda args: None})
        fired = s.fire("p.clear")
        await clock.advance(0.1)
        s.report({"orders.o2.status": "open"})
        await clock.advance(2)
        return s.did_it_work(fired.transition_id or "")

    answer = run(main)
    assert (answer.answer, answer.error) == ("worked", None)
    assert answer.outcome is not None and answer.outcome.poll_cycles == 2
