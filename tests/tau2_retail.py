"""A replay of real agent work: the τ² retail train split, fired through assay.

Each task of the train split is a sequence of reference tool calls recorded on the real
application (``fixtures/tau2_retail_gold.jsonl``). ``GRAPH`` declares one action per write
tool, with a contract written from what the tool means. ``RetailReplay`` is the
application: it keeps its own copy of the retail database and, when an action fires, looks
up the recorded write scripted for that position, applies its recorded changes and reports
them to the session as one state report, or raises the error the real application raised.
A script step may also be perturbed: the change never applied, applied late, applied to
the wrong order (or user), or applied partly (one of the items asked for left out, or a
cancellation's refunds). And an agent may retry right after a late landing: its fire
failed at its timeout, the change landed after all, and it fired again at once
(``retry_after_late_landing``), with the state pushed to the session or pulled by a probe
that reads the records.

Only the train split is read; ``load_train_tasks`` drops every other line unread beyond its
``split`` field and checks each task id it keeps against the train list.

Run it as a script to print the counts of a replay.
"""

from __future__ import annotations

import asyncio
import copy
import enum
import json
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from assay.clock import VirtualClock
from assay.graph import Answer, FireResult, NavigationGraph, Session, build_navigation_graph
from assay.json.path import MISSING, format_path, parse_path, read_path
from assay.state import Snapshot
from assay.state.probes import CallableProbe
from assay.state.substrate import Substrate

# The shared data folder sits beside the repository (../shared).
TAU2: Final = Path(__file__).resolve().parents[2] / "shared" / "data" / "tau2"
RETAIL_DB: Final = TAU2 / "retail" / "db.json"
SPLITS: Final = TAU2 / "retail" / "split_tasks.json"
GOLD: Final = TAU2 / "fixtures" / "tau2_retail_gold.jsonl"

ABSENT: Final = "<absent>"
"""The fixture's mark for a key or element that did not exist (or no longer exists)."""

PAGE: Final = "retail"
CEILING_S: Final = 10.0  # longer than any verify timeout below, so a wait always settles
STEP_S: Final = 0.25  # virtual time moved per step while waiting for settlement
LATE_S: Final = 1.5  # how late a late change lands
AGENT_TIMEOUT_MS: Final = 1000  # a retrying agent's verify timeout: before LATE_S
POLL_S: Final = 2.0  # how often the pulled replay's probe reads the records: after LATE_S
RETRY_GAP_S: Final = 0.01  # how soon after the late landing the agent fires again
NO_THRESHOLDS: Final = {"reversible": 0.0, "compensable": 0.0, "irreversible": 0.0}
"""The pulled replay's confidence gate: placeholder keys are no keys before a fire, so the
coverage of its probe's records says nothing; the retry scenario is not about confidence."""

Entity = tuple[str, str]
"""A top-level record of the database: ``("orders", "#W2378156")`` or ``("users", id)``."""

_ADDRESS_FIELDS: Final = ("address1", "address2", "city", "state", "country", "zip")


def _address_contract(prefix: str) -> dict[str, Any]:
    return {f"{prefix}.address.{name}": {"arg": name} for name in _ADDRESS_FIELDS}


# Contracts are declarative so the already-true rule can apply: each verify puts conditions
# inside every key the action declares it writes. The order tools write all over one order
# (status, items, payment_history, exchange_* and return_* fields), so they declare the order.
# Array quantifiers check the items and payments a tool acts on, not only the status it sets:
# the recorded return_items and exchange_items hold the ids asked for (in their own order),
# a modified order's items hold the new item ids, and a cancelled order records a refund
# (a pending order's history holds payments only).
ACTIONS: Final[dict[str, dict[str, Any]]] = {
    "cancel_pending_order": {
        "does": "Cancel a pending order, refunding its payments, for the reason given",
        "writes": ["orders.{order_id}"],
        "verify": {
            "orders.{order_id}.status": {"eq": "cancelled"},
            "orders.{order_id}.cancel_reason": {"eq": {"arg": "reason"}},
            "orders.{order_id}.payment_history": {"any": {"transaction_type": "refund"}},
        },
        "reversibility": "irreversible",
    },
    "modify_pending_order_address": {
        "does": "Change the shipping address of a pending order",
        "writes": ["orders.{order_id}.address"],
        "verify": _address_contract("orders.{order_id}"),
    },
    "modify_pending_order_items": {
        "does": "Swap items of a pending order for other variants of the same products, "
        "paying or refunding the difference; an order's items can be modified once",
        "writes": ["orders.{order_id}"],
        "verify": {
            "orders.{order_id}.status": {"eq": "pending (item modified)"},
            "orders.{order_id}.items": {
                "contains_all": {"by": "item_id", "values": {"arg": "new_item_ids"}}
            },
            # The difference is paid or refunded with the method given; the order's first
            # payment may have used it too, so this alone would not show the modification.
            "orders.{order_id}.payment_history": {
                "any": {"payment_method_id": {"arg": "payment_method_id"}}
            },
        },
        "reversibility": "irreversible",
    },
    "modify_user_address": {
        "does": "Change a user's default address",
        "writes": ["users.{user_id}.address"],
        "verify": _address_contract("users.{user_id}"),
    },
    "exchange_delivered_order_items": {
        "does": "Request an exchange of delivered items for other variants, the price "
        "difference settled with the payment method given",
        "writes": ["orders.{order_id}"],
        "verify": {
            "orders.{order_id}.status": {"eq": "exchange requested"},
            "orders.{order_id}.exchange_items": {"contains_all": {"arg": "item_ids"}},
            "orders.{order_id}.exchange_new_items": {"contains_all": {"arg": "new_item_ids"}},
            "orders.{order_id}.exchange_payment_method_id": {"eq": {"arg": "payment_method_id"}},
        },
        "reversibility": "irreversible",
    },
    "return_delivered_order_items": {
        "does": "Request a return of delivered items, refunded to the payment method given",
        "writes": ["orders.{order_id}"],
        "verify": {
            "orders.{order_id}.status": {"eq": "return requested"},
            "orders.{order_id}.return_items": {"contains_all": {"arg": "item_ids"}},
            "orders.{order_id}.return_payment_method_id": {"eq": {"arg": "payment_method_id"}},
        },
        "reversibility": "irreversible",
    },
}

GRAPH: Final = build_navigation_graph("tau2-retail", {PAGE: {"actions": ACTIONS}})

QUANTIFIERS: Final = frozenset({"all", "any", "contains_all"})
STATUS_ONLY_GRAPH: Final = build_navigation_graph(
    "tau2-retail-status-only",
    {
        PAGE: {
            "actions": {
                name: {
                    **spec,
                    "verify": {
                        key: condition
                        for key, condition in spec["verify"].items()
                        if not (isinstance(condition, dict) and QUANTIFIERS & set(condition))
                    },
                }
                for name, spec in ACTIONS.items()
            }
        }
    },
)
"""The graph with the array conditions left out: the contracts before the filter form had
quantifiers, which checked the status and the payment method only."""


class ReplayMismatchError(AssertionError):
    """The replay and the fixture disagree: a fire nobody scripted, or a recorded before
    value that is not what the application holds."""


class RetailError(Exception):
    """An error the real retail application raised, with its recorded text."""


@dataclass(frozen=True)
class RecordedWrite:
    """One reference write call of a task, as the real application answered it."""

    task_id: str
    position: int  # its index among the task's actions, reads included
    name: str
    arguments: dict[str, Any]
    outcome: str  # "ok" or "error: <text>"
    changed_fields: list[list[Any]]
    refire_outcome: str
    refire_changed_fields: list[list[Any]]

    @property
    def label(self) -> str:
        return f"task {self.task_id} #{self.position} {self.name}"

    def result(self, *, refire: bool) -> tuple[str, list[list[Any]]]:
        """The recorded outcome and changes of the first fire or of the second."""
        if refire:
            return self.refire_outcome, self.refire_changed_fields
        return self.outcome, self.changed_fields


@dataclass(frozen=True)
class TrainTask:
    task_id: str
    writes: tuple[RecordedWrite, ...]


def train_task_ids() -> frozenset[str]:
    """The task ids of the train split (the only split read here)."""
    with SPLITS.open() as file:
        return frozenset(json.load(file)["train"])


def load_train_tasks() -> list[TrainTask]:
    """The fixture's train tasks, in file order, with their write calls."""
    train = train_task_ids()
    tasks = []
    with GOLD.open() as file:
        for line in file:
            record = json.loads(line)
            if record["split"] != "train":
                continue
            if record["task_id"] not in train:
                raise ReplayMismatchError(f"task {record['task_id']} is not in the train split")
            writes = tuple(
                RecordedWrite(
                    task_id=record["task_id"],
                    position=position,
                    name=action["name"],
                    arguments=action["arguments"],
                    outcome=action["outcome"],
                    changed_fields=action["changed_fields"],
                    refire_outcome=action["refire_outcome"],
                    refire_changed_fields=action["refire_changed_fields"],
                )
                for position, action in enumerate(record["actions"])
                if action["kind"] == "write"
            )
            tasks.append(TrainTask(record["task_id"], writes))
    return tasks


def load_db() -> dict[str, Any]:
    with RETAIL_DB.open() as file:
        data: dict[str, Any] = json.load(file)
    return data


def recorded_after(db: Mapping[str, Any], rows: Sequence[Sequence[Any]]) -> dict[Entity, Any]:
    """The new value of every record the recorded ``rows`` touch, applied to ``db``.

    Rows are ``[path, before, after]`` in fixture order. ``<absent>`` marks a missing key;
    a ``null`` before is the application's unset optional field (absent from ``db``); a new
    container is a row to ``<absent>`` followed by rows for its elements. Each before value
    is checked against ``db``: a mismatch means the replay has lost its way.
    """
    records: dict[Entity, Any] = {}
    for index, (path, before, after) in enumerate(rows):
        segments = parse_path(path)
        entity: Entity = (segments[0], segments[1])
        if entity not in records:
            if entity[1] not in db.get(entity[0], {}):
                raise ReplayMismatchError(f"{path}: the database has no {format_path(entity)}")
            records[entity] = copy.deepcopy(db[entity[0]][entity[1]])
        record, inner = records[entity], segments[2:]
        seen = read_path(record, inner).value
        if not _same_before(before, seen):
            raise ReplayMismatchError(
                f"{path}: recorded before {before!r}, the database has {seen!r}"
            )
        if after != ABSENT:
            _put(record, inner, copy.deepcopy(after))
            continue
        following = parse_path(rows[index + 1][0]) if index + 1 < len(rows) else ()
        if following[: len(segments)] == segments and len(following) > len(segments):
            if seen is MISSING or seen is None:
                _put(record, inner, [] if following[len(segments)].isdigit() else {})
        else:
            _remove(record, inner)
    return records


def _same_before(before: Any, seen: Any) -> bool:
    if before == ABSENT:
        return seen is MISSING
    if before is None:
        return seen is MISSING or seen is None
    return seen is not MISSING and before == seen and type(before) is type(seen)


def _put(record: Any, segments: Sequence[str], value: Any) -> None:
    node = record
    for depth, segment in enumerate(segments):
        last = depth == len(segments) - 1
        fresh: Any = value if last else [] if segments[depth + 1].isdigit() else {}
        if isinstance(node, list):
            position = int(segment)
            if position == len(node):
                node.append(fresh)
            elif last:
                node[position] = value
        elif last or segment not in node:
            node[segment] = fresh
        node = node[int(segment)] if isinstance(node, list) else node[segment]


def _remove(record: Any, segments: Sequence[str]) -> None:
    parent = read_path(record, segments[:-1]).value
    if not isinstance(parent, dict) or segments[-1] not in parent:
        raise ReplayMismatchError(f"cannot remove {format_path(segments)}: it is not a key")
    del parent[segments[-1]]


def merge_patch(before: Any, after: Any) -> Any:
    """The RFC 7396 merge patch that turns ``before`` into ``after`` (both dicts)."""
    patch: dict[str, Any] = {}
    for key, value in after.items():
        old = before.get(key, MISSING)
        if isinstance(old, dict) and isinstance(value, dict) and value:
            inner = merge_patch(old, value)
            if inner:
                patch[key] = inner
        elif old is MISSING or old != value or type(old) is not type(value):
            if _holds_null(value):
                raise ValueError(f"{key}: a merge patch cannot set a null inside {value!r}")
            patch[key] = value
    patch.update({key: None for key in before if key not in after})
    return patch


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with ``patch`` merged in (RFC 7396), as a new value."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def _holds_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_holds_null(item) for item in value.values())
    return False


class Mode(enum.Enum):
    """What the application does with a recorded change."""

    APPLY = "apply"
    NEVER = "never applied"
    LATE = "applied late"
    WRONG_TARGET = "applied to the wrong order"
    PARTLY = "applied partly"


@dataclass(frozen=True)
class Step:
    """The fire the application expects next, and what it does with it."""

    write: RecordedWrite
    refire: bool = False
    mode: Mode = Mode.APPLY
    wrong_target: Entity | None = None


class RetailReplay:
    """The retail application, replayed from the fixture.

    It owns its database (collections copied, records copied on write) and pushes every
    change to the session as one state report. Each fire consumes the next scripted step;
    the fired tool and arguments must be the step's.
    """

    def __init__(
        self, db: Mapping[str, Any], clock: VirtualClock, *, style: str = "sync", push: bool = True
    ) -> None:
        if style not in ("sync", "async"):
            raise ValueError(f"style must be 'sync' or 'async', got {style!r}")
        self.db = {name: dict(records) for name, records in db.items()}
        self.clock = clock
        self.style = style
        self.push = push  # False: it reports nothing, and a probe reads its records
        self.script: deque[Step] = deque()
        self.session: Session | None = None

    def connect(self, session: Session) -> None:
        self.session = session
        session.register_actions(PAGE, {name: self._handler(name) for name in ACTIONS})

    def expect(self, step: Step) -> None:
        self.script.append(step)

    def _handler(self, tool: str) -> Callable[[dict[str, Any]], Any]:
        def handle(args: dict[str, Any]) -> None:
            self._serve(tool, args)

        async def handle_async(args: dict[str, Any]) -> None:
            await asyncio.sleep(0)  # an application call yields before it answers
            self._serve(tool, args)

        return handle_async if self.style == "async" else handle

    def _serve(self, tool: str, args: dict[str, Any]) -> None:
        if not self.script:
            raise ReplayMismatchError(f"{tool} fired with {args}, but no write is scripted")
        step = self.script.popleft()
        write = step.write
        if (tool, args) != (write.name, write.arguments):
            raise ReplayMismatchError(
                f"{tool} fired with {args}; the script expects {write.label} {write.arguments}"
            )
        outcome, rows = write.result(refire=step.refire)
        if outcome != "ok":
            raise RetailError(outcome.removeprefix("error: "))
        after = recorded_after(self.db, rows)
        if step.mode is Mode.APPLY:
            self._commit(after)
        elif step.mode is Mode.LATE:
            self.clock.call_later(LATE_S, lambda: self._commit(after))
        elif step.mode is Mode.WRONG_TARGET:
            self._commit(retarget(self.db, after, target_of(write), step.wrong_target))
        elif step.mode is Mode.PARTLY:
            self._commit(partly(self.db, after, write))

    def _commit(self, after: Mapping[Entity, Any]) -> None:
        report = {}
        for (collection, key), value in after.items():
            patch = merge_patch(self.db[collection][key], value)
            if patch:
                report[format_path((collection, key))] = patch
            self.db[collection][key] = value
        if report and self.push:
            assert self.session is not None
            self.session.report(report, source="retail")

    def probe(self, entities: Sequence[Entity]) -> CallableProbe:
        """A probe reading ``entities``' records as they are now, every ``POLL_S``."""

        def read() -> dict[str, Any]:
            return {
                format_path(entity): copy.deepcopy(self.db[entity[0]][entity[1]])
                for entity in entities
            }

        return CallableProbe(read, name="retail records", interval=POLL_S)


def target_of(write: RecordedWrite) -> Entity:
    """The record a write tool acts on: its order, or the user whose address it sets."""
    if "order_id" in write.arguments:
        return ("orders", write.arguments["order_id"])
    return ("users", write.arguments["user_id"])


def retarget(
    db: Mapping[str, Any], after: Mapping[Entity, Any], target: Entity, wrong: Entity | None
) -> dict[Entity, Any]:
    """``after`` with the target's change made to the ``wrong`` record instead."""
    if wrong is None:
        raise ValueError("a wrong-target step needs the record to apply the change to")
    patch = merge_patch(db[target[0]][target[1]], after[target])
    moved = {entity: value for entity, value in after.items() if entity != target}
    moved[wrong] = apply_merge_patch(db[wrong[0]][wrong[1]], patch)
    return moved


PARTLY_APPLIED: Final = frozenset(
    {
        "cancel_pending_order",
        "modify_pending_order_items",
        "exchange_delivered_order_items",
        "return_delivered_order_items",
    }
)
"""The tools whose change can land partly: those that act on items or payments."""


def partly(db: Mapping[str, Any], after: Mapping[Entity, Any], write: RecordedWrite) -> Any:
    """``after`` with part of the write's change left out: the last item asked for is not
    returned, exchanged or swapped (every element of it, should it be asked twice), or a
    cancellation records no refund; the rest of the change lands."""
    target = target_of(write)
    before = db[target[0]][target[1]]
    record = copy.deepcopy(after[target])
    args = write.arguments
    if write.name == "cancel_pending_order":
        record["payment_history"] = copy.deepcopy(before["payment_history"])
    elif write.name == "modify_pending_order_items":
        new = args["new_item_ids"][-1]
        for index, item in enumerate(record["items"]):
            if item["item_id"] == new and before["items"][index]["item_id"] != new:
                record["items"][index] = copy.deepcopy(before["items"][index])
    else:
        field = "return_items" if write.name == "return_delivered_order_items" else "exchange_items"
        asked = args["item_ids"][-1]
        record[field] = [item for item in record[field] if item != asked]
    return {**after, target: record}


def wrong_target_for(db: Mapping[str, Any], write: RecordedWrite) -> Entity:
    """Another record of the same kind that the write's change would visibly alter
    (for an order, one in the same status)."""
    target = target_of(write)
    records = db[target[0]]
    change = recorded_after(db, write.changed_fields)[target]
    patch = merge_patch(records[target[1]], change)
    for key in sorted(records):
        record = records[key]
        if key == target[1] or record.get("status") != records[target[1]].get("status"):
            continue
        if apply_merge_patch(record, patch) != record:
            return (target[0], key)
    raise ValueError(f"{write.label}: no other record would show its change")


@dataclass(frozen=True)
class Fired:
    """One fire of a recorded write, settled: what assay answered and the states around it."""

    write: RecordedWrite
    refire: bool
    mode: Mode
    before: Snapshot
    after: Snapshot
    receipt: FireResult
    settled: FireResult
    answer: Answer
    wrong_target: Entity | None = None


@dataclass
class TaskReplay:
    task: TrainTask
    fires: list[Fired] = field(default_factory=list)


async def settle(session: Session, transition_id: str) -> FireResult:
    """Wait for settlement on the session's virtual clock, moving time only while needed."""
    clock = session.clock
    assert isinstance(clock, VirtualClock)
    waiting = asyncio.ensure_future(session.wait(transition_id, CEILING_S))
    await clock.settle()
    while not waiting.done():
        await clock.advance(STEP_S)
    return waiting.result()


async def fire_step(session: Session, app: RetailReplay, step: Step) -> Fired:
    """Script ``step``, fire its write as the agent did, and wait for the verdict."""
    before = session.store.current
    app.expect(step)
    receipt = await session.afire(f"{PAGE}.{step.write.name}", step.write.arguments)
    assert receipt.transition_id is not None, receipt.error
    settled = await settle(session, receipt.transition_id)
    return Fired(
        write=step.write,
        refire=step.refire,
        mode=step.mode,
        before=before,
        after=session.store.current,
        receipt=receipt,
        settled=settled,
        answer=session.did_it_work(receipt.transition_id),
        wrong_target=step.wrong_target,
    )


async def replay_task(task: TrainTask, db: Mapping[str, Any], *, style: str) -> TaskReplay:
    """Fire every write of ``task`` in order on a fresh session, each one twice."""
    clock = VirtualClock()
    session = GRAPH.create_session(node=PAGE, state=db, clock=clock)
    app = RetailReplay(db, clock, style=style)
    app.connect(session)
    replay = TaskReplay(task)
    try:
        for write in task.writes:
            replay.fires.append(await fire_step(session, app, Step(write)))
            replay.fires.append(await fire_step(session, app, Step(write, refire=True)))
    finally:
        await session.close()
    return replay


async def perturb(
    write: RecordedWrite,
    before: Snapshot,
    mode: Mode,
    *,
    style: str,
    graph: NavigationGraph = GRAPH,
) -> Fired:
    """Fire ``write`` on a fresh session of ``graph`` holding ``before``, perturbed as
    ``mode`` says."""
    clock = VirtualClock()
    session = graph.create_session(node=PAGE, state=before.objects, clock=clock)
    app = RetailReplay(before.objects, clock, style=style)
    app.connect(session)
    wrong = wrong_target_for(app.db, write) if mode is Mode.WRONG_TARGET else None
    try:
        return await fire_step(session, app, Step(write, mode=mode, wrong_target=wrong))
    finally:
        await session.close()


def perturbation_sample(replays: Sequence[TaskReplay], every: int = 3) -> list[Fired]:
    """Every ``every``-th first fire that recorded a change (as replayed, with its before)."""
    changing = [
        fired
        for replay in replays
        for fired in replay.fires
        if not fired.refire and fired.write.outcome == "ok" and fired.write.changed_fields
    ]
    return changing[::every]


async def replay_all(
    tasks: Sequence[TrainTask], *, style: str, every: int = 3
) -> tuple[list[TaskReplay], list[Fired]]:
    """Replay every task, then perturb a sample of its changing writes in each way."""
    db = load_db()
    replays = [await replay_task(task, db, style=style) for task in tasks]
    perturbed = [
        await perturb(fired.write, fired.before, mode, style=style)
        for fired in perturbation_sample(replays, every)
        for mode in (Mode.NEVER, Mode.LATE, Mode.WRONG_TARGET)
    ]
    return replays, perturbed


@dataclass(frozen=True)
class Retry:
    """A write whose change landed after its fire's timeout, and the agent's retry, fired
    right after it landed and before anything else read the state (the next poll, when it
    is pulled)."""

    write: RecordedWrite
    push: bool
    first: Answer
    retry: Answer

    @property
    def over_claims(self) -> int:
        """Answers of worked that the state does not bear out: the first fire's, its change
        having landed after its deadline; the retry's, for the change the first fire made
        (unless the real application changed something on the second call too)."""
        retried = not self.write.refire_changed_fields
        return int(self.first.answer == "worked") + int(self.retry.answer == "worked" and retried)


def entities_of(write: RecordedWrite) -> list[Entity]:
    """The records a write acts on or changes, first fire or second."""
    found = [target_of(write)]
    for path, *_ in (*write.changed_fields, *write.refire_changed_fields):
        segments = parse_path(path)
        found.append((segments[0], segments[1]))
    return list(dict.fromkeys(found))


async def retry_after_late_landing(
    write: RecordedWrite, before: Snapshot, *, push: bool, style: str = "sync"
) -> Retry:
    """Fire ``write`` on ``before`` with a verify timeout of ``AGENT_TIMEOUT_MS``, its change
    landing ``LATE_S`` later; the agent sees it fail and fires it again ``RETRY_GAP_S``
    after the change landed.
    Pushed, the application reports its change as it lands; pulled, a probe reads the
    write's records every ``POLL_S``, so only the retry's own fresh read sees the landing."""
    clock = VirtualClock()
    app = RetailReplay(before.objects, clock, style=style, push=push)
    substrate: Substrate | None = None
    if push:
        session = GRAPH.create_session(node=PAGE, state=before.objects, clock=clock)
    else:
        substrate = Substrate(
            probes=[app.probe(entities_of(write))],
            declared_keys=GRAPH.declared_writes(),
            clock=clock,
        )
        await substrate.read_fresh()
        await substrate.start()
        session = GRAPH.create_session(
            node=PAGE, substrate=substrate, clock=clock, thresholds=NO_THRESHOLDS
        )
    app.connect(session)
    action = f"{PAGE}.{write.name}"
    try:
        app.expect(Step(write, mode=Mode.LATE))
        first = await session.afire(action, write.arguments, verify_timeout_ms=AGENT_TIMEOUT_MS)
        assert first.transition_id is not None, first.error
        failed = await settle(session, first.transition_id)
        assert failed.effect_status == "failed", failed  # the agent retries on that
        await clock.advance(LATE_S - clock.monotonic() + RETRY_GAP_S)
        app.expect(Step(write, refire=True))
        retry = await session.afire(action, write.arguments)
        assert retry.transition_id is not None, retry.error
        await settle(session, retry.transition_id)
        return Retry(
            write=write,
            push=push,
            first=session.did_it_work(first.transition_id),
            retry=session.did_it_work(retry.transition_id),
        )
    finally:
        await session.close()
        if substrate is not None:
            await substrate.stop()


async def retry_all(sample: Sequence[Fired], *, push: bool, style: str = "sync") -> list[Retry]:
    """The retry scenario on each write of ``sample``, from the state before it."""
    return [
        await retry_after_late_landing(fired.write, fired.before, push=push, style=style)
        for fired in sample
    ]


def retry_tally(retries: Sequence[Retry]) -> dict[str, Any]:
    """The counts of the retry scenario, as plain JSON."""
    return {
        "writes": len(retries),
        "first fires": dict(Counter(r.first.answer for r in retries)),
        "retries": dict(Counter(r.retry.answer for r in retries)),
        "retries already_true": sum(r.retry.already_true is not None for r in retries),
        "over-claims": sum(r.over_claims for r in retries),
    }


def tally(replays: Sequence[TaskReplay], perturbed: Sequence[Fired]) -> dict[str, Any]:
    """The counts of a replay, as plain JSON."""
    first = [fired for replay in replays for fired in replay.fires if not fired.refire]
    second = [fired for replay in replays for fired in replay.fires if fired.refire]
    return {
        "tasks replayed": len(replays),
        "reference writes": len(first),
        "first fires": dict(Counter(fired.answer.answer for fired in first)),
        "worked": sum(fired.answer.answer == "worked" for fired in first),
        "already_true on first fire": sum(fired.answer.already_true is not None for fired in first),
        "failed as recorded on first fire": sum(
            fired.answer.answer == "failed" and fired.write.outcome != "ok" for fired in first
        ),
        "refires": len(second),
        "refires already_true": sum(fired.answer.already_true is not None for fired in second),
        "refires failed as recorded": sum(
            fired.answer.answer == "failed" and fired.write.refire_outcome != "ok"
            for fired in second
        ),
        "refires worked": sum(fired.answer.answer == "worked" for fired in second),
        "perturbations": {
            mode.value: dict(
                Counter(fired.answer.answer for fired in perturbed if fired.mode is mode)
            )
            for mode in (Mode.NEVER, Mode.LATE, Mode.WRONG_TARGET)
        },
    }


def main() -> None:
    tasks = load_train_tasks()
    for style in ("sync", "async"):
        replays, perturbed = asyncio.run(replay_all(tasks, style=style))
        print(json.dumps({"handlers": style, **tally(replays, perturbed)}, indent=2))
    sample = perturbation_sample(replays)
    for push in (True, False):
        retries = asyncio.run(retry_all(sample, push=push))
        mode = "pushed" if push else "pulled"
        print(json.dumps({"retry after a late landing": mode, **retry_tally(retries)}, indent=2))


if __name__ == "__main__":
    main()
