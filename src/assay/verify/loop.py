"""The verification loop (SPEC §5): settle, evaluate, wait for change or poll, until held or out.

``verify`` waits ``settle_ms``, evaluates the predicate on the current snapshot (cycle 1),
then again on every change to a key it reads (pushed: evaluated at once) and, when the state
is pulled, at every poll interval, until it holds or ``timeout_ms`` has passed since the
start. A predicate that reads no state key is answered after its first evaluation, as no
change could alter it. All waiting goes through the injected clock, so tests run it on
virtual time. Elapsed time never turns into success: only an evaluation that holds passes.

After an action, time counts from its dispatch (``dispatched_at``), not from when this task
first runs: on a busy event loop the task may start late, and its settlement wait, its
timeout and ``elapsed_ms`` must not move with it. A contract that holds only on a snapshot
observed after the deadline (``Snapshot.monotonic``) fails, however late the check ran; one
that holds on a snapshot observed in time passes, though the check itself ran late.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from assay.clock import SYSTEM_CLOCK, Clock
from assay.defaults import DEFAULT_TIMEOUT_MS
from assay.expr.contract import Contract
from assay.expr.path import parse_path
from assay.expr.predicate import Check, Predicate
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
    outcome, _ = await verify_observed(
        predicate,
        store,
        before=before,
        options=options,
        clock=clock,
        redaction=redaction,
        subject=subject,
        dispatched_at=dispatched_at,
    )
    return outcome


async def verify_observed(
    predicate: Predicate,
    store: StateStore,
    *,
    before: Snapshot | None = None,
    options: VerifyOptions = VerifyOptions(),
    clock: Clock = SYSTEM_CLOCK,
    redaction: Redaction | None = None,
    subject: str | None = None,
    dispatched_at: float | None = None,
) -> tuple[VerificationOutcome, Snapshot]:
    """``verify``, and the snapshot its outcome describes: the one the predicate held on in
    time (a pushed state it held on only briefly included), else the state at the end."""
    redaction = redaction or Redaction.none()
    after_action = before is not None
    before = before if before is not None else store.current
    loop = asyncio.get_running_loop()
    start = clock.monotonic() if dispatched_at is None else dispatched_at
    deadline = start + options.timeout_ms / 1000
    interval = None if options.poll_interval_ms is None else options.poll_interval_ms / 1000
    waiter: asyncio.Future[None] | None = None
    dirty = False
    checking = False  # past the settlement wait: pushed changes are evaluated at once
    held: tuple[Snapshot, Check] | None = None

    def wake(snapshot: Snapshot, paths: object) -> None:
        # A pushed change is evaluated on the snapshot it published, at once: a state that
        # holds only briefly (overwritten before this task runs again) is still seen.
        nonlocal dirty, held
        dirty = True
        if checking and held is None and snapshot.monotonic <= deadline:
            pushed = predicate.check(snapshot.objects)
            if pushed.result is True:
                held = (snapshot, pushed)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # Subscribed only once a check has failed: a contract that holds at once costs no
    # subscription, and nothing can change between a check and the subscription (no await).
    subscription: Subscription | None = None
    late = False  # it held only on a snapshot observed after the deadline
    try:
        settled_at = start + options.settle_ms / 1000
        if settled_at > clock.monotonic():
            await clock.sleep(settled_at - clock.monotonic())
        cycles = 0
        checking = True
        while True:
            snapshot = store.current
            dirty = False
            check = predicate.check(snapshot.objects)
            cycles += 1
            now = clock.monotonic()
            if check.result is True and snapshot.monotonic > deadline:
                late = True  # observed too late to count, however late this check ran
                break
            if check.result is True or now >= deadline or not predicate.keys:
                break  # held, out of time, or reading no state: nothing can change it
            if subscription is None:
                subscription = store.subscribe(predicate.keys, wake)
            wake_at = deadline if interval is None else min(deadline, now + interval)
            waiter = loop.create_future()
            timer = clock.call_later(wake_at - now, _resolver(waiter))
            try:
                await waiter
            finally:
                timer.cancel()
                waiter = None
            if held is not None:
                snapshot, check = held
                cycles += 1
                break
            if not dirty and clock.monotonic() >= deadline:
                break
        elapsed_ms = round((clock.monotonic() - start) * 1000)
        if check.result is not True or late:
            # Keys the predicate reads have not changed since its last check (a change would
            # have woken it), but others may have: the outcome describes the state as it is now.
            snapshot = store.current
    finally:
        if subscription is not None:
            subscription.cancel()
    outcome = _outcome(
        predicate,
        store=store,
        before=before,
        final=snapshot,
        check=check,
        cycles=cycles,
        elapsed_ms=elapsed_ms,
        redaction=redaction,
        subject=subject,
        after_action=after_action,
        late_after_ms=options.timeout_ms if late else None,
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
