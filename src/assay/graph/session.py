"""Sessions: fire actions, settle them honestly, and answer ``did_it_work`` (SPEC §6).

A fire returns at once with its fire-time result. ``Session`` composes the steps: admission
(``admission.py``) accepts or refuses it; settlement (``settlement.py``) settles it by one
of four paths (already true, contract, writes only, neither) and records its evidence; its
answer is read from the transition and the state as now (``waiting.py``, ``answers.py``).
Single flights and claims hold for the application, not for one session: every session on
one substrate shares them (``FireRegistry``, held by the substrate).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

from assay.clock import SYSTEM_CLOCK, Clock
from assay.errors import GraphError, LedgerError, SessionError, WrongTypeError
from assay.expr.contract import Contract
from assay.graph.admission import (
    DEFAULT_THRESHOLDS,
    Admission,
    Refusal,
    UnknownAction,
    check_kinds,
    resolve_thresholds,
)
from assay.graph.answers import fire_result, queued_before
from assay.graph.claims import Claims
from assay.graph.declaration import ActionSpec, Reversibility
from assay.graph.evidence import EvidenceLog
from assay.graph.graph import NavigationGraph
from assay.graph.held import KEEP_SETTLED, HeldTransitions, check_keep_settled
from assay.graph.journey import Journey
from assay.graph.position import Position
from assay.graph.registry import FireRegistry
from assay.graph.result import Answer, FireResult
from assay.graph.settlement import Handler, Settlement
from assay.graph.statistics import SessionStatistics
from assay.graph.transition import Phase, Transition
from assay.graph.waiting import answer_now, check_ceiling, wait_settled
from assay.redaction import Redaction
from assay.state.snapshot import Snapshot
from assay.state.store import StateStore
from assay.state.substrate import Substrate

__all__ = ["DEFAULT_THRESHOLDS", "KEEP_SETTLED", "Handler", "Session", "resolve_thresholds"]

_PUSH_EXPECTED_INTERVAL: Final = 30.0


class Session:
    """One agent's session on a graph: its node, its state, its transitions."""

    def __init__(
        self,
        graph: NavigationGraph,
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
        check_keep_settled(keep_settled)
        if node not in graph.pages:
            raise GraphError(
                f"no page is called {node!r}; pages are {', '.join(graph.pages)}", field="node"
            )
        self.id = session_id or f"{graph.app}-{uuid.uuid4().hex[:12]}"
        self.graph = graph
        self.evidence = evidence
        self.position = Position(node)
        self.clock = clock
        self.redaction = (
            redaction if isinstance(redaction, Redaction) else Redaction(redaction or ())
        )
        self.substrate = substrate or _own_substrate(graph, state, self.redaction, clock)
        self.store = self.substrate.store
        self.held = HeldTransitions(self.id, self.store, clock, keep_settled)
        self.thresholds = resolve_thresholds(thresholds)
        self.handlers: dict[str, Handler] = {}
        self.closed = False
        registry = self.substrate.shared(FireRegistry)
        self.admission = Admission(
            self.id, graph, self.substrate, registry, self.thresholds, self.redaction
        )
        self.settlement = Settlement(
            self.id, self.substrate, clock, self.redaction, evidence, registry, self.held,
            self.position.advance,
        )  # fmt: skip
        self._subscription = self.store.subscribe_all(self.settlement.on_change)

    @property
    def node(self) -> str:
        """The page the session is on: where the last fire that worked led."""
        return self.position.node

    @node.setter
    def node(self, page: str) -> None:
        self.position.node = page

    @property
    def journeys(self) -> dict[str, Journey]:
        """The journeys started, by name."""
        return self.position.journeys

    @property
    def transitions(self) -> dict[str, Transition]:
        """Every pending transition, and the latest ``keep_settled`` settled ones."""
        return self.held.transitions

    @property
    def counters(self) -> dict[str, int]:
        """How many times this session fired each action id."""
        return self.held.counters

    @property
    def keep_settled(self) -> int:
        """How many settled transitions the session holds, beside every pending one."""
        return self.held.keep_settled

    @keep_settled.setter
    def keep_settled(self, value: int) -> None:
        self.held.keep_settled = value

    @property
    def flights(self) -> dict[str, tuple[str, str]]:
        """Single-flight action id -> its holder (session id, transition id), shared by
        every session on this substrate: they act on one application."""
        return self.substrate.shared(FireRegistry).flights

    @property
    def claims(self) -> Claims:
        """The claims on changes, shared by every session on this substrate."""
        return self.substrate.shared(FireRegistry).claims

    @property
    def queue(self) -> list[Transition]:
        """The writes-only fires awaiting a state report, in firing order."""
        return self.settlement.reports.waiting

    @property
    def tasks(self) -> set[asyncio.Task[Any]]:
        """The background work running: verifications, async handlers, probe reads."""
        return self.settlement.tasks

    @property
    def current(self) -> Snapshot:
        """The state as the session observes it now."""
        return self.store.current

    @property
    def contracts(self) -> dict[str, Contract]:
        """Each action's compiled verify mapping, by action id."""
        return self.admission.contracts

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
        return self.graph.actions(self.node)

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
        """Admit the fire, then mint its transition and settle it (or its refusal)."""
        check_kinds(action_id, source, verify_expression, verify_timeout_ms)
        verdict = self.admission.admit(
            action_id, args, source, verify_expression, verify_timeout_ms, self.node
        )
        if isinstance(verdict, UnknownAction):
            return FireResult(
                ok=False,
                did=action_id,
                effect_status="refused",
                transition_id=None,
                refusal="unknown_action",
                error=self.admission.refused_unknown(action_id, self.node),
            )
        if isinstance(verdict, Refusal):
            transition = self.held.mint(verdict.spec, verdict.args, verdict.source)
            self.settlement.refuse(transition, verdict)
            return self.result(transition)
        transition = self.held.mint(
            verdict.spec, verdict.args, verdict.source, verdict.writes, verdict.predicate
        )
        handler = self.handlers.get(verdict.spec.id)
        self.settlement.begin(transition, handler, verdict.covering, verify_timeout_ms)
        return self.result(transition)

    def let_go(self, transition_id: str) -> bool:
        """Whether this session made ``transition_id`` and, once it settled, let it go (it
        holds only its latest ``keep_settled`` settled transitions; the ledger holds all)."""
        return self.held.let_go(transition_id)

    @property
    def fired(self) -> int:
        """How many transitions this session has made, held or not."""
        return self.held.fired

    def result(self, transition: Transition) -> FireResult:
        """The fire result as of now (the receipt, plus ``outcome_now`` when it differs)."""
        return fire_result(transition, self.store.current)

    def fire_result(self, transition_id: str) -> FireResult:
        """``result`` for the transition ``transition_id``; ``NotFoundError`` if the session
        does not hold it."""
        return self.result(self.held.get(transition_id))

    def require_transition(self, transition_id: str) -> None:
        """``NotFoundError``, saying where to look, unless the session holds
        ``transition_id``."""
        self.held.get(transition_id)

    def did_it_work(self, transition_id: str, *, alongside: Iterable[Session] = ()) -> Answer:
        """``pending``, ``worked``, ``failed``, ``unobservable``, ``refused`` or
        ``unmaterialized``, with the evidence; a pending answer says what it waits on.

        ``alongside``: every open session on this substrate (this one among them), in the
        order they are told of a change. A state report settles one fire on a key across
        them all, the first session told first, so a pending writes-only fire then counts
        every fire queued ahead of it in any of them; without them, those of this session.
        """
        transition = self.held.get(transition_id)
        ahead = 0
        if transition.phase is Phase.PENDING and transition in self.queue:
            ahead = self.queue.index(transition)
            queues = [session.queue for session in alongside]
            if queues:
                ahead = queued_before(transition, queues)
        return answer_now(transition, self.store.current, ahead, self.clock.monotonic())

    async def wait_settled(self, transition_id: str, ceiling_s: float) -> bool:
        """Wait up to ``ceiling_s`` for settlement (at once for 0 or less); whether it has
        settled. ``WrongTypeError`` when ``ceiling_s`` is not a number of seconds."""
        return (await self._wait(transition_id, ceiling_s)).phase.terminal

    async def wait(self, transition_id: str, ceiling_s: float) -> FireResult:
        """Wait up to ``ceiling_s`` for settlement; the answer as of then, settled or not (at
        once for 0 or less). ``WrongTypeError`` when ``ceiling_s`` is not a number of seconds."""
        return self.result(await self._wait(transition_id, ceiling_s))

    async def _wait(self, transition_id: str, ceiling_s: float) -> Transition:
        check_ceiling(ceiling_s)
        transition = self.held.get(transition_id)
        await wait_settled(transition, ceiling_s, self.clock)
        return transition

    def statistics(self) -> SessionStatistics:
        """What the session holds and runs now: counts, as a frozen record."""
        transitions = self.held.transitions.values()
        return SessionStatistics(
            fired=self.held.fired,
            held=len(transitions),
            pending=sum(1 for t in transitions if not t.phase.terminal),
            queued=len(self.queue),
            tasks=len(self.tasks),
        )

    def start_journey(self, name: str, steps: Iterable[str]) -> Journey:
        """Track a named sequence of actions (``page.action`` ids) toward a goal; ``GraphError``
        naming the first step that is not an action of the graph, which could never be done."""
        return self.position.start_journey(
            name, steps, lambda step: self.graph.action(step) is not None
        )

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
                self.settlement.finish(transition, Phase.UNOBSERVABLE)


def _own_substrate(
    graph: NavigationGraph, state: Mapping[str, Any] | None, redaction: Redaction, clock: Clock
) -> Substrate:
    """The substrate of a session given none: pushed state starting as ``state``."""
    substrate = Substrate(
        StateStore(state, clock=clock),
        declared_keys=graph.declared_writes(),
        expected_interval=_PUSH_EXPECTED_INTERVAL,
        redaction=redaction,
        clock=clock,
    )
    substrate.store.heartbeat("session")
    return substrate
