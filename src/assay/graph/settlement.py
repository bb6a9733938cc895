"""Settlement: how each accepted fire settles, by one of four paths (SPEC §6).

- already true: the declarative verify covers every written key and held at fire time, so
  the fire settles on its handler (never on a state report), rechecked on the state then;
- contract: the verification loop runs the verify contract until it holds or times out;
- writes only: the first state report touching a declared write settles it, in FIFO order
  of firing among the pending fires that wait on that key (``report_queue.py``);
- neither: the handler's completion settles it, and its effect is unobservable.

A handler that raises is a failure on every path. Elapsed time never settles anything.
An observed change is credited to one fire only (``claims.py``): a fire whose evidence is a
change another fire, pending as well, settled on first is unobservable, not worked.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from assay.clock import Clock
from assay.errors import LedgerEntryError, escape_surrogates
from assay.expr.contract import Contract
from assay.expr.predicate import Predicate
from assay.graph.admission import Refusal
from assay.graph.answers import not_credited
from assay.graph.binding import AllOf
from assay.graph.evidence import EvidenceLog, fire_body, refusal_body, settlement_body
from assay.graph.held import HeldTransitions
from assay.graph.registry import FireRegistry
from assay.graph.report_queue import ReportQueue, declared_changes
from assay.graph.transition import Phase, Transition
from assay.json.path import parse_path
from assay.redaction import Redaction
from assay.state.snapshot import FieldChange, Snapshot, changes_at, value_moved
from assay.state.substrate import Substrate
from assay.verify.loop import Verification, VerifyOptions, summarize_changes

Handler = Callable[[dict[str, Any]], Any]


class Settlement:
    """Settles one session's fires, records their evidence, and tells the session (``done``)
    of each fire that worked or had no observable effect, for its node and journeys."""

    def __init__(  # noqa: PLR0917
        self,
        session: str,
        substrate: Substrate,
        clock: Clock,
        redaction: Redaction,
        evidence: EvidenceLog | None,
        registry: FireRegistry,
        held: HeldTransitions,
        done: Callable[[Transition], None],
    ) -> None:
        self.session = session
        self.substrate = substrate
        self.store = substrate.store
        self.clock = clock
        self.redaction = redaction
        self.evidence = evidence
        self.registry = registry
        self.claims = registry.claims
        self.held = held
        self.done = done
        self.reports = ReportQueue(session, self.store, self.claims, redaction)
        self.tasks: set[asyncio.Task[Any]] = set()

    def begin(
        self,
        transition: Transition,
        handler: Handler | None,
        covering: Contract | None,
        verify_timeout_ms: int | None,
    ) -> None:
        """Run a fire just minted: record it, run its handler and watch for its effect by
        the path it settles on (at once, with no handler: unmaterialized). ``covering`` is
        its declarative contract when that covers every written key."""
        if transition.spec.single_flight:
            self.registry.hold(self.session, transition)
        if handler is None:
            self._unmaterialized(transition)
            return
        if covering is not None:
            check = covering.check(transition.before.objects)
            if check.result is True:
                transition.already_true = check.conditions
        if not self._recorded_fire(transition):
            return
        predicate = transition.predicate
        if predicate is not None:
            self.claims.expect(transition)  # it checks, before it settles, whose change it saw
        given = verify_timeout_ms
        timeout = transition.spec.verify_timeout_ms if given is None else given
        transition.verify_timeout_ms = timeout
        if transition.already_true is None and predicate is not None:
            self._verify(transition, predicate, transition.spec.settle_ms, timeout)
        elif transition.already_true is None and transition.writes:
            self.reports.add(transition)
        self._run_handler(transition, handler)

    def _unmaterialized(self, transition: Transition) -> None:
        transition.materialized = False
        if not self._recorded_fire(transition):
            return
        self._settle(transition, Phase.UNMATERIALIZED)
        self._record_settlement(transition)
        self.registry.release(self.session, transition)

    def refuse(self, transition: Transition, refusal: Refusal) -> None:
        """Settle ``transition`` as refused, and record why."""
        transition.refusal = refusal.reason
        transition.refusal_figures = refusal.figures
        transition.error = refusal.message
        self._settle(transition, Phase.REFUSED)
        try:
            self._record("refusal", transition, refusal_body(transition, refusal.args))
        except LedgerEntryError:  # the args are part of why: keep the refusal, not them
            self._record("refusal", transition, refusal_body(transition, None))

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``coroutine`` as background work, cancelled when the session closes."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _run_handler(self, transition: Transition, handler: Handler) -> None:
        try:
            returned = handler(dict(transition.args))
        except Exception as error:
            self._handler_failed(transition, error)
            return
        if inspect.isawaitable(returned):
            self.spawn(self._await_handler(transition, returned))
        else:
            self._handler_finished(transition, returned)

    async def _await_handler(self, transition: Transition, awaitable: Any) -> None:
        try:
            returned = await awaitable
        except Exception as error:
            self._handler_failed(transition, error)
            return
        except asyncio.CancelledError as error:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the session is closing: the handler's work is abandoned, not failed
            self._handler_failed(transition, error)  # cancelled within the handler's own work
            return
        self._handler_finished(transition, returned)

    def _handler_failed(self, transition: Transition, error: BaseException) -> None:
        transition.handler_done = True
        transition.handler_failed = True
        if isinstance(error, asyncio.CancelledError):
            reason = "the handler was cancelled before it finished (CancelledError)"
        else:
            reason = f"the handler raised {type(error).__name__}: {error}"
        transition.error = escape_surrogates(reason)
        if not transition.phase.terminal:
            self.finish(transition, Phase.FAILED)

    def _handler_finished(self, transition: Transition, returned: Any) -> None:
        transition.handler_done = True
        transition.handler_result = returned
        if transition.phase.terminal:
            return
        if transition.observed:
            self._finish_observed(transition)
        elif transition.already_true is not None and self.substrate.polled:
            # What the handler did shows only in a read begun after it returned: until then
            # "nothing declared changed" is the last poll's word, not the application's.
            self._after_read(transition, self._recheck)
        elif transition.already_true is not None:
            self._recheck(transition)
        elif transition.predicate is None and not transition.writes:
            self.finish(transition, Phase.UNOBSERVABLE)

    def _recheck(self, transition: Transition) -> None:
        """Settle an already-true fire whose handler returned, on the state as now known."""
        if isinstance(transition.predicate, AllOf) or self._changes(transition, self.store.current):
            # The fire's own verify_expression is checked in addition to the declared
            # contract; and a contract that held before the fire is checked again once a key
            # it covers changed, as the change may have broken it.
            assert transition.predicate is not None  # already true: a declarative verify
            self._verify(transition, transition.predicate, 0, _timeout(transition))
        else:
            self._observe(transition)  # its commit: nothing declared changed
            self.finish(transition, Phase.UNOBSERVABLE)

    def _after_read(self, transition: Transition, then: Callable[[Transition], None]) -> None:
        """Call ``then`` once a read of the probes, begun now (its handler has returned),
        has ended, unless ``transition`` settled meanwhile (the session closed)."""
        transition.awaiting_read = True

        async def read() -> None:
            await self.substrate.read_fresh()
            transition.awaiting_read = False
            transition.read_after_handler = True
            if not transition.phase.terminal:
                then(transition)

        self.spawn(read())

    def _rejudge_held_before(self, transition: Transition) -> None:
        """Settle a fire whose contract held before it with nothing it reads changed, on a
        read begun after its handler returned: unobservable if that is still so, else
        verified afresh on what the read shows (a handler that broke the contract fails)."""
        predicate = transition.predicate
        assert predicate is not None  # held before: a contract
        current = self.store.current
        readings = _readings(predicate)
        moved = any(
            value_moved(transition.before.objects, current.objects, parse_path(key), readings)
            for key in predicate.keys
        )
        if not moved and predicate.check(current.objects).result is True:
            self.finish(transition, Phase.UNOBSERVABLE)
            return
        transition.observed = False
        transition.held_before = False
        transition.observed_version = None
        self._verify(transition, predicate, 0, _timeout(transition))

    def _observe(self, transition: Transition, at: Snapshot | None = None) -> list[FieldChange]:
        """Take ``transition``'s commit on ``at`` (the snapshot its contract held on, else the
        current state) and credit it with the change, unless other fires pending as well
        claimed all of it first. Answer the changes that count against the held-before rule:
        those of declared keys its contract reads (all the declared keys' if it reads none),
        or of every key it reads when the action declares no writes. A key it reads changed
        only if its own value did (``value_moved``): an array is one leaf of the commit, not
        one change of every key read in it."""
        at = self.store.current if at is None else at
        written = [parse_path(key) for key in transition.writes]
        declared = self.store.changes_under(transition.before, at, written)
        transition.commit = summarize_changes(declared, self.redaction)
        read = (
            [parse_path(key) for key in transition.predicate.keys] if transition.predicate else []
        )
        # Only keys whose values moved: the diff's leaves can say a key changed when its
        # value did not (an array turned into an object with the same elements).
        readings = _readings(transition.predicate)
        before, after = transition.before.objects, at.objects
        moved = [key for key in read if value_moved(before, after, key, readings)]
        read_all = changes_at(self.store.changes_under(transition.before, at, moved), moved)
        read_declared = changes_at(declared, moved)
        # Its evidence: the declared changes its contract reads (a send of m1 rests on m1's
        # status, not on the count a send of m2 moves too); else every declared change; else,
        # nothing declared having changed, the changes its contract reads (two fires pending
        # when a lamp came on once must not both be credited with it).
        evidence = read_declared or declared or read_all
        if evidence:
            claims = self.claims.claimants(transition, self.session, at.version, evidence)
            if claims:
                transition.not_credited = not_credited(evidence, claims, self.session)
            else:
                self.claims.claim(transition, self.session, at.version, declared or read_all)
        if not transition.writes:
            return read_all
        return read_declared if read else declared

    def _finish_observed(self, transition: Transition) -> None:
        """Settle a fire whose change was looked for: worked, unless its contract held before
        it too with nothing declared changed, or the change is credited to another fire."""
        if transition.not_credited is not None:
            transition.error = transition.not_credited
            self.finish(transition, Phase.UNOBSERVABLE)
        elif transition.held_before and self.substrate.polled and not transition.read_after_handler:
            # "Nothing it reads changed" is the last poll's word until a read begun after the
            # handler returned says so too.
            self._after_read(transition, self._rejudge_held_before)
        else:
            self.finish(transition, Phase.UNOBSERVABLE if transition.held_before else Phase.WORKED)

    def _verify(
        self, transition: Transition, predicate: Predicate, settle_ms: int, timeout_ms: int
    ) -> None:
        """Verify ``transition``'s effect, watching the keys ``predicate`` reads from now on,
        however late the task that answers first runs."""
        options = VerifyOptions(
            settle_ms=settle_ms,
            timeout_ms=timeout_ms,
            poll_interval_ms=self.substrate.poll_interval_ms,
        )
        verification = Verification(
            predicate,
            self.store,
            before=transition.before,
            options=options,
            clock=self.clock,
            redaction=self.redaction,
            dispatched_at=transition.fired_at,
        )
        task = self.spawn(self._verified(transition, predicate, verification))
        task.add_done_callback(lambda _: verification.cancel())  # cancelled before it ran

    async def _verified(
        self, transition: Transition, predicate: Predicate, verification: Verification
    ) -> None:
        try:
            outcome, final = await verification.run()
        except Exception as error:  # never leave a pending answer that nothing will settle
            if not transition.phase.terminal:
                transition.error = escape_surrogates(
                    f"the verification could not run ({type(error).__name__}: {error}), so "
                    "nothing established the effect"
                )
                self.finish(transition, Phase.FAILED)
            return
        if transition.phase.terminal:
            return
        transition.outcome = outcome
        if outcome.passed:
            # Judged on the snapshot the contract held on, which a later report may have
            # replaced already (outcome_now then says it no longer holds).
            transition.observed_version = final.version
            moved = self._observe(transition, final)
            # A contract that held before the fire too, with none of the keys it reads changed
            # (a repeated send of m1 while the count moved for m2), shows nothing of what the
            # action did: that is no evidence that it worked.
            transition.held_before = (
                not moved and predicate.check(transition.before.objects).result is True
            )
            if transition.handler_done:
                self._finish_observed(transition)
            else:
                # A handler that raises is a failure even when the contract holds.
                transition.observed = True
        else:
            transition.error = outcome.narrative
            self.finish(transition, Phase.FAILED, final)

    def on_change(self, snapshot: Snapshot, paths: tuple[tuple[str, ...], ...]) -> None:
        """A state change: it settles queued writes-only fires (``ReportQueue.on_change``)."""
        self.reports.on_change(snapshot, paths, self.finish)

    def _changes(self, transition: Transition, after: Snapshot) -> list[FieldChange]:
        return declared_changes(self.store, transition, after)

    def _record(self, kind: str, transition: Transition, body: dict[str, Any]) -> None:
        if self.evidence is not None:
            self.evidence.append(kind, body, session=self.session, transition=transition.id)

    def _recorded_fire(self, transition: Transition) -> bool:
        """Record ``transition``'s fire, before anything runs; if its body cannot be written
        (args the ledger cannot carry), refuse it instead, recording that, and say so."""
        try:
            self._record("fire", transition, fire_body(transition))
        except LedgerEntryError as error:
            self.registry.release(self.session, transition)
            transition.refusal = "bad_arguments"
            transition.error = f"the fire cannot be recorded, so nothing ran: {error}"
            self._settle(transition, Phase.REFUSED)
            self._record("refusal", transition, refusal_body(transition, None))
            return False
        return True

    def _record_settlement(self, transition: Transition) -> None:
        self._record("settlement", transition, settlement_body(transition))

    def _settle(self, transition: Transition, phase: Phase) -> None:
        """Settle ``transition`` as ``phase``, and let go of the oldest settled transition
        beyond the ``keep_settled`` latest."""
        version = transition.observed_version
        transition.settle(
            phase, self.clock.monotonic(), self.store.version if version is None else version
        )
        self.held.settled(transition)

    def finish(self, transition: Transition, phase: Phase, at: Snapshot | None = None) -> None:
        """Settle ``transition`` as ``phase`` (judged on ``at``, else the current state),
        record it, and let go of its place in the queue and its single flight."""
        if phase is Phase.FAILED and not transition.commit:
            # A failure's commit shows the declared keys that changed, all the same: what
            # was seen instead (``at``: the state it was judged on, else the current).
            changes = self._changes(transition, self.store.current if at is None else at)
            transition.commit = summarize_changes(changes, self.redaction)
        self._settle(transition, phase)
        self._record_settlement(transition)
        self.reports.discard(transition)
        self.registry.release(self.session, transition)
        if phase is Phase.WORKED or (phase is Phase.UNOBSERVABLE and transition.error is None):
            self.done(transition)


def _timeout(transition: Transition) -> int:
    """The verify timeout of ``transition``: its fire's own, else its action's."""
    given = transition.verify_timeout_ms
    return transition.spec.verify_timeout_ms if given is None else given


def _readings(predicate: Predicate | None) -> tuple[bool, ...]:
    """How ``predicate`` reads its keys (``value_moved``): as an expression does, as a
    declarative contract does, or, parts of each, both ways."""
    parts = predicate.parts if isinstance(predicate, AllOf) else (predicate,)
    return tuple(dict.fromkeys(not isinstance(part, Contract) for part in parts))
