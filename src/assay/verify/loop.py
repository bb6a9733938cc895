"""The verification loop (SPEC §5): settle, evaluate, wait for change or poll, until held or out.

``verify`` waits ``settle_ms``, evaluates the predicate, then again on every change to a key
it reads and, for pulled state, at every poll interval, until it holds or ``timeout_ms`` has
passed; all waiting goes through the injected clock. Elapsed time never turns into success.
After an action, time counts from its dispatch (``dispatched_at``), and a contract passes only
on a snapshot observed by the deadline, however late the check itself ran.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from assay.clock import SYSTEM_CLOCK, Clock
from assay.defaults import DEFAULT_TIMEOUT_MS
from assay.expr.contract import Contract
from assay.expr.predicate import Check, Predicate
from assay.json.path import parse_path
from assay.redaction import ELLIPSIS, REDACTED, SUMMARY_LIMIT, Redaction
from assay.state.index import Subscription
from assay.state.snapshot import FieldChange, Snapshot
from assay.state.store import StateStore
from assay.verify.narrative import Observation, narrate
from assay.verify.outcome import VerificationOutcome


@dataclass(frozen=True, slots=True)
class VerifyOptions:
    """How long to settle and wait, and whether the state is pulled (polled) or pushed."""

    settle_ms: int = 0
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    poll_interval_ms: int | None = None  # set when probes pull the state


async def verify(
    predicate: Predicate,
    store: StateStore,
    *,
    before: Snapshot | None = None,
    options: VerifyOptions = VerifyOptions(),
    clock: Clock = SYSTEM_CLOCK,
    redaction: Redaction | None = None,
    subject: str | None = None,
    dispatched_at: float | None = None,
) -> VerificationOutcome:
    """Verify ``predicate`` against ``store``; ``before`` is the snapshot taken before the
    action, ``dispatched_at`` the instant it was dispatched on ``clock`` (now when not
    given). Without ``before`` there was no action, and the narrative blames none."""
    verification = Verification(
        predicate,
        store,
        before=before,
        options=options,
        clock=clock,
        redaction=redaction,
        subject=subject,
        dispatched_at=dispatched_at,
    )
    outcome, _ = await verification.run()
    return outcome


class Verification:
    """One verification, watching the keys its predicate reads from the moment it is made.

    Made when its action is dispatched, it sees every change those keys go through, each
    judged by when it was observed: on a busy event loop ``run`` may start long after, when
    the state has moved on (the effect overwritten, or unrelated keys changed since the
    deadline), and still answer on the states observed in time. ``run`` once; ``cancel``
    ends the watch without a verdict (a task cancelled before it ran), any number of times.
    """

    __slots__ = (
        "_after_action",
        "_at_settle",
        "_before",
        "_checking",
        "_clock",
        "_cycles",
        "_deadline",
        "_dirty",
        "_held",
        "_moved",
        "_options",
        "_predicate",
        "_redaction",
        "_settled_at",
        "_start",
        "_store",
        "_subject",
        "_subscription",
        "_waiter",
    )

    def __init__(
        self,
        predicate: Predicate,
        store: StateStore,
        *,
        before: Snapshot | None = None,
        options: VerifyOptions = VerifyOptions(),
        clock: Clock = SYSTEM_CLOCK,
        redaction: Redaction | None = None,
        subject: str | None = None,
        dispatched_at: float | None = None,
    ) -> None:
        self._predicate = predicate
        self._store = store
        self._after_action = before is not None
        self._before = before if before is not None else store.current
        self._options = options
        self._clock = clock
        self._redaction = redaction or Redaction.none()
        self._subject = subject
        self._start = clock.monotonic() if dispatched_at is None else dispatched_at
        self._settled_at = self._start + options.settle_ms / 1000
        self._deadline = self._start + options.timeout_ms / 1000
        self._waiter: asyncio.Future[None] | None = None
        self._dirty = False
        self._held: tuple[Snapshot, Check] | None = None  # held on a state observed in time
        self._at_settle: Snapshot | None = None  # the keys' state when the first check was due
        self._moved = False  # they changed after it was due
        self._checking = False  # the first check has begun
        self._cycles = 0  # evaluations made
        self._subscription: Subscription | None = None
        self._seen(store.current)
        if predicate.keys:
            self._subscription = store.subscribe(predicate.keys, self._wake)

    def cancel(self) -> None:
        """Stop watching; the verification gives no verdict."""
        if self._subscription is not None:
            self._subscription.cancel()
            self._subscription = None

    def _seen(self, snapshot: Snapshot) -> None:
        # A state observed before the first check was due, and before it began, is what
        # that check is to judge; one observed after, in time, is evaluated at once on the
        # snapshot it published: a state that holds only briefly is still seen, however
        # late run() is.
        if not self._checking and snapshot.monotonic <= self._settled_at:
            self._at_settle = snapshot
            return
        self._moved = True
        if self._held is None and snapshot.monotonic <= self._deadline:
            check = self._predicate.check(snapshot.objects)
            if check.result is True:
                self._held = (snapshot, check)

    def _wake(self, snapshot: Snapshot, paths: object) -> None:
        self._dirty = True
        self._seen(snapshot)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def run(self) -> tuple[VerificationOutcome, Snapshot]:
        """Settle, then check until the predicate holds in time or the deadline has passed;
        the outcome, and the snapshot it describes: the one the predicate held on in time (a
        pushed state it held on only briefly included), else the state at the end."""
        try:
            return await self._run()
        finally:
            self.cancel()

    async def _run(self) -> tuple[VerificationOutcome, Snapshot]:
        clock, deadline = self._clock, self._deadline
        if self._settled_at > clock.monotonic():
            await clock.sleep(self._settled_at - clock.monotonic())
        due, self._at_settle = self._at_settle, None
        self._checking = True
        while True:
            snapshot, check, final = self._judge(due)
            due = None
            now = clock.monotonic()
            if final or now >= deadline or not self._predicate.keys:
                break  # held, out of time, or reading no state: nothing can change it
            await self._change_or_poll(now)
            if self._held is None and not self._dirty and clock.monotonic() >= deadline:
                break
        return self._answer(snapshot, check)

    def _judge(self, due: Snapshot | None) -> tuple[Snapshot, Check, bool]:
        """One round of checks, on the first of these to hold: a state observed in time that
        held (judged as it came), the state now if observed in time, the state when the first
        check was ``due`` (given only to the first round). Answer the snapshot and check, and
        whether they are final: it held, or nothing observed in time is left to judge."""
        self._dirty = False
        if self._held is not None:  # a state observed in time held, if only briefly
            self._cycles += 1
            return (*self._held, True)
        snapshot = self._store.current
        in_time = snapshot.monotonic <= self._deadline
        check = self._evaluate(snapshot) if in_time else None
        if check is not None and check.result is True:
            return snapshot, check, True
        if due is not None and (self._moved or not in_time):
            # This first check ran late, on a state since changed or observed after the
            # deadline: it is made on the state as it was when it was due.
            due_check = self._evaluate(due)
            if due_check.result is True:
                return due, due_check, True
        if check is None:  # the state now was observed after the deadline
            return snapshot, self._evaluate(snapshot), True
        return snapshot, check, False

    def _evaluate(self, snapshot: Snapshot) -> Check:
        self._cycles += 1
        return self._predicate.check(snapshot.objects)

    async def _change_or_poll(self, now: float) -> None:
        """Wait until a key the predicate reads changes, the next poll is due, or the
        deadline has come."""
        interval = self._options.poll_interval_ms
        wake_at = self._deadline if interval is None else min(self._deadline, now + interval / 1000)
        self._waiter = asyncio.get_running_loop().create_future()
        timer = self._clock.call_later(wake_at - now, _resolver(self._waiter))
        try:
            await self._waiter
        finally:
            timer.cancel()
            self._waiter = None

    def _answer(self, snapshot: Snapshot, check: Check) -> tuple[VerificationOutcome, Snapshot]:
        """The outcome of ``check`` on ``snapshot``, and the snapshot it describes. Every state
        of the keys observed in time was judged, as it came or in ``_judge``: one that holds
        only on a snapshot observed after the deadline is late, however late this ran."""
        late = check.result is True and snapshot.monotonic > self._deadline
        if check.result is not True or late:
            # Keys the predicate reads have not changed since its last check (a change would
            # have woken it), but others may have: the outcome describes the state as it is now.
            snapshot = self._store.current
        outcome = _outcome(
            self._predicate,
            store=self._store,
            before=self._before,
            final=snapshot,
            check=check,
            cycles=self._cycles,
            elapsed_ms=round((self._clock.monotonic() - self._start) * 1000),
            redaction=self._redaction,
            subject=self._subject,
            after_action=self._after_action,
            late_after_ms=self._options.timeout_ms if late else None,
        )
        return outcome, snapshot


def _resolver(waiter: asyncio.Future[None]) -> Callable[[], None]:
    def resolve() -> None:
        if not waiter.done():
            waiter.set_result(None)

    return resolve


def _outcome(
    predicate: Predicate,
    *,
    store: StateStore,
    before: Snapshot,
    final: Snapshot,
    check: Check,
    cycles: int,
    elapsed_ms: int,
    redaction: Redaction,
    subject: str | None,
    after_action: bool,
    late_after_ms: int | None,
) -> VerificationOutcome:
    changed = store.changes_between(before, final)
    passed = check.result is True and late_after_ms is None
    observation = Observation(
        subject=subject or _subject(predicate),
        keys=predicate.keys,
        before=before.objects,
        after=final.objects,
        check=check,
        passed=passed,
        cycles=cycles,
        elapsed_ms=elapsed_ms,
        changed=changed,
        redaction=redaction,
        after_action=after_action,
        lengths=not isinstance(predicate, Contract),
        late_after_ms=late_after_ms,
    )
    return VerificationOutcome(
        passed=passed,
        expression=predicate.source,
        result=check.result,
        narrative=narrate(observation),
        elapsed_ms=elapsed_ms,
        poll_cycles=cycles,
        changed_fields=summarize_changes(changed, redaction),
    )


def _subject(predicate: Predicate) -> str:
    return "Contract" if isinstance(predicate, Contract) else "Expression"


def summarize_changes(changes: Sequence[FieldChange], redaction: Redaction) -> list[FieldChange]:
    """Changes as they may leave the process: large values summarized, redacted ones withheld."""
    summarized = []
    unredacted = not redaction.patterns
    for change in changes:
        if unredacted and _small(change.before) and _small(change.after):
            summarized.append(change)  # nothing to withhold or shorten: no work
            continue
        segments = parse_path(change.key)
        # The absent side of an added or removed leaf stays None: there is nothing to withhold.
        summarized.append(
            FieldChange(
                key=change.key,
                before=None
                if change.kind == "added"
                else _summary(redaction, segments, change.before),
                after=None
                if change.kind == "removed"
                else _summary(redaction, segments, change.after),
                kind=change.kind,
            )
        )
    return summarized


def _summary(redaction: Redaction, segments: tuple[str, ...], value: Any) -> Any:
    """The value itself when small and clean; its truncated summary text otherwise."""
    text = redaction.summarize(segments, value)
    if text is None:
        return REDACTED
    if text.endswith(ELLIPSIS) or (isinstance(value, dict | list) and REDACTED in text):
        return text
    return value


def _small(value: Any) -> bool:
    """A scalar whose JSON rendering cannot exceed the summary limit."""
    if value is None or isinstance(value, bool | int | float):
        return True
    return isinstance(value, str) and len(value) < SUMMARY_LIMIT // 2
