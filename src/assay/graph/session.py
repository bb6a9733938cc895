"""Sessions: fire actions, settle them honestly, and answer ``did_it_work`` (SPEC §6).

A fire returns at once with its fire-time result. It then settles by one of four paths:

- already true: the declarative verify covers every written key and held at fire time, so
  the fire settles on its handler (never on a state report) and carries the evidence;
- contract: the verification loop runs the verify contract until it holds or times out;
- writes only: the first state report touching a declared write settles it, in FIFO order
  of firing among the pending fires that wait on that key;
- neither: the handler's completion settles it, and its effect is unobservable.

A handler that raises is a failure on every path. Elapsed time never settles anything.
An observed change is credited to one fire only (``claims.py``): a fire whose evidence is a
change another fire, pending as well, settled on first is unobservable, not worked.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from assay.clock import SYSTEM_CLOCK, Clock
from assay.errors import (
    ContractError,
    GraphError,
    LedgerEntryError,
    LedgerError,
    NotFoundError,
    SessionError,
    WrongTypeError,
    escape_surrogates,
)
from assay.expr import compile_expression
from assay.expr.contract import Contract, compile_contract
from assay.expr.predicate import Predicate
from assay.graph.answers import answer, fire_result, not_credited, waiting_on
from assay.graph.binding import AllOf, ArgsPredicate, covers, fill, related
from assay.graph.claims import Claims
from assay.graph.declaration import (
    MAX_MILLISECONDS,
    ActionSpec,
    Reversibility,
    check_arguments,
)
from assay.graph.evidence import EvidenceLog, fire_body, refusal_body, settlement_body
from assay.graph.journey import Journey
from assay.graph.result import Answer, FireResult, RefusalFigures
from assay.graph.transition import Phase, Transition
from assay.json.path import parse_path
from assay.redaction import Redaction
from assay.state.canonical import (
    HALF_SURROGATE_PAIR,
    exact_json_object,
    holds_half_surrogate_pair,
)
from assay.state.snapshot import FieldChange, Snapshot, changes_at, value_moved
from assay.state.store import StateStore
from assay.state.substrate import Substrate
from assay.verify.loop import Verification, VerifyOptions, summarize_changes

Handler = Callable[[dict[str, Any]], Any]

_KINDS: Final[dict[object, str]] = {
    str: "a string",
    str | None: "a string or None",
    int | None: "a whole number of milliseconds or None",
}


DEFAULT_THRESHOLDS: Final = {
    Reversibility.REVERSIBLE: 0.5,
    Reversibility.COMPENSABLE: 0.8,
    Reversibility.IRREVERSIBLE: 0.95,
}
_PUSH_EXPECTED_INTERVAL: Final = 30.0
KEEP_SETTLED: Final = 1000
"""How many settled transitions a session holds by default, beside every pending one."""

_FLIGHTS: weakref.WeakKeyDictionary[Substrate, dict[str, tuple[str, str]]] = (
    weakref.WeakKeyDictionary()
)
"""Single flight holds for the application, not for one session: every session on one
substrate shares one map of single-flight action id to its holder (session id, transition
id)."""

_CLAIMS: weakref.WeakKeyDictionary[Substrate, Claims] = weakref.WeakKeyDictionary()
"""Claims hold for the application too: every session on one substrate credits an observed
change to at most one fire."""


class Session:
    """One agent's session on a graph: its node, its state, its transitions."""

    def __init__(
        self,
        graph: Any,
        *,
        node: str,
        state: Mapping[str, Any] | None = None,
        substrate: Substrate | None = None,
        clock: Clock = SYSTEM_CLOCK,
        redaction: Redaction | Iterable[str] | None = None,
        thresholds: Mapping[Reversibility, float] | Mapping[str, float] | None = None,
        evidence: EvidenceLog | None = None,
        session_id: str | None = None,
        keep_settled: int = KEEP_SETTLED,
    ) -> None:
        if isinstance(keep_settled, bool) or not isinstance(keep_settled, int) or keep_settled < 1:
            raise WrongTypeError(
                f"keep_settled must be a whole number of transitions, 1 or more, not "
                f"{keep_settled!r}",
                parameter="keep_settled",
            )
        if node not in graph.pages:
            raise GraphError(
                f"no page is called {node!r}; pages are {', '.join(graph.pages)}", field="node"
            )
        self.graph = graph
        self.id = session_id or f"{graph.app}-{uuid.uuid4().hex[:12]}"
        self.evidence = evidence
        self.node = node
        self.clock = clock
        self.redaction = (
            redaction if isinstance(redaction, Redaction) else Redaction(redaction or ())
        )
        if substrate is None:
            substrate = Substrate(
                StateStore(state, clock=clock),
                declared_keys=graph.declared_writes(),
                expected_interval=_PUSH_EXPECTED_INTERVAL,
                redaction=self.redaction,
                clock=clock,
            )
            substrate.store.heartbeat("session")
        self.substrate = substrate
        self.store = substrate.store
        self.thresholds = resolve_thresholds(thresholds)
        self.handlers: dict[str, Handler] = {}
        # Every pending transition, and the latest ``keep_settled`` settled ones: a session
        # that fires for weeks would otherwise hold every fire's snapshots (the ledger keeps
        # the evidence of all of them).
        self.transitions: dict[str, Transition] = {}
        self.keep_settled = keep_settled
        self._settled: deque[str] = deque()  # ids of the settled transitions held, oldest first
        self.counters: dict[str, int] = {}
        self.queue: list[Transition] = []  # writes-only fires awaiting a state report, FIFO
        # Single-flight action id -> its holder (session id, transition id), shared by every
        # session on this substrate: they act on one application.
        self.flights = _FLIGHTS.setdefault(substrate, {})
        self.claims = _CLAIMS.setdefault(substrate, Claims())
        self.journeys: dict[str, Journey] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.contracts: dict[str, Contract] = {}
        self.closed = False
        self._seen = self.store.current  # the version before the next change told
        self._subscription = self.store.subscribe_all(self._on_change)

    def register_actions(self, page: str, handlers: Mapping[str, Handler]) -> None:
        """Wire handlers (plain or async callables taking the fire's args) to ``page``."""
        for name, handler in handlers.items():
            if self.graph.action(f"{page}.{name}") is None:
                declared = ", ".join(spec.id for spec in self.graph.actions(page)) or "none"
                raise GraphError(
                    f"{page}.{name} is not declared in the graph; the actions of the page "
                    f"{page!r} are: {declared}",
                    page=page,
                    action=name,
                )
            if not callable(handler):
                raise WrongTypeError(
                    f"the handler for {page}.{name} is {type(handler).__name__}, not a callable; "
                    "pass a function (or async function) taking the fire's args",
                    parameter="handlers",
                )
            self.handlers[f"{page}.{name}"] = handler

    def register_actions_by_id(self, handlers: Mapping[str, Handler]) -> None:
        """Wire handlers keyed by ``page.action``, across pages."""
        by_page: dict[str, dict[str, Handler]] = {}
        for action_id, handler in handlers.items():
            page, _, name = action_id.partition(".")
            by_page.setdefault(page, {})[name] = handler
        for page, page_handlers in by_page.items():
            self.register_actions(page, page_handlers)

    def available(self) -> list[ActionSpec]:
        """The actions available at the current node."""
        actions: list[ActionSpec] = self.graph.actions(self.node)
        return actions

    def report(self, values: Mapping[str, Any], *, source: str = "app") -> Snapshot | None:
        """The application's state report (merged as RFC 7396)."""
        return self.store.report(values, source=source)

    def fire(
        self,
        action_id: str,
        args: Mapping[str, Any] | None = None,
        *,
        source: str = "agent",
        verify_expression: str | None = None,
        verify_timeout_ms: int | None = None,
    ) -> FireResult:
        """Fire an action on pushed state; returns at once with the fire-time result. Call
        it on a running event loop, where its settlement and verification run:
        ``SessionError`` otherwise, and on a substrate whose probes pull the state (use
        ``afire``, which reads them first); ``WrongTypeError`` for an argument of the wrong
        kind, both before anything is done. Bad values (args that break the action's schema)
        are refused in the result."""
        self._can_fire("fire")
        if self.substrate.polled:
            raise SessionError(
                f"session {self.id!r} observes polled state, which is as old as the last "
                "probe read: a fire must read the probes afresh before its pre-action "
                "snapshot, or a change made before it would be credited to it; use "
                "'await session.afire(...)', which does"
            )
        return self._fire(action_id, args, source, verify_expression, verify_timeout_ms)

    async def afire(
        self,
        action_id: str,
        args: Mapping[str, Any] | None = None,
        *,
        source: str = "agent",
        verify_expression: str | None = None,
        verify_timeout_ms: int | None = None,
    ) -> FireResult:
        """``fire`` on any substrate: on polled state, once a read of every probe begun
        after this call has ended, so that the pre-action snapshot holds what the
        application held as the fire was made; on pushed state, at once. It returns the
        fire-time result, as ``fire`` does, without waiting for settlement."""
        self._can_fire("afire")
        await self.substrate.read_fresh()
        self._can_fire("afire")  # closed while the probes were read
        return self._fire(action_id, args, source, verify_expression, verify_timeout_ms)

    def _can_fire(self, how: str) -> None:
        """``SessionError`` unless an event loop runs and the session is open."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise SessionError(
                f"Session.{how} needs a running asyncio event loop, where the fire settles "
                "and is verified; call it from async code, such as a coroutine run by "
                "asyncio.run"
            ) from None
        if self.closed:
            raise SessionError(
                f"session {self.id!r} is closed: it no longer observes the state, so nothing "
                "fired in it could settle; create a new session to fire"
            )

    def _fire(
        self,
        action_id: str,
        args: Mapping[str, Any] | None,
        source: str,
        verify_expression: str | None,
        verify_timeout_ms: int | None,
    ) -> FireResult:
        for name, value, kind in (
            ("action_id", action_id, str),
            ("source", source, str),
            ("verify_expression", verify_expression, str | None),
            ("verify_timeout_ms", verify_timeout_ms, int | None),
        ):
            if not isinstance(value, kind) or isinstance(value, bool):
                raise WrongTypeError(
                    f"{name} must be {_KINDS[kind]}, not {type(value).__name__}", parameter=name
                )
        given = args
        args = dict(args) if isinstance(args, Mapping) else {}
        spec = self.graph.action(action_id)
        if spec is None:
            return self._refused_unknown(action_id)
        if given is not None and not isinstance(given, Mapping):
            return self._refuse(
                spec, args, source, "bad_arguments",
                f"args must be an object mapping argument names to values, not "
                f"{type(given).__name__}; pass None or {{}} for none",
            )  # fmt: skip
        if holds_half_surrogate_pair(source):
            return self._refuse(
                spec, args, escape_surrogates(source), "bad_arguments",
                f"source: {HALF_SURROGATE_PAIR}",
            )  # fmt: skip
        if spec.page != self.node:
            where = ", ".join(self.graph.pages_with(spec.name)) or spec.page
            return self._refuse(
                spec, args, source, "not_available_here",
                f"{action_id} is not available at {self.node!r}; it is available at {where}",
                RefusalFigures(node=self.node, available_at=self.graph.pages_with(spec.name)),
            )  # fmt: skip
        try:
            if verify_timeout_ms is not None and not 0 <= verify_timeout_ms <= MAX_MILLISECONDS:
                raise ValueError(
                    f"verify_timeout_ms must be from 0 to {MAX_MILLISECONDS:,} milliseconds "
                    f"(a day), not {verify_timeout_ms}"
                )
            # The args a handler gets are the ones the ledger records, with or without one.
            args = exact_json_object(args, "args")
            if verify_expression is not None and holds_half_surrogate_pair(verify_expression):
                raise ValueError(f"verify_expression: {HALF_SURROGATE_PAIR}")
            writes, predicate, declared = self._bind(spec, args, verify_expression)
            covered = declared is not None and covers(declared, writes)
        except (ContractError, ValueError) as error:
            return self._refuse(spec, args, source, "bad_arguments", str(error))
        held = self.flights.get(spec.id)
        if spec.single_flight and held is not None:
            holder_session, holder = held
            of = "" if holder_session == self.id else f" of session {holder_session!r}"
            return self._refuse(
                spec, args, source, "single_flight",
                f"{spec.id} is single-flight and {holder}{of} is still pending; wait for it "
                "to settle (did_it_work) before firing again",
                RefusalFigures(holder=holder, holder_session=holder_session),
            )  # fmt: skip
        confidence = self.substrate.confidence()
        threshold = self.thresholds[spec.reversibility]
        if confidence.value < threshold:
            shown, needed = _apart(confidence.value, threshold)
            return self._refuse(
                spec, args, source, "low_confidence",
                f"confidence {shown} is below the {needed} that "
                f"{_article(spec.reversibility.value)} action needs "
                f"(freshness {confidence.freshness:.2f}, "
                f"coverage {confidence.coverage:.2f}, health {confidence.health:.2f})",
                RefusalFigures(
                    confidence=confidence.value, threshold=threshold,
                    freshness=confidence.freshness, coverage=confidence.coverage,
                    health=confidence.health, reversibility=spec.reversibility.value,
                ),
            )  # fmt: skip
        transition = self._mint(spec, args, source, writes, predicate)
        if spec.single_flight:
            self.flights[spec.id] = (self.id, transition.id)
        handler = self.handlers.get(spec.id)
        if handler is None:
            transition.materialized = False
            if not self._recorded_fire(transition):
                return self.result(transition)
            self._settle(transition, Phase.UNMATERIALIZED)
            self._record_settlement(transition)
            self._release(transition)
            return self.result(transition)
        if declared is not None and covered:
            check = declared.check(transition.before.objects)
            if check.result is True:
                transition.already_true = check.conditions
        if not self._recorded_fire(transition):
            return self.result(transition)
        if predicate is not None:
            self.claims.expect(transition)  # it checks, before it settles, whose change it saw
        timeout = verify_timeout_ms if verify_timeout_ms is not None else spec.verify_timeout_ms
        transition.verify_timeout_ms = timeout
        if transition.already_true is None and predicate is not None:
            self._verify(transition, predicate, spec.settle_ms, timeout)
        elif transition.already_true is None and writes:
            self.queue.append(transition)
        self._run_handler(transition, handler, timeout)
        return self.result(transition)

    def _bind(
        self, spec: ActionSpec, args: dict[str, Any], extra: str | None
    ) -> tuple[tuple[str, ...], Predicate | None, Contract | None]:
        missing = sorted(spec.placeholders - set(args))
        if missing:
            raise ValueError(
                f"{spec.id} needs the argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)} (used in its writes or verify contract)"
            )
        check_arguments(spec, args)
        writes = tuple(fill(key, args) for key in spec.writes)
        parts: list[Predicate] = []
        declared = None
        if spec.verify_mapping is not None:
            contract = self.contracts.get(spec.id)
            if contract is None:
                contract = compile_contract(spec.verify_mapping, redaction=self.redaction)
                self.contracts[spec.id] = contract
            declared = contract.bind(args)
            parts.append(declared)
        if spec.expression is not None:
            parts.append(ArgsPredicate(spec.expression, args))
        if extra is not None:
            parts.append(ArgsPredicate(compile_expression(extra), args))
        predicate = None if not parts else parts[0] if len(parts) == 1 else AllOf(parts)
        return writes, predicate, declared

    def _mint(
        self,
        spec: ActionSpec,
        args: dict[str, Any],
        source: str,
        writes: tuple[str, ...],
        predicate: Predicate | None,
    ) -> Transition:
        number = self.counters.get(spec.id, 0) + 1
        self.counters[spec.id] = number
        transition = Transition(
            id=f"{spec.id}#{number}",
            spec=spec,
            args=args,
            source=source,
            writes=writes,
            predicate=predicate,
            before=self.store.current,
            fired_at=self.clock.monotonic(),
        )
        self.transitions[transition.id] = transition
        return transition

    def _refuse(  # noqa: PLR0917
        self,
        spec: ActionSpec,
        args: dict[str, Any],
        source: str,
        reason: str,
        message: str,
        figures: RefusalFigures | None = None,
    ) -> FireResult:
        transition = self._mint(spec, args, source, (), None)
        transition.refusal = reason
        transition.refusal_figures = figures
        transition.error = message
        self._settle(transition, Phase.REFUSED)
        try:
            self._record("refusal", transition, refusal_body(transition, args))
        except LedgerEntryError:  # the args are part of why: keep the refusal, not them
            self._record("refusal", transition, refusal_body(transition, None))
        return self.result(transition)

    def _refused_unknown(self, action_id: str) -> FireResult:
        known = [spec.id for spec in self.available()]
        meant = " or ".join(map(repr, self.graph.likely_meant(action_id)))
        guess = f" (did you mean {meant}?)" if meant else ""
        return FireResult(
            ok=False,
            did=action_id,
            effect_status="refused",
            transition_id=None,
            refusal="unknown_action",
            error=f"no action is called {action_id!r}{guess}; available here: {', '.join(known)}",
        )

    def _spawn(self, coroutine: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _run_handler(self, transition: Transition, handler: Handler, timeout_ms: int) -> None:
        try:
            returned = handler(dict(transition.args))
        except Exception as error:
            self._handler_failed(transition, error)
            return
        if inspect.isawaitable(returned):
            self._spawn(self._await_handler(transition, returned))
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
            self._finish(transition, Phase.FAILED)

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
            self._finish(transition, Phase.UNOBSERVABLE)

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
            self._finish(transition, Phase.UNOBSERVABLE)

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

        self._spawn(read())

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
            self._finish(transition, Phase.UNOBSERVABLE)
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
            claims = self.claims.claimants(transition, self.id, at.version, evidence)
            if claims:
                transition.not_credited = not_credited(evidence, claims, self.id)
            else:
                self.claims.claim(transition, self.id, at.version, declared or read_all)
        if not transition.writes:
            return read_all
        return read_declared if read else declared

    def _finish_observed(self, transition: Transition) -> None:
        """Settle a fire whose change was looked for: worked, unless its contract held before
        it too with nothing declared changed, or the change is credited to another fire."""
        if transition.not_credited is not None:
            transition.error = transition.not_credited
            self._finish(transition, Phase.UNOBSERVABLE)
        elif transition.held_before and self.substrate.polled and not transition.read_after_handler:
            # "Nothing it reads changed" is the last poll's word until a read begun after the
            # handler returned says so too.
            self._after_read(transition, self._rejudge_held_before)
        else:
            self._finish(transition, Phase.UNOBSERVABLE if transition.held_before else Phase.WORKED)

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
        task = self._spawn(self._verified(transition, predicate, verification))
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
                self._finish(transition, Phase.FAILED)
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
            self._finish(transition, Phase.FAILED, final)

    def _on_change(self, snapshot: Snapshot, paths: tuple[tuple[str, ...], ...]) -> None:
        """Each changed path settles the earliest queued writes-only fire that declares it.

        One report can settle several fires when it touches keys different fires wait on,
        but never two fires through the same change: FIFO order of firing decides in a
        session; among the sessions on one substrate, the first to be told claims it. A
        declared key is touched only when its own value changed (``value_moved``): not by a
        change to another element of the array holding it, and two fires declaring two
        elements of one array are each settled by a report changing both.
        """
        previous, self._seen = self._seen, snapshot
        if not self.queue:
            return
        taken: list[tuple[str, ...]] = []  # what this session's fires took from the report

        def touched(path: tuple[str, ...], written: tuple[str, ...]) -> tuple[str, ...] | None:
            """What of the change at ``path`` a fire declaring ``written`` takes: the deeper
            of the two (an element, when the declared key lies in a changed array), if its
            value moved and no fire has taken it; else ``None``."""
            if not related(path, written):
                return None
            if not value_moved(previous.objects, snapshot.objects, written):
                return None
            unit = path if len(path) >= len(written) else written
            if any(related(unit, other) for other in taken):
                return None
            return unit if self.claims.taken(unit, snapshot.version) is None else None

        for transition in list(self.queue):
            if transition.phase.terminal:
                self.queue.remove(transition)
                continue
            written = [parse_path(key) for key in transition.writes]
            units = [
                unit
                for path in paths
                for key in written
                if (unit := touched(path, key)) is not None
            ]
            if not units:
                continue
            taken.extend(units)
            self.queue.remove(transition)
            changes = self._changes(transition, snapshot)
            transition.commit = summarize_changes(changes, self.redaction)
            # Its claim: the changes to the keys it declares, an element of an array only.
            self.claims.claim(transition, self.id, snapshot.version, changes_at(changes, written))
            if transition.handler_done:
                self._finish(transition, Phase.WORKED)
            else:
                transition.observed = True

    def _changes(self, transition: Transition, after: Snapshot) -> list[FieldChange]:
        """The declared keys that changed from ``transition``'s fire to ``after``, raw (its
        commit bundle once summarized)."""
        written = [parse_path(key) for key in transition.writes]
        return self.store.changes_under(transition.before, after, written)

    def _record(self, kind: str, transition: Transition, body: dict[str, Any]) -> None:
        if self.evidence is not None:
            self.evidence.append(kind, body, session=self.id, transition=transition.id)

    def _recorded_fire(self, transition: Transition) -> bool:
        """Record ``transition``'s fire, before anything runs; if its body cannot be written
        (args the ledger cannot carry), refuse it instead, recording that, and say so."""
        try:
            self._record("fire", transition, fire_body(transition))
        except LedgerEntryError as error:
            self._release(transition)
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
        self._settled.append(transition.id)
        while len(self._settled) > self.keep_settled:
            del self.transitions[self._settled.popleft()]

    def _finish(self, transition: Transition, phase: Phase, at: Snapshot | None = None) -> None:
        if phase is Phase.FAILED and not transition.commit:
            # A failure's commit shows the declared keys that changed, all the same: what
            # was seen instead (``at``: the state it was judged on, else the current).
            changes = self._changes(transition, self.store.current if at is None else at)
            transition.commit = summarize_changes(changes, self.redaction)
        self._settle(transition, phase)
        self._record_settlement(transition)
        if transition in self.queue:
            self.queue.remove(transition)
        self._release(transition)
        if phase is Phase.WORKED or (phase is Phase.UNOBSERVABLE and transition.error is None):
            if transition.spec.to is not None:
                self.node = transition.spec.to
            for journey in self.journeys.values():
                journey.record(transition.spec.id)

    def _release(self, transition: Transition) -> None:
        if self.flights.get(transition.spec.id) == (self.id, transition.id):
            del self.flights[transition.spec.id]

    def _transition(self, transition_id: str) -> Transition:
        """This session's transition ``transition_id``; ``NotFoundError`` if it has none."""
        transition = self.transitions.get(transition_id)
        if transition is None:
            if self.let_go(transition_id):
                raise NotFoundError(
                    f"session {self.id!r} no longer holds transition {transition_id!r}: it "
                    f"settled, and a session holds only its latest {self.keep_settled:,} "
                    "settled transitions; its evidence is in the ledger, by session and "
                    "transition",
                    kind="transition",
                    id=str(transition_id),
                )
            raise NotFoundError(
                f"session {self.id!r} has no transition {transition_id!r}; transition ids "
                "look like page.action#N and belong to the session that fired them",
                kind="transition",
                id=str(transition_id),
            )
        return transition

    def let_go(self, transition_id: str) -> bool:
        """Whether this session made ``transition_id`` and, once it settled, let it go (it
        holds only its latest ``keep_settled`` settled transitions; the ledger holds all)."""
        if transition_id in self.transitions:
            return False
        action, _, number = str(transition_id).rpartition("#")
        fired = self.counters.get(action, 0)
        # Only the id as minted: ASCII digits, no leading zero, no longer than the count.
        if not (number.isascii() and number.isdigit()) or number.startswith("0"):
            return False
        return len(number) <= len(str(fired)) and int(number) <= fired

    @property
    def fired(self) -> int:
        """How many transitions this session has made, held or not."""
        return sum(self.counters.values())

    def result(self, transition: Transition) -> FireResult:
        """The fire result as of now (the receipt, plus ``outcome_now`` when it differs)."""
        return fire_result(transition, self.store.current)

    def did_it_work(self, transition_id: str) -> Answer:
        """``pending``, ``worked``, ``failed``, ``unobservable``, ``refused`` or
        ``unmaterialized``, with the evidence; a pending answer says what it waits on."""
        transition = self._transition(transition_id)
        if transition.phase is not Phase.PENDING:
            return answer(transition, self.store.current)
        queued_before = self.queue.index(transition) if transition in self.queue else 0
        return answer(
            transition,
            self.store.current,
            waiting_on=waiting_on(transition, queued_before),
            pending_for_ms=round((self.clock.monotonic() - transition.fired_at) * 1000),
        )

    async def wait(self, transition_id: str, ceiling_s: float) -> FireResult:
        """Wait up to ``ceiling_s`` for settlement; the answer as of then, settled or not (at
        once for 0 or less). ``WrongTypeError`` when ``ceiling_s`` is not a number of seconds."""
        if (
            isinstance(ceiling_s, bool)
            or not isinstance(ceiling_s, int | float)
            or ceiling_s != ceiling_s  # NaN: a timer that never fires
        ):
            shown = "NaN" if isinstance(ceiling_s, float) else type(ceiling_s).__name__
            raise WrongTypeError(
                f"ceiling_s must be a number of seconds, not {shown}", parameter="ceiling_s"
            )
        transition = self._transition(transition_id)
        if not transition.phase.terminal and ceiling_s > 0:
            if transition.settled is None:
                transition.settled = asyncio.Event()
            waiter = asyncio.ensure_future(transition.settled.wait())
            ceiling_passed = False

            def give_up() -> None:
                nonlocal ceiling_passed
                ceiling_passed = True
                waiter.cancel()

            timer = self.clock.call_later(ceiling_s, give_up)
            try:
                await waiter
            except asyncio.CancelledError:
                # Only the ceiling ends a wait quietly; the caller's own cancellation goes on.
                if not ceiling_passed:
                    raise
            finally:
                timer.cancel()
                waiter.cancel()
        return self.result(transition)

    def start_journey(self, name: str, steps: Iterable[str]) -> Journey:
        """Track a named sequence of actions (``page.action`` ids) toward a goal; ``GraphError``
        naming the first step that is not an action of the graph, which could never be done."""
        if isinstance(steps, str):
            raise WrongTypeError(
                f"the journey {name!r}: steps must be a list of action ids, not the string "
                f"{steps!r}",
                parameter="steps",
            )
        steps = tuple(steps)
        for step in steps:
            if not isinstance(step, str) or self.graph.action(step) is None:
                raise GraphError(
                    f"the journey {name!r}: no action is called {step!r}, so it could never be "
                    "done; steps are page.action ids of the graph"
                )
        journey = Journey(name, steps)
        self.journeys[name] = journey
        return journey

    async def close(self) -> None:
        """Cancel background work (verifications, async handlers) and stop listening.

        A transition still pending settles as ``unobservable``, its error saying what it was
        waiting on when the session closed: nothing more will be observed of it, and the
        ledger records that rather than a fire that never settles.
        """
        self.closed = True
        self._subscription.cancel()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for transition in list(self.transitions.values()):
            if transition.phase.terminal:
                continue
            answer = self.did_it_work(transition.id)
            transition.error = (
                f"the session was closed while it waited on {answer.waiting_on} "
                f"({answer.pending_for_ms} ms); nothing settled it, and nothing more of it "
                "is observed"
            )
            with contextlib.suppress(LedgerError):  # evidence that stopped takes no more
                self._finish(transition, Phase.UNOBSERVABLE)


def resolve_thresholds(
    given: Mapping[Reversibility, float] | Mapping[str, float] | None,
) -> dict[Reversibility, float]:
    """The confidence each tier needs: the defaults, with ``given`` over them; a tier that is
    not one, or a threshold that is not a number from 0 to 1, is a ``WrongTypeError``."""
    if given is not None and not isinstance(given, Mapping):
        raise WrongTypeError(
            f"thresholds must map tiers to numbers, not {type(given).__name__}",
            parameter="thresholds",
        )
    thresholds = dict(DEFAULT_THRESHOLDS)
    tiers = ", ".join(tier.value for tier in Reversibility)
    for key, value in (given or {}).items():
        try:
            tier = Reversibility(key)
        except ValueError:
            raise WrongTypeError(
                f"thresholds: {key!r} is not a reversibility tier; tiers are {tiers}",
                parameter="thresholds",
            ) from None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise WrongTypeError(
                f"thresholds: {tier.value} must be a number from 0 to 1, not {value!r}",
                parameter="thresholds",
            )
        thresholds[tier] = float(value)
    return thresholds


def _apart(value: float, threshold: float) -> tuple[str, str]:
    """``value`` and ``threshold`` with two decimals, or as many more as it takes for them not
    to read alike (0.946 is below 0.95; "0.95 is below the 0.95" says nothing)."""
    for places in range(2, 7):
        shown, needed = f"{value:.{places}f}", f"{threshold:.{places}f}"
        if shown != needed:
            break
    return shown, needed


def _article(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _timeout(transition: Transition) -> int:
    """The verify timeout of ``transition``: its fire's own, else its action's."""
    given = transition.verify_timeout_ms
    return transition.spec.verify_timeout_ms if given is None else given


def _readings(predicate: Predicate | None) -> tuple[bool, ...]:
    """How ``predicate`` reads its keys (``value_moved``): as an expression does, as a
    declarative contract does, or, parts of each, both ways."""
    parts = predicate.parts if isinstance(predicate, AllOf) else (predicate,)
    return tuple(dict.fromkeys(not isinstance(part, Contract) for part in parts))
