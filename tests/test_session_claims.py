"""Claims: one observed change is credited to at most one of the fires pending when it landed.

Two fires of the demo's ``inbox.send`` of one message id, both pending when the outpost
delivered it once (it ignores an id it has sent), both answered ``worked`` on one change:
one of them was a false pass. Nothing here waits on real time (the outpost delivers on the
loop's next turn); the clock is virtual, and the order in which fires settle is the event
loop's, the same every run.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from assay.clock import VirtualClock
from assay.examples.outpost import GRAPH as OUTPOST
from assay.examples.outpost import Outpost
from assay.graph import Session, build_navigation_graph
from assay.graph.answers import answer_from_evidence
from assay.ledger import Ledger, MemoryBackend

T = TypeVar("T")


def run(main: Callable[[VirtualClock], Awaitable[T]]) -> T:
    return asyncio.run(main(VirtualClock()))


def outpost_session(clock: VirtualClock, app: Outpost, **options: Any) -> Session:
    """A session on the demo's graph, its inbox pushed to the store as the outpost's are."""
    s = OUTPOST.create_session(node="inbox", state=copy.deepcopy(app.state), clock=clock, **options)
    app.subscribe(lambda values: s.report(values, source="outpost"))

    def send(args: dict[str, Any]) -> None:
        app.send(args["message_id"], args["to"], args.get("subject", ""))

    s.register_actions("inbox", handlers={"send": send})
    return s


def unattributed(keys: str, holder: str) -> str:
    return (
        f"the change to {keys} was first observed by {holder}, pending as well when it "
        "landed; which of the fires made it cannot be told from the state (an application "
        "may make one change for two requests), so nothing observed shows that this fire "
        "had any effect"
    )


def test_two_pending_sends_of_one_message_delivered_once_answer_worked_only_once() -> None:
    ledger = Ledger(MemoryBackend())

    async def main(clock: VirtualClock) -> Any:
        app = Outpost(delivery_delay=0)  # delivered on the next turn of the loop
        s = outpost_session(clock, app, evidence=ledger)
        mail = {"message_id": "m1", "to": "ops@example.com"}
        first, second = s.fire("inbox.send", mail), s.fire("inbox.send", mail)
        assert first.effect_status == second.effect_status == "pending"
        await clock.advance(0)
        answers = [s.did_it_work(f.transition_id or "") for f in (first, second)]
        return answers, app.state["inbox"]["sent_count"]

    (worked, other), sent_count = run(main)
    assert sent_count == 15  # the outpost delivered the message once
    assert (worked.answer, worked.effect, worked.error) == ("worked", "observed", None)
    assert [c.key for c in worked.commit] == [
        "inbox.sent.m1.status",
        "inbox.sent.m1.subject",
        "inbox.sent.m1.to",
        "inbox.sent_count",
    ]
    why = unattributed("inbox.sent.m1.status", "inbox.send#1")
    assert (other.answer, other.effect, other.error, other.why) == (
        "unobservable",
        "unobservable",
        why,
        why,
    )
    assert other.outcome is not None and other.outcome.passed is True
    assert other.commit == worked.commit  # what was seen is kept; it is not credited
    settlements = [entry for entry in ledger.query() if entry.kind == "settlement"]
    assert [(e.transition, e.body["answer"]) for e in settlements] == [
        ("inbox.send#1", "worked"),
        ("inbox.send#2", "unobservable"),
    ]
    fire = next(e for e in ledger.query() if e.kind == "fire" and e.transition == "inbox.send#2")
    read_back = answer_from_evidence("inbox.send#2", fire.body, "settlement", settlements[1].body)
    assert (read_back.answer, read_back.error) == ("unobservable", why)
    assert read_back.why.startswith(why)


def test_two_pending_sends_of_different_messages_each_worked_on_its_own_change() -> None:
    async def main(clock: VirtualClock) -> Any:
        app = Outpost(delivery_delay=0)
        s = outpost_session(clock, app)
        fired = [
            s.fire("inbox.send", {"message_id": m, "to": "ops@example.com"}) for m in ("m1", "m2")
        ]
        await clock.advance(0)
        return [s.did_it_work(f.transition_id or "") for f in fired], app.state["inbox"]

    (one, two), inbox = run(main)
    assert inbox["sent_count"] == 16
    assert (one.answer, one.effect, one.error) == ("worked", "observed", None)
    assert (two.answer, two.effect, two.error) == ("worked", "observed", None)


def test_sessions_on_one_substrate_credit_the_change_once_naming_the_other_session() -> None:
    async def main(clock: VirtualClock) -> Any:
        app = Outpost(delivery_delay=0)
        s = outpost_session(clock, app)
        other = OUTPOST.create_session(node="inbox", substrate=s.substrate, clock=clock)
        other.register_actions("inbox", handlers={"send": lambda args: None})  # the app ignores it
        mail = {"message_id": "m1", "to": "ops@example.com"}
        first, second = s.fire("inbox.send", mail), other.fire("inbox.send", mail)
        await clock.advance(0)
        return (
            s.id,
            s.did_it_work(first.transition_id or ""),
            other.did_it_work(second.transition_id or ""),
        )

    holder_session, worked, other = run(main)
    assert worked.answer == "worked"
    assert other.answer == "unobservable"
    assert other.error == unattributed(
        "inbox.sent.m1.status", f"inbox.send#1 of session {holder_session!r}"
    )


# Hand-driven: fires stay pending until the test lands their effect.
MAIL_PAGES: dict[str, Any] = {
    "outbox": {
        "actions": {
            "send": {
                "does": "Send a message by id; the app ignores an id it has sent",
                "writes": ["sent_count", "sent.{message_id}.status"],
                "verify": {"sent.{message_id}.status": {"eq": "sent"}},
            },
            "resend": {
                "does": "Send again, checked after a settlement wait",
                "writes": ["sent_count", "sent.{message_id}.status"],
                "verify": {"sent.{message_id}.status": {"eq": "sent"}},
                "settle_ms": 100,
            },
            "queue": {
                "does": "Send, declaring writes only",
                "writes": ["sent_count", "sent.{message_id}.status"],
            },
            "bump": {
                "does": "Add one to the count",
                "writes": ["count"],
                "verify_expression": "count >= args.at",
                "input": {"type": "object", "properties": {"at": {"type": "integer"}}},
            },
            "bump-late": {
                "does": "Add one to the count, checked after a settlement wait",
                "writes": ["count"],
                "verify_expression": "count >= args.at",
                "input": {"type": "object", "properties": {"at": {"type": "integer"}}},
                "settle_ms": 100,
            },
            "touch": {
                "does": "Touch the revision (already at least 1)",
                "writes": ["rev"],
                "verify": {"rev": {"gte": 1}},
            },
        }
    }
}
MAIL = build_navigation_graph("mail", pages=MAIL_PAGES)
START: dict[str, Any] = {"sent_count": 0, "sent": {}, "count": 0, "rev": 1}


def mail_session(clock: VirtualClock, **handlers: Any) -> Session:
    s = MAIL.create_session(node="outbox", state=START, clock=clock)
    names = ("send", "resend", "queue", "bump", "bump-late", "touch")
    quiet = {name: (lambda args: None) for name in names}
    s.register_actions("outbox", handlers={**quiet, **handlers})
    return s


def land(s: Session, message_id: str) -> None:
    """The application delivers ``message_id`` once, ignoring an id it has sent."""
    if message_id not in s.store.current.objects["sent"]:
        count = s.store.current.objects["sent_count"]
        s.report({"sent_count": count + 1, f"sent.{message_id}.status": "sent"})


def test_the_first_fire_to_settle_on_a_change_claims_it_not_the_first_fired() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = mail_session(clock)
        later = s.fire("outbox.resend", {"message_id": "m1"})  # checked after 100 ms
        sooner = s.fire("outbox.send", {"message_id": "m1"})
        land(s, "m1")
        await clock.advance(0)
        at_once = s.did_it_work(sooner.transition_id or "")
        await clock.advance(0.1)
        return at_once, s.did_it_work(later.transition_id or "")

    sooner, later = run(main)
    assert sooner.answer == "worked"
    assert later.answer == "unobservable"
    assert later.error == unattributed("sent.m1.status", "outbox.send#1")


def test_a_writes_only_fire_and_a_contract_fire_do_not_both_claim_one_report() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = mail_session(clock)
        queued = s.fire("outbox.queue", {"message_id": "m1"})
        checked = s.fire("outbox.send", {"message_id": "m1"})
        land(s, "m1")  # the queue is served as the report lands, before any check runs
        await clock.advance(0)
        return [s.did_it_work(f.transition_id or "") for f in (queued, checked)]

    queued, checked = run(main)
    assert queued.answer == "worked"
    assert checked.answer == "unobservable"
    assert checked.error == unattributed("sent.m1.status", "outbox.queue#1")


def test_writes_only_fires_of_two_sessions_are_not_both_settled_by_one_report() -> None:
    # In one session a report settles the earliest queued fire on each changed key; across
    # the sessions on one substrate it settles one fire too, and the other waits on.
    async def main(clock: VirtualClock) -> Any:
        s = mail_session(clock)
        other = MAIL.create_session(node="outbox", substrate=s.substrate, clock=clock)
        other.register_actions("outbox", handlers={"queue": lambda args: None})
        first = s.fire("outbox.queue", {"message_id": "m1"})
        second = other.fire("outbox.queue", {"message_id": "m1"})
        land(s, "m1")
        await clock.advance(0)
        return s.did_it_work(first.transition_id or ""), other.did_it_work(
            second.transition_id or ""
        )

    first, waiting = run(main)
    assert first.answer == "worked"
    assert waiting.answer == "pending"
    assert waiting.waiting_on == "a state report writing sent_count, sent.m1.status"


def test_a_counter_that_moved_once_per_fire_credits_each_fire_with_its_own_move() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = mail_session(clock)
        one, two = s.fire("outbox.bump", {"at": 1}), s.fire("outbox.bump", {"at": 2})
        s.report({"count": 1})
        await clock.advance(0)
        s.report({"count": 2})
        await clock.advance(0)
        return [s.did_it_work(f.transition_id or "") for f in (one, two)]

    one, two = run(main)
    assert (one.answer, [(c.before, c.after) for c in one.commit]) == ("worked", [(0, 1)])
    assert (two.answer, [(c.before, c.after) for c in two.commit]) == ("worked", [(0, 2)])


def test_a_counter_that_moved_by_two_in_one_report_is_credited_to_one_fire() -> None:
    # One report of 0 -> 2 is one observed change: nothing in the state tells whether each
    # fire added one or one fire added two.
    async def main(clock: VirtualClock) -> Any:
        s = mail_session(clock)
        one, two = s.fire("outbox.bump", {"at": 1}), s.fire("outbox.bump", {"at": 2})
        s.report({"count": 2})
        await clock.advance(0)
        return [s.did_it_work(f.transition_id or "") for f in (one, two)]

    one, two = run(main)
    assert one.answer == "worked"
    assert two.answer == "unobservable"
    assert two.error == unattributed("count", "outbox.bump#1")


def test_a_move_between_two_claimed_ones_is_the_own_change_of_the_fire_pending_over_all() -> None:
    # The count moves three times: the first move is bump#1's, the third bump#2's (fired
    # after the second), and the second, claimed by neither, is the late checker's.
    async def main(clock: VirtualClock) -> Any:
        s = mail_session(clock)
        first, late = s.fire("outbox.bump", {"at": 1}), s.fire("outbox.bump-late", {"at": 3})
        s.report({"count": 1})
        await clock.advance(0)
        s.report({"count": 2})
        third = s.fire("outbox.bump", {"at": 3})
        s.report({"count": 3})
        await clock.advance(0)
        early = [s.did_it_work(f.transition_id or "").answer for f in (first, third)]
        await clock.advance(0.1)
        return early, s.did_it_work(late.transition_id or "")

    early, late = run(main)
    assert early == ["worked", "worked"]
    assert (late.answer, late.error) == ("worked", None)


def test_moves_all_claimed_by_others_name_every_fire_that_claimed_them() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = mail_session(clock)
        first, late = s.fire("outbox.bump", {"at": 1}), s.fire("outbox.bump-late", {"at": 2})
        s.report({"count": 1})
        await clock.advance(0)
        second = s.fire("outbox.bump", {"at": 2})
        s.report({"count": 2})
        await clock.advance(0)
        early = [s.did_it_work(f.transition_id or "").answer for f in (first, second)]
        await clock.advance(0.1)
        return early, s.did_it_work(late.transition_id or "")

    early, late = run(main)
    assert early == ["worked", "worked"]
    assert late.answer == "unobservable"
    assert late.error == unattributed("count", "outbox.bump#1 and outbox.bump#2")


def test_already_true_fires_on_their_handlers_credit_one_change_once() -> None:
    async def main(clock: VirtualClock) -> Any:
        loop = asyncio.get_running_loop()
        done = [loop.create_future(), loop.create_future()]
        handlers = iter(done)

        async def touch(args: dict[str, Any]) -> None:
            await next(handlers)

        s = mail_session(clock, touch=touch)
        fired = [s.fire("outbox.touch"), s.fire("outbox.touch")]
        assert all(f.already_true is not None for f in fired)
        s.report({"rev": 2})
        for future in done:
            future.set_result(None)
        await clock.advance(0)
        return [s.did_it_work(f.transition_id or "") for f in fired]

    first, second = run(main)
    assert (first.answer, first.effect) == ("worked", "observed")
    assert (second.answer, second.effect) == ("unobservable", "unobservable")
    assert second.error == unattributed("rev", "outbox.touch#1")


def test_a_fire_made_after_the_change_landed_is_not_credited_with_it_or_held_by_it() -> None:
    async def main(clock: VirtualClock) -> Any:
        s = mail_session(clock)
        first = s.fire("outbox.send", {"message_id": "m1"})
        land(s, "m1")
        await clock.advance(0)
        again = s.fire("outbox.send", {"message_id": "m1"})  # held before: not a claim
        await clock.advance(0)
        other = s.fire("outbox.send", {"message_id": "m2"})
        land(s, "m2")
        await clock.advance(0)
        return [s.did_it_work(f.transition_id or "") for f in (first, again, other)], s

    (first, again, other), s = run(main)
    assert first.answer == other.answer == "worked"
    assert (again.answer, again.error, again.commit) == ("unobservable", None, [])
    assert again.why.startswith("The contract holds, but it held before the action fired too")
    assert len(s.claims) <= 1  # nothing pending could rest on an older change


LAMP = build_navigation_graph(
    "lamp",
    pages={
        "room": {
            "actions": {
                "switch_on": {
                    "does": "Switch the lamp on; declares no writes, only a contract",
                    "verify_expression": "lamp.on === true",
                }
            }
        }
    },
)


def test_two_pending_fires_with_only_a_contract_answer_worked_once_for_one_flip() -> None:
    # Two fires that declare no writes, pending when the lamp came on once, both answered
    # worked: with nothing declared, nothing was claimed. The keys the contract reads are
    # such a fire's evidence.
    async def main(clock: VirtualClock) -> Any:
        s = LAMP.create_session(node="room", state={"lamp": {"on": False}}, clock=clock)
        s.register_actions("room", handlers={"switch_on": lambda args: None})
        first, second = s.fire("room.switch_on"), s.fire("room.switch_on")
        s.report({"lamp.on": True})
        await s.wait(first.transition_id or "", 5)
        await s.wait(second.transition_id or "", 5)
        later = s.fire("room.switch_on")  # fired once the lamp was on: held before
        await s.wait(later.transition_id or "", 5)
        return [s.did_it_work(f.transition_id or "") for f in (first, second, later)]

    worked, other, later = run(main)
    assert (worked.answer, worked.error, worked.commit) == ("worked", None, [])
    assert (other.answer, other.error) == (
        "unobservable",
        unattributed("lamp.on", "room.switch_on#1"),
    )
    assert later.answer == "unobservable"
    assert later.why is not None and later.why.startswith(
        "The contract holds, but it held before the action fired too, and none of the keys "
        "it reads changed"
    )


def test_a_claimed_move_of_an_array_element_is_not_credited_again_for_another_element() -> None:
    # Two fires of complete wait on items[1].done. The first to check settles on the report
    # that set it and claims the array's change; a report setting items[0].done lands
    # before the second checks. The values of the array differed at the claim's end and at
    # the second's settlement, so its own element counted as moved outside the claim, and
    # it answered worked.
    complete = {
        "does": "complete a task",
        "writes": ["items"],
        "settle_ms": 100,
        "verify_expression": "items[1].done === true",
    }
    graph = build_navigation_graph("desk", pages={"p": {"actions": {"complete": complete}}})

    async def main(clock: VirtualClock) -> Any:
        s = graph.create_session(
            node="p", state={"items": [{"done": False}, {"done": False}]}, clock=clock
        )
        s.register_actions("p", handlers={"complete": lambda args: None})
        first = s.fire("p.complete")
        await clock.advance(0.005)
        second = s.fire("p.complete")
        await clock.advance(0.005)
        s.report({"items": [{"done": False}, {"done": True}]})
        await clock.advance(0.092)  # the first has settled, the second not yet checked
        s.report({"items": [{"done": True}, {"done": True}]})
        await clock.advance(1)
        return [s.did_it_work(f.transition_id or "") for f in (first, second)]

    first, second = run(main)
    assert (first.answer, first.error) == ("worked", None)
    assert (second.answer, second.error) == (
        "unobservable",
        unattributed("items.1.done", "p.complete#1"),
    )


def test_writes_only_fires_on_two_elements_of_one_array_are_each_settled_by_one_report() -> None:
    # The first fire claimed the changed leaf items whole, so the second, declaring
    # items[1].done, waited on a report that had already come (a false pending); a third
    # fire declaring items[1].done as well is still not credited with the same change.
    graph = build_navigation_graph(
        "tasks", pages={"p": {"actions": {"complete": {"does": "complete a task",
                                                       "writes": ['items["{n}"].done']}}}},
    )  # fmt: skip

    async def main(clock: VirtualClock) -> list[str]:
        sessions = [
            graph.create_session(node="p", state={"items": [{"done": False}] * 2}, clock=clock)
            for _ in range(2)
        ]
        for session in sessions:
            session.register_actions("p", handlers={"complete": lambda args: None})
        first, other = sessions
        fires = [(first, first.fire("p.complete", {"n": n})) for n in (0, 1)]
        fires.append((other, other.fire("p.complete", {"n": 1})))
        first.report({"items": [{"done": True}, {"done": True}]})
        await clock.advance(1)
        return [s.did_it_work(fired.transition_id or "").answer for s, fired in fires]

    assert run(main) == ["worked", "worked", "pending"]
