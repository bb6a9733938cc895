"""The verification loop on virtual time: cycles, elapsed time and narratives, exactly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from assay import Redaction, compile_contract, compile_expression
from assay.clock import VirtualClock
from assay.expr.predicate import Predicate
from assay.state.store import StateStore
from assay.verify.loop import VerifyOptions, verify
from assay.verify.outcome import VerificationOutcome

DEFAULT = VerifyOptions()
Script = Callable[[StateStore, VirtualClock], Awaitable[None]]


def run_verification(
    predicate: Predicate,
    initial: dict[str, Any],
    script: Script,
    *,
    options: VerifyOptions = DEFAULT,
    redaction: Redaction | None = None,
    after_action: bool = True,
) -> VerificationOutcome:
    """Start a verification, play ``script`` against the store on virtual time, return it;
    as after an action (the snapshot before it given) unless ``after_action`` is false."""

    async def main() -> VerificationOutcome:
        clock = VirtualClock()
        store = StateStore(initial, clock=clock)
        before = store.current if after_action else None
        task = asyncio.create_task(
            verify(
                predicate, store, before=before, options=options, clock=clock, redaction=redaction
            )
        )
        await clock.settle()
        await script(store, clock)
        await clock.advance(options.timeout_ms / 1000 + 1)
        return await task

    return asyncio.run(main())


async def nothing(store: StateStore, clock: VirtualClock) -> None:
    return None


PUSH = VerifyOptions(timeout_ms=5000)
POLL = VerifyOptions(timeout_ms=5000, poll_interval_ms=500)


def test_passed_on_the_first_cycle() -> None:
    outcome = run_verification(
        compile_expression("inbox.sent_count == 15"), {"inbox": {"sent_count": 15}}, nothing
    )
    assert outcome.passed is True
    assert outcome.result is True
    assert outcome.poll_cycles == 1
    assert outcome.elapsed_ms == 0
    assert outcome.changed_fields == []
    assert outcome.narrative == (
        "Expression evaluated to true after 1 poll cycle (0ms); inbox.sent_count remained 15."
    )


def test_passed_after_several_cycles_on_pushed_changes() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.1)
        store.report({"inbox.drafts": 2})  # a key the expression does not read: no cycle
        await clock.advance(0.18)
        store.report({"inbox.sent_count": 15})

    outcome = run_verification(
        compile_expression("inbox.sent_count == 15"),
        {"inbox": {"sent_count": 14, "drafts": 3}},
        script,
    )
    assert outcome.passed is True
    assert outcome.poll_cycles == 2
    assert outcome.elapsed_ms == 280
    assert outcome.narrative == (
        "Expression evaluated to true after 2 poll cycles (280ms); "
        "inbox.sent_count changed from 14 to 15."
    )
    assert [(c.key, c.before, c.after, c.kind) for c in outcome.changed_fields] == [
        ("inbox.drafts", 3, 2, "changed"),
        ("inbox.sent_count", 14, 15, "changed"),
    ]


def test_failed_with_nothing_changed_counts_poll_cycles() -> None:
    outcome = run_verification(
        compile_expression("inbox.sent_count == 15"),
        {"inbox": {"sent_count": 14}},
        nothing,
        options=POLL,
    )
    assert outcome.passed is False
    assert outcome.result is False
    assert outcome.poll_cycles == 10
    assert outcome.elapsed_ms == 5000
    assert outcome.narrative == (
        "inbox.sent_count remained 14 after 10 poll cycles (5000ms); nothing observable "
        "changed. The action may have failed silently."
    )


def test_push_only_waits_without_evaluating_when_nothing_changes() -> None:
    outcome = run_verification(
        compile_expression("inbox.sent_count == 15"), {"inbox": {"sent_count": 14}}, nothing
    )
    assert outcome.poll_cycles == 1
    assert outcome.elapsed_ms == 5000


def test_failed_while_other_keys_changed_names_them() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(1)
        store.report({"inbox.drafts": 2, "drone.mode": "LOITER"})

    outcome = run_verification(
        compile_expression("inbox.sent_count == 15"),
        {"inbox": {"sent_count": 14, "drafts": 3}, "drone": {"mode": "GUIDED"}},
        script,
        options=POLL,
    )
    assert outcome.passed is False
    assert outcome.narrative == (
        "inbox.sent_count remained 14 after 10 poll cycles (5000ms), while drone.mode, "
        "inbox.drafts changed. The action may have changed something other than what was "
        "checked."
    )


def test_a_check_with_no_action_before_it_blames_no_action() -> None:
    """POST /v1/verify, MCP verify and ``assay verify`` fire nothing: their narratives said
    'The action may have failed silently' all the same."""

    async def others_change(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(1)
        store.report({"inbox.drafts": 2})

    initial = {"inbox": {"sent_count": 14, "drafts": 3}}
    expression = compile_expression("inbox.sent_count == 15")
    still = run_verification(expression, initial, nothing, options=POLL, after_action=False)
    assert still.narrative == (
        "inbox.sent_count remained 14 after 10 poll cycles (5000ms); nothing observable changed."
    )
    moved = run_verification(expression, initial, others_change, options=POLL, after_action=False)
    assert moved.narrative == (
        "inbox.sent_count remained 14 after 10 poll cycles (5000ms), while inbox.drafts changed."
    )


def test_failed_with_the_read_key_changed_to_a_wrong_value() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.5)
        store.report({"inbox.sent_count": 16})

    outcome = run_verification(
        compile_expression("inbox.sent_count == 15"), {"inbox": {"sent_count": 14}}, script
    )
    assert outcome.passed is False
    assert outcome.poll_cycles == 2
    assert outcome.narrative == (
        "inbox.sent_count changed from 14 to 16 after 2 poll cycles (5000ms), but the "
        "expression still evaluated to false."
    )


def test_failed_because_a_path_is_missing_names_the_missing_part() -> None:
    outcome = run_verification(
        compile_expression("inbox.missing.count > 0"), {"inbox": {"sent_count": 14}}, nothing
    )
    assert outcome.passed is False
    assert outcome.result is None
    assert outcome.narrative == (
        "Expression could not be evaluated after 1 poll cycle (5000ms): inbox.missing is "
        "undefined (reading 'count'); inbox.missing.count is missing (inbox has no key "
        "'missing')."
    )


@pytest.mark.parametrize(
    ("expression", "state", "read"),
    [
        ("inbox.items.length === 2", {"inbox": {"items": [1, 2]}}, "inbox.items.length remained 2"),
        # JavaScript counts UTF-16 code units: the emoji is two.
        (
            "inbox.subject.length === 3",
            {"inbox": {"subject": "a😀"}},
            "inbox.subject.length remained 3",
        ),
        (
            "inbox.page.length === 7",
            {"inbox": {"page": {"length": 7}}},
            "inbox.page.length remained 7",
        ),
    ],
)
def test_a_length_read_is_narrated_with_its_value(
    expression: str, state: dict[str, Any], read: str
) -> None:
    """An array's or a string's length is a value the expression read, not a missing key."""
    outcome = run_verification(compile_expression(expression), state, nothing)
    assert outcome.passed is True
    assert outcome.narrative == f"Expression evaluated to true after 1 poll cycle (0ms); {read}."


def test_a_failed_length_read_says_from_what_to_what_it_changed() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.5)
        store.report({"inbox.items": [1, 2, 3]})

    outcome = run_verification(
        compile_expression("inbox.items.length === 4"), {"inbox": {"items": [1, 2]}}, script
    )
    assert outcome.passed is False
    assert outcome.narrative == (
        "inbox.items.length changed from 2 to 3 after 2 poll cycles (5000ms), but the "
        "expression still evaluated to false."
    )


def test_a_contract_failure_names_the_failing_condition() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.2)
        store.report({"cart.quantity": 0, "view.domain": "billing"})

    outcome = run_verification(
        compile_contract({"view.domain": "billing", "cart.quantity": {"gte": 1}}),
        {"view": {"domain": "workspace"}, "cart": {"quantity": 0}},
        script,
    )
    assert outcome.passed is False
    assert outcome.narrative == (
        'cart.quantity remained 0 and view.domain changed from "workspace" to "billing" '
        "after 2 poll cycles (5000ms), but the contract still evaluated to false "
        "(cart.quantity gte 1 saw 0)."
    )


def test_a_quantifier_failure_names_the_element_and_the_nested_condition() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.2)
        store.report({"orders.a.items": [{"status": "returned"}, {"status": "delivered"}]})

    before = {"orders": {"a": {"items": [{"status": "delivered"}, {"status": "delivered"}]}}}
    outcome = run_verification(
        compile_contract({"orders.a.items": {"all": {"status": "returned"}}}), before, script
    )
    assert outcome.narrative == (
        'orders.a.items changed from [{"status":"delivered"},{"status":"delivered"}] to '
        '[{"status":"returned"},{"status":"delivered"}] after 2 poll cycles (5000ms), but the '
        'contract still evaluated to false (orders.a.items.1.status was "delivered", not '
        '"returned").'
    )


def test_contains_all_and_any_failures_name_what_is_lacking_and_the_nearest_element() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.2)
        store.report(
            {
                "orders.a.return_items": ["1"],
                "orders.a.payments": [{"kind": "payment", "amount": 3}],
            }
        )

    contract = compile_contract(
        {
            "orders.a.return_items": {"contains_all": ["1", "2"]},
            "orders.a.payments": {"any": {"kind": "refund", "amount": {"gt": 0}}},
        }
    )
    outcome = run_verification(contract, {"orders": {"a": {"payments": []}}}, script)
    assert outcome.narrative == (
        'orders.a.payments changed from [] to [{"kind":"payment","amount":3}] and '
        'orders.a.return_items changed from missing to ["1"] after 2 poll cycles (5000ms), '
        'but the contract still evaluated to false (orders.a.return_items lacked "2"; no '
        "element of orders.a.payments satisfied it; the nearest, orders.a.payments.0.kind "
        'was "payment", not "refund").'
    )


def test_an_unchanged_array_names_the_element_at_fault_beyond_its_summary() -> None:
    # The summary of a long array is cut at 200 characters, before the element that fails.
    items = [{"sku": f"item-{n:03}", "status": "returned"} for n in range(20)]
    items[17]["status"] = "delivered"
    outcome = run_verification(
        compile_contract({"items": {"all": {"status": "returned"}}}), {"items": items}, nothing
    )
    assert '"delivered"' not in outcome.narrative.split(" (")[0]
    assert outcome.narrative.endswith(
        '… (items.17.status was "delivered", not "returned") after 1 poll cycle (5000ms); '
        "nothing observable changed. The action may have failed silently."
    )


def test_a_quantifier_on_a_value_that_is_not_an_array_says_the_types_differ() -> None:
    outcome = run_verification(
        compile_contract({"items": {"all": {"gte": 0}}}), {"items": {"a": 1}}, nothing
    )
    assert outcome.narrative == (
        'items remained {"a":1} after 1 poll cycle (5000ms); nothing observable changed. It '
        "cannot hold while the types differ: items is an object, all needs an array."
    )


def test_a_condition_comparing_values_of_different_types_says_so() -> None:
    # The reason was kept in the condition's evidence, but the narrative blamed the action.
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.2)
        store.report({"other": 1})

    unchanged = run_verification(compile_contract({"a": {"gte": "1"}}), {"a": 1}, nothing)
    assert unchanged.narrative == (
        "a remained 1 after 1 poll cycle (5000ms); nothing observable changed. It cannot "
        "hold while the types differ: a is a number, gte needs a string."
    )
    elsewhere = run_verification(compile_contract({"a": {"gt": 1}}), {"a": "2"}, script)
    assert elsewhere.narrative == (
        'a remained "2" after 1 poll cycle (5000ms), while other changed. It cannot hold '
        "while the types differ: a is a string, gt needs a number."
    )
    redacted = run_verification(
        compile_contract({"a": {"gt": 1}}, redaction=Redaction(["a"])),
        {"a": "secret"},
        nothing,
        redaction=Redaction(["a"]),
    )
    assert "secret" not in redacted.narrative
    assert redacted.narrative.endswith(
        "It cannot hold while the types differ: a is a string, gt needs a number."
    )


def test_a_redacted_key_never_shows_its_value() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.3)
        store.report({"user.token": "sk-live-NEW"})

    outcome = run_verification(
        compile_expression("user.token === 'sk-live-EXPECTED'"),
        {"user": {"token": "sk-live-OLD"}},
        script,
        redaction=Redaction(["user.token"]),
    )
    text = outcome.model_dump_json()
    assert "sk-live-OLD" not in text
    assert "sk-live-NEW" not in text
    assert outcome.narrative == (
        "user.token changed (value redacted) after 2 poll cycles (5000ms), but the "
        "expression still evaluated to false."
    )
    assert [(c.key, c.before, c.after) for c in outcome.changed_fields] == [
        ("user.token", "[redacted]", "[redacted]")
    ]


def test_settle_delay_comes_before_the_first_cycle() -> None:
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.1)
        store.report({"a": 1})  # lands during the settle wait

    outcome = run_verification(
        compile_expression("a === 1"),
        {"a": 0},
        script,
        options=VerifyOptions(settle_ms=200, timeout_ms=5000),
    )
    assert outcome.passed is True
    assert outcome.poll_cycles == 1
    assert outcome.elapsed_ms == 200


def test_elapsed_time_alone_never_passes() -> None:
    outcome = run_verification(
        compile_expression("a === 1"),
        {"a": 0},
        nothing,
        options=VerifyOptions(timeout_ms=60_000, poll_interval_ms=1000),
    )
    assert outcome.passed is False
    assert outcome.poll_cycles == 60


@pytest.mark.parametrize("timeout_ms", [0, 1])
def test_zero_timeout_evaluates_exactly_once(timeout_ms: int) -> None:
    outcome = run_verification(
        compile_expression("a === 1"),
        {"a": 0},
        nothing,
        options=VerifyOptions(timeout_ms=timeout_ms, poll_interval_ms=500),
    )
    assert outcome.poll_cycles == 1


def test_a_pushed_state_that_holds_only_briefly_is_still_seen() -> None:
    async def flicker(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.3)
        # Two reports in one go: the verifier's task cannot run between them, yet the state
        # the first one published held the contract, and a push is evaluated at once.
        store.report({"drone.mode": "GUIDED"})
        store.report({"drone.mode": "RTL"})

    outcome = run_verification(
        compile_expression('drone.mode === "GUIDED"'), {"drone": {"mode": "LOITER"}}, flicker
    )
    assert (outcome.passed, outcome.poll_cycles, outcome.elapsed_ms) == (True, 2, 300)
    assert outcome.narrative == (
        "Expression evaluated to true after 2 poll cycles (300ms); drone.mode changed from "
        '"LOITER" to "GUIDED".'
    )
    assert [(c.key, c.before, c.after) for c in outcome.changed_fields] == [
        ("drone.mode", "LOITER", "GUIDED")
    ]


def test_an_expression_that_reads_no_state_is_answered_at_once() -> None:
    """No change to the state can alter it: it waited out the whole timeout (50 poll cycles
    behind a polled probe) to say what its first evaluation already said."""
    assert compile_expression("[1, 2].includes(3)").keys == ()
    outcome = run_verification(
        compile_expression("[1, 2].includes(3)"), {"inbox": {"sent_count": 14}}, nothing,
        options=POLL, after_action=False,
    )  # fmt: skip
    assert (outcome.passed, outcome.poll_cycles, outcome.elapsed_ms) == (False, 1, 0)
    assert outcome.narrative == (
        "Expression evaluated to false after 1 poll cycle (0ms); it reads no state keys, so "
        "no change to the state could make it hold."
    )


def test_nan_and_infinity_are_values_not_missing_keys_in_a_narrative() -> None:
    # "Infinity is missing (the state has no key 'Infinity')" was narrated of a value.
    passed = run_verification(compile_expression("Infinity > a"), {"a": 1}, nothing)
    assert (
        passed.narrative == "Expression evaluated to true after 1 poll cycle (0ms); a remained 1."
    )
    failed = run_verification(compile_expression("NaN > a"), {"a": 1}, nothing)
    assert "NaN" not in failed.narrative
    # A state key of that name shadows the value, and is narrated as any key.
    shadowed = run_verification(compile_expression("Infinity > 1"), {"Infinity": 0}, nothing)
    assert shadowed.narrative.startswith("Infinity remained 0 after 1 poll cycle")


def test_a_change_under_a_read_key_is_not_blamed_on_other_keys() -> None:
    # It said "while other keys changed. The action may have changed something other than
    # what was checked", of the very key checked, whose length had stayed the same.
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.2)
        store.report({"secret.token": "hunter3"})

    outcome = run_verification(
        compile_expression("secret.token.length > 100"), {"secret": {"token": "hunter2"}}, script
    )
    assert outcome.narrative == (
        "secret.token.length remained 7 after 2 poll cycles (5000ms), while secret.token "
        "changed, which it does not read."
    )


def test_a_contract_narrates_length_as_the_key_it_reads() -> None:
    # A contract on items.length (a key, in the declarative form: arrays have none) said it
    # "changed from 0 to 1" while its own evidence saw nothing there.
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.2)
        store.report({"items": [1]})

    outcome = run_verification(
        compile_contract({"items.length": {"gte": 5}}), {"items": []}, script
    )
    assert "changed from 0 to 1" not in outcome.narrative
    assert outcome.narrative.startswith("items.length is missing")


def test_a_key_whose_object_appears_with_another_key_is_evaluated_again() -> None:
    # orders was missing, so reading orders.o1 failed; a report added orders.o2, and the
    # expression then held, but only orders.o2 had changed, which woke nothing: the loop
    # failed at its deadline without evaluating again.
    async def script(store: StateStore, clock: VirtualClock) -> None:
        await clock.advance(0.1)
        store.report({"orders.o2.status": "open"})

    outcome = run_verification(compile_expression("orders.o1 === undefined"), {}, script)
    assert (outcome.passed, outcome.poll_cycles, outcome.elapsed_ms) == (True, 2, 100)
