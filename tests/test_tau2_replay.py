"""The τ² retail train split replayed through assay (the application is ``tau2_retail``).

Every reference write must settle with the recorded changes, a write that sets what is
already there must answer already-true with no change, a second fire must answer as the real
application did (never a success where it raised), and perturbed applications must get
failed or multi-cycle verdicts whose narratives say what happened. Each replay runs twice:
with plain handlers and with async handlers that yield before they answer.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from assay.clock import VirtualClock
from assay.graph import build_navigation_graph
from assay.json.path import MISSING, format_path, parse_path, read_path
from assay.state import FieldChange
from tau2_retail import (
    ABSENT,
    ACTIONS,
    GRAPH,
    LATE_S,
    PAGE,
    PARTLY_APPLIED,
    STATUS_ONLY_GRAPH,
    Fired,
    Mode,
    RecordedWrite,
    RetailReplay,
    Step,
    TaskReplay,
    TrainTask,
    fire_step,
    load_db,
    load_train_tasks,
    perturb,
    perturbation_sample,
    recorded_after,
    replay_all,
    retry_all,
    retry_tally,
    tally,
    target_of,
    train_task_ids,
)

TIMEOUT_MS = 5000  # the declared actions keep assay's default verify timeout
SUMMARY_LIMIT = 200  # the longest value rendering on the wire (SPEC §4: values are summarized)


@dataclass(frozen=True)
class Replay:
    style: str
    tasks: list[TaskReplay]
    perturbed: list[Fired]

    def fires(self, *, refire: bool) -> Iterator[Fired]:
        return (f for replay in self.tasks for f in replay.fires if f.refire is refire)

    def perturbations(self, mode: Mode) -> list[Fired]:
        return [fired for fired in self.perturbed if fired.mode is mode]


@pytest.fixture(scope="module")
def tasks() -> list[TrainTask]:
    return load_train_tasks()


@pytest.fixture(scope="module", params=["sync", "async"])
def replay(request: pytest.FixtureRequest, tasks: list[TrainTask]) -> Replay:
    replays, perturbed = asyncio.run(replay_all(tasks, style=request.param))
    return Replay(request.param, replays, perturbed)


def _entity(segments: Sequence[str]) -> tuple[str, str]:
    return (segments[0], segments[1])


def _expected_state(fired: Fired) -> dict[tuple[str, str], Any]:
    _, rows = fired.write.result(refire=fired.refire)
    return recorded_after(fired.before.objects, rows)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _shows(shown: Any, value: Any) -> bool:
    """Is ``shown`` the value itself, or its wire summary (compact JSON cut with '…')?"""
    if value is MISSING:
        return shown is None
    if _compact(shown) == _compact(value):
        return True
    text = _compact(value)
    return (
        isinstance(shown, str)
        and not isinstance(value, str)
        and len(text) > SUMMARY_LIMIT
        and shown == text[: SUMMARY_LIMIT - 1] + "…"
    )


def _leaf(segments: Sequence[str], before: Any, after: Any) -> tuple[str, ...]:
    """The path cut at the first array: assay's changed_fields take arrays whole."""
    for depth in range(2, len(segments)):
        for tree in (before, after):
            if isinstance(read_path(tree, segments[:depth]).value, list):
                return tuple(segments[:depth])
    return tuple(segments)


def _check_changes(fired: Fired, changes: Sequence[FieldChange]) -> None:
    """``changes`` describe exactly the recorded move from ``fired.before``: the same keys
    at assay's granularity, the right kinds, and before and after values (or summaries)."""
    _, rows = fired.write.result(refire=fired.refire)
    state = _expected_state(fired)
    after_tree: dict[str, Any] = {}
    for (collection, key), value in state.items():
        after_tree.setdefault(collection, {})[key] = value
    expected = {}
    for row in rows:
        segments = _leaf(parse_path(row[0]), fired.before.objects, after_tree)
        expected[format_path(segments)] = segments
    shown = {change.key: change for change in changes}
    assert sorted(shown) == sorted(expected), fired.write.label
    for key, segments in expected.items():
        change = shown[key]
        before = read_path(fired.before.objects, segments).value
        after = read_path(after_tree, segments).value
        kind = "added" if before is MISSING else "removed" if after is MISSING else "changed"
        assert change.kind == kind, (fired.write.label, key)
        assert _shows(change.before, before), (fired.write.label, key, change.before)
        assert _shows(change.after, after), (fired.write.label, key, change.after)


def _declared_writes(write: RecordedWrite) -> list[tuple[str, ...]]:
    """The action's writes with the arguments in place, as path segments."""
    keys = []
    for template in ACTIONS[write.name]["writes"]:
        segments = parse_path(template)
        keys.append(
            tuple(
                str(write.arguments[s[1:-1]]) if s.startswith("{") and s.endswith("}") else s
                for s in segments
            )
        )
    return keys


def _under(key: str, writes: Sequence[tuple[str, ...]]) -> bool:
    segments = parse_path(key)
    return any(segments[: len(write)] == write for write in writes)


def _show(value: Any) -> str:
    """A value as the fixture compares it: ABSENT for none, otherwise compact JSON."""
    return ABSENT if value is MISSING or value == ABSENT else _compact(value)


def _fine(before: Any, after: Any, path: tuple[str, ...]) -> set[tuple[Any, ...]]:
    """Leaf changes as the fixture writes them: into objects and arrays, ABSENT for none."""
    for kind in (dict, list):
        if (isinstance(before, kind) or isinstance(after, kind)) and all(
            side is MISSING or isinstance(side, kind) for side in (before, after)
        ):
            old = kind() if before is MISSING else before
            new = kind() if after is MISSING else after
            if kind is dict:
                pairs = [
                    (key, old.get(key, MISSING), new.get(key, MISSING))
                    for key in sorted(set(old) | set(new))
                ]
            else:
                pairs = [
                    (
                        str(i),
                        old[i] if i < len(old) else MISSING,
                        new[i] if i < len(new) else MISSING,
                    )
                    for i in range(max(len(old), len(new)))
                ]
            return {row for key, x, y in pairs for row in _fine(x, y, (*path, key))}
    if _show(before) == _show(after):
        return set()
    return {(path, _show(before), _show(after))}


def _normalized(rows: Sequence[Sequence[Any]], before: Mapping[str, Any]) -> set[tuple[Any, ...]]:
    """The recorded rows without container rows, a ``null`` before of an absent key as
    ABSENT, values as compact JSON."""
    out = set()
    for index, (path, old, new) in enumerate(rows):
        segments = parse_path(path)
        following = parse_path(rows[index + 1][0]) if index + 1 < len(rows) else ()
        if new == ABSENT and following[: len(segments)] == segments != following:
            continue  # a new container; its elements follow
        absent = old is None and read_path(before, segments).value is MISSING
        out.add((segments, ABSENT if absent else _show(old), _show(new)))
    return out


def test_only_the_train_split_is_replayed(tasks: list[TrainTask]) -> None:
    ids = [task.task_id for task in tasks]
    assert len(ids) == len(set(ids)) == 74
    assert set(ids) == train_task_ids()
    assert all(write.task_id == task.task_id for task in tasks for write in task.writes)


def test_the_graph_declares_one_action_per_write_tool(tasks: list[TrainTask]) -> None:
    tools = {write.name for task in tasks for write in task.writes}
    assert tools == set(GRAPH.pages[PAGE]) == set(ACTIONS)
    assert all(GRAPH.action(f"{PAGE}.{tool}").contract is not None for tool in tools)


def test_the_fixture_rows_are_read_as_recorded(replay: Replay) -> None:
    """The translation of the fixture's diff format (``recorded_after``) describes exactly
    the recorded rows: diffing its result against the pre-state gives them back."""
    checked = 0
    for fired in replay.fires(refire=False):
        _, rows = fired.write.result(refire=False)
        if not rows or fired.write.outcome != "ok":
            continue
        state = _expected_state(fired)
        found: set[tuple[Any, ...]] = set()
        for entity, value in state.items():
            old = read_path(fired.before.objects, entity).value
            found |= _fine(old, value, entity)
        assert found == _normalized(rows, fired.before.objects), fired.write.label
        checked += 1
    assert checked == 118


def test_reference_writes_settle_worked_with_the_recorded_changes(replay: Replay) -> None:
    worked = 0
    for fired in replay.fires(refire=False):
        write = fired.write
        if write.outcome != "ok" or not write.changed_fields:
            continue
        answer = fired.answer
        assert answer.answer == "worked", (write.label, answer.why)
        assert fired.settled.effect_status == "settled"
        assert answer.already_true is None and fired.receipt.already_true is None
        assert answer.effect == "observed" and answer.error is None
        assert answer.outcome is not None and answer.outcome.passed
        for (collection, key), value in _expected_state(fired).items():
            assert fired.after.objects[collection][key] == value, write.label
        _check_changes(fired, answer.outcome.changed_fields)
        writes = _declared_writes(write)
        assert answer.commit == [c for c in answer.outcome.changed_fields if _under(c.key, writes)]
        assert answer.commit, write.label
        worked += 1
    assert worked == 118


def test_a_write_that_sets_what_is_already_there_is_already_true(replay: Replay) -> None:
    quiet = [
        fired
        for fired in replay.fires(refire=False)
        if fired.write.outcome == "ok" and not fired.write.changed_fields
    ]
    assert [fired.write.label for fired in quiet] == ["task 110 #1 modify_user_address"]
    for fired in quiet:
        answer = fired.answer
        assert answer.answer == "unobservable", answer.why
        assert answer.already_true is not None
        assert [(c.key, c.result) for c in answer.already_true] == [
            (f"users.sophia_martin_8570.address.{name}", True)
            for name in ("address1", "address2", "city", "state", "country", "zip")
        ]
        assert fired.receipt.why is not None and "held before this action fired" in (
            fired.receipt.why
        )
        assert answer.commit == [] and answer.outcome is None
        assert fired.after is fired.before


def test_a_write_the_application_refused_fails_with_its_error(replay: Replay) -> None:
    refused = [fired for fired in replay.fires(refire=False) if fired.write.outcome != "ok"]
    assert [fired.write.label for fired in refused] == [
        "task 105 #0 exchange_delivered_order_items"
    ]
    for fired in refused:
        assert fired.answer.answer == "failed"
        assert fired.answer.error == (
            "the handler raised RetailError: "
            "Insufficient gift card balance to pay for the price difference"
        )
        assert fired.answer.already_true is None
        assert fired.after is fired.before


def test_a_second_fire_answers_as_the_application_did(replay: Replay) -> None:
    firsts = {(f.write.task_id, f.write.position): f for f in replay.fires(refire=False)}
    for fired in replay.fires(refire=True):
        write, answer = fired.write, fired.answer
        first = firsts[(write.task_id, write.position)]
        assert answer.answer != "worked", write.label
        if first.answer.answer in ("worked", "unobservable"):
            # The first fire made the contract hold, so the second finds it already true.
            assert answer.already_true is not None, write.label
            assert all(condition.result for condition in answer.already_true)
        else:
            assert answer.already_true is None, write.label
        if write.refire_outcome == "ok":
            assert answer.answer == "unobservable", write.label
            assert answer.commit == [] and answer.error is None
        else:
            assert answer.answer == "failed", write.label
            text = write.refire_outcome.removeprefix("error: ")
            assert answer.error == f"the handler raised RetailError: {text}"
        assert fired.after is fired.before, write.label


def test_a_change_never_applied_fails_saying_nothing_changed(replay: Replay) -> None:
    never = replay.perturbations(Mode.NEVER)
    assert len(never) == 40
    for fired in never:
        outcome = fired.answer.outcome
        assert fired.answer.answer == "failed", fired.write.label
        assert outcome is not None and not outcome.passed and outcome.result is False
        assert outcome.changed_fields == [] and fired.answer.commit == []
        assert outcome.elapsed_ms == TIMEOUT_MS
        assert outcome.narrative.endswith(
            f"after 1 poll cycle ({TIMEOUT_MS}ms); nothing observable changed. "
            "The action may have failed silently."
        ), outcome.narrative
        assert fired.answer.error == outcome.narrative
        assert fired.after is fired.before


def test_a_change_applied_late_works_after_more_than_one_cycle(replay: Replay) -> None:
    late = replay.perturbations(Mode.LATE)
    assert len(late) == 40
    for fired in late:
        outcome = fired.answer.outcome
        assert fired.answer.answer == "worked", fired.write.label
        assert outcome is not None and outcome.passed
        assert outcome.poll_cycles == 2
        assert outcome.elapsed_ms == round(LATE_S * 1000)
        assert outcome.narrative.startswith(
            f"Contract evaluated to true after 2 poll cycles ({round(LATE_S * 1000)}ms)"
        )
        _check_changes(fired, outcome.changed_fields)


def test_a_change_applied_to_the_wrong_order_fails_naming_what_changed(replay: Replay) -> None:
    wrong = replay.perturbations(Mode.WRONG_TARGET)
    assert len(wrong) == 40
    for fired in wrong:
        outcome = fired.answer.outcome
        target = target_of(fired.write)
        assert fired.wrong_target is not None and fired.wrong_target != target
        assert fired.answer.answer == "failed", fired.write.label
        assert outcome is not None and not outcome.passed
        assert fired.answer.commit == []
        keys = [change.key for change in outcome.changed_fields]
        assert keys and all(_entity(parse_path(key)) != target for key in keys)
        assert any(_entity(parse_path(key)) == fired.wrong_target for key in keys)
        named = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
        assert outcome.narrative.endswith(
            f"after 1 poll cycle ({TIMEOUT_MS}ms), while {named} changed. "
            "The action may have changed something other than what was checked."
        ), outcome.narrative
        assert (
            fired.after.objects[target[0]][target[1]]
            == (fired.before.objects[target[0]][target[1]])
        )


def _left_out(write: RecordedWrite) -> str:
    """What the narrative of a partly applied ``write`` must name as failing."""
    order = format_path(("orders", write.arguments["order_id"]))
    if write.name == "cancel_pending_order":
        return (
            f"no element of {order}.payment_history satisfied it; the nearest, "
            f'{order}.payment_history.0.transaction_type was "payment", not "refund"'
        )
    if write.name == "modify_pending_order_items":
        return f'{order}.items lacked item_id "{write.arguments["new_item_ids"][-1]}"'
    field = "return_items" if write.name == "return_delivered_order_items" else "exchange_items"
    return f'{order}.{field} lacked "{write.arguments["item_ids"][-1]}"'


def test_a_change_applied_partly_fails_naming_what_was_left_out(replay: Replay) -> None:
    """A return, exchange or item modification that leaves out an item asked for, or a
    cancellation that records no refund, fails, its narrative naming the element or the
    value at fault. Under the contracts on status and payment method alone (before the
    filter form had array quantifiers) every one of them answered worked."""
    changing = [
        fired
        for fired in replay.fires(refire=False)
        if fired.write.name in PARTLY_APPLIED and fired.write.outcome == "ok"
    ]
    assert len(changing) == 96

    async def run() -> list[tuple[Fired, Fired]]:
        return [
            (
                await perturb(fired.write, fired.before, Mode.PARTLY, style=replay.style),
                await perturb(
                    fired.write,
                    fired.before,
                    Mode.PARTLY,
                    style=replay.style,
                    graph=STATUS_ONLY_GRAPH,
                ),
            )
            for fired in changing
        ]

    for checked, status_only in asyncio.run(run()):
        outcome = checked.answer.outcome
        assert checked.answer.answer == "failed", checked.write.label
        assert outcome is not None and not outcome.passed
        # A failure's commit lists the declared changes all the same: what was seen instead.
        record = format_path(target_of(checked.write))
        declared = [c for c in outcome.changed_fields if c.key.startswith(record)]
        assert checked.answer.commit == declared != []
        assert outcome.narrative.endswith(
            f"but the contract still evaluated to false ({_left_out(checked.write)})."
        ), outcome.narrative
        assert status_only.answer.answer == "worked", status_only.write.label


def test_the_replay_counts(replay: Replay) -> None:
    counts = tally(replay.tasks, replay.perturbed)
    print(json.dumps({"handlers": replay.style, **counts}, indent=2))
    assert counts == {
        "tasks replayed": 74,
        "reference writes": 120,
        "first fires": {"worked": 118, "unobservable": 1, "failed": 1},
        "worked": 118,
        "already_true on first fire": 1,
        "failed as recorded on first fire": 1,
        "refires": 120,
        "refires already_true": 119,
        "refires failed as recorded": 97,
        "refires worked": 0,
        "perturbations": {
            "never applied": {"failed": 40},
            "applied late": {"worked": 40},
            "applied to the wrong order": {"failed": 40},
        },
    }


def test_a_second_fire_that_raises_is_never_worked_under_an_expression_contract(
    tasks: list[TrainTask],
) -> None:
    """Task 16's cancellation fired twice, the contract as an expression (so the
    already-true rule does not apply) and the handler async: the second fire raised in
    the real application, so it must not answer worked."""
    graph = build_navigation_graph(
        "tau2-retail-expression",
        {
            PAGE: {
                "actions": {
                    name: {
                        "does": spec["does"],
                        "writes": spec["writes"],
                        "verify_expression": "orders[args.order_id].status === 'cancelled'",
                    }
                    if name == "cancel_pending_order"
                    else spec
                    for name, spec in ACTIONS.items()
                }
            }
        },
    )
    (task,) = [task for task in tasks if task.task_id == "16"]
    write = next(write for write in task.writes if write.name == "cancel_pending_order")

    async def run() -> tuple[str, str]:
        db = load_db()
        clock = VirtualClock()
        session = graph.create_session(node=PAGE, state=db, clock=clock)
        app = RetailReplay(db, clock, style="async")
        app.connect(session)
        try:
            first = await fire_step(session, app, Step(write))
            second = await fire_step(session, app, Step(write, refire=True))
        finally:
            await session.close()
        return first.answer.answer, second.answer.answer

    assert asyncio.run(run()) == ("worked", "failed")


@pytest.mark.parametrize("push", [True, False], ids=["pushed", "pulled"])
def test_a_retry_right_after_a_late_landing_is_never_credited_with_it(
    replay: Replay, push: bool
) -> None:
    """The agent's fire failed at its 1 s timeout; its change landed at 1.5 s all the same,
    and the agent fired again 10 ms later. Pulled, the probe's next poll was due at 2 s, so
    a fire on the last poll's snapshot answered worked for the first fire's change (10 of
    the 40 writes, whose second call changes nothing). Every retry must find the change
    already there, and no fire may answer worked."""
    sample = perturbation_sample(replay.tasks)
    retries = asyncio.run(retry_all(sample, push=push, style=replay.style))
    counts = retry_tally(retries)
    print(json.dumps({replay.style: {"pushed" if push else "pulled": counts}}, indent=2))
    assert counts == {
        "writes": 40,
        "first fires": {"failed": 40},
        "retries": {"failed": 30, "unobservable": 10},
        "retries already_true": 40,
        "over-claims": 0,
    }
    for retry in retries:
        assert retry.first.outcome is not None
        assert retry.first.outcome.elapsed_ms == 1000, retry.write.label
        if retry.retry.answer == "failed":  # the real application raised on the second call
            assert retry.write.refire_outcome != "ok"
            refused = retry.write.refire_outcome.removeprefix("error: ")
            assert retry.retry.error == f"the handler raised RetailError: {refused}"
