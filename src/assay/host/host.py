"""``Host``: one application, its sessions and its ledger, behind every port.

The HTTP daemon and the MCP server are thin: they parse a request into a wire type, call the
host, and render the answer. The host connects to the application, opens sessions on its one
shared substrate, fires and waits with a ceiling, verifies, takes state reports, and records
every answer through ``DurableEvidence``; it answers a caller only once the evidence of that
answer is durable.

It holds a lease on the ledger while it runs (``Tenure``), under an owner id every fire it
records names, and closes the fires that hosts gone before it left open (``Recovery``): at
start, and whenever it sees another host's lease expired. It answers ``did_it_work`` for any
transition the ledger knows, its session held here or not (``recorded_answer``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import uuid
from collections.abc import Awaitable, Callable, Mapping
from functools import lru_cache
from types import TracebackType
from typing import Any, Self

from assay.clock import SYSTEM_CLOCK, Clock
from assay.defaults import DEFAULT_LEASE_S, DEFAULT_SESSION_IDLE_S
from assay.errors import (
    ContractError,
    LedgerError,
    NotFoundError,
    RequestError,
    SessionError,
    WrongTypeError,
)
from assay.expr import compile_expression
from assay.expr.contract import compile_contract
from assay.expr.predicate import Predicate
from assay.graph.answers import answer_from_evidence
from assay.graph.declaration import Reversibility
from assay.graph.result import ALREADY_TRUE_WHY, Answer, FireResult
from assay.graph.session import Session, resolve_thresholds
from assay.host.application import Application, ConnectContext, Connection
from assay.host.evidence import DurableEvidence
from assay.host.idempotency import IdempotencyCache, reused
from assay.host.keyed import KEYED, KeyedFire, KeyedFires, keyed_body, replayed
from assay.host.recorded import recorded_answer
from assay.host.recovery import Recovery
from assay.host.session_registry import DEFAULT_SESSION, SessionRegistry
from assay.host.tenure import Tenure, new_owner
from assay.host.wire import (
    ActionInfo,
    ActionList,
    ActionRequest,
    ActionResponse,
    ReportReceipt,
    ReportRequest,
    SessionInfo,
    TransitionAnswer,
    VerifyRequest,
    success_of,
)
from assay.json.path import parse_path, read_path
from assay.ledger.entry import Entry
from assay.ledger.ledger import Ledger
from assay.redaction import REDACTED, Redaction
from assay.state.substrate import Substrate, SubstrateState
from assay.verify.loop import VerifyOptions, verify
from assay.verify.outcome import VerificationOutcome

PROGRESS_EVERY_S = 1.0
SWEEP_EVERY_S = 60.0
"""The longest the host waits between looks for idle sessions."""

WaitProgress = Callable[[float, float, str], Awaitable[None]]
"""Called while a wait goes on: (elapsed ms, ceiling ms, what it waits on)."""


class Host:
    """Hosts ``application``: sessions on its state, evidence into ``ledger``."""

    def __init__(
        self,
        application: Application,
        ledger: Ledger,
        *,
        clock: Clock = SYSTEM_CLOCK,
        thresholds: Mapping[Reversibility, float] | Mapping[str, float] | None = None,
        redaction: Redaction | None = None,
        session_idle_s: float | None = DEFAULT_SESSION_IDLE_S,
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        if session_idle_s is not None and (
            isinstance(session_idle_s, bool)
            or not isinstance(session_idle_s, int | float)
            or not math.isfinite(session_idle_s)
            or session_idle_s <= 0
        ):
            raise WrongTypeError(
                "session_idle_s must be a positive number of seconds, or None for sessions "
                f"that never expire, not {session_idle_s!r}",
                parameter="session_idle_s",
            )
        self.application = application
        self.graph = application.graph
        self.ledger = ledger
        self.clock = clock
        self.redaction = redaction or Redaction(application.redaction)
        given: dict[Any, float] = dict(application.thresholds)
        given.update(thresholds or {})  # the host's own over the application's
        self.thresholds: dict[Reversibility, float] = resolve_thresholds(given)
        self.owner = new_owner()
        """This host's id on the ledger: its lease's, and that of every fire it records."""
        self.tenure = Tenure(ledger, self.owner, lease_s, clock)
        self._recovery: Recovery | None = None
        self._tending: asyncio.Task[None] | None = None
        self.evidence = DurableEvidence(ledger, owner=self.owner)
        self.sessions = SessionRegistry(clock)
        """The open sessions by id, in the order they were opened."""
        self.session_idle_s = session_idle_s
        self._sweeper: asyncio.Task[None] | None = None
        self.idempotency: IdempotencyCache[ActionResponse] = IdempotencyCache()
        self.keyed = KeyedFires(ledger, self.idempotency.capacity)
        """The keyed fires the ledger records, read back on the first key memory misses."""
        self._keyed_loading = asyncio.Lock()
        self._connection: Connection | None = None

    async def start(self) -> None:
        """Build the ledger's Merkle tree, take this host's lease and close the fires that
        hosts gone before it left open, connect to the application, start observing it, open
        the default session.

        The tree is built here, before anything is served, so that no request (and no
        append, which takes its entries into the tree) waits while every stored entry is
        read back and hashed.
        """
        head = await asyncio.to_thread(self.ledger.refresh)
        await self.tenure.take()
        self._recovery = Recovery(self.ledger, self.owner, started_at=head.size)
        await self.recover()
        context = ConnectContext(clock=self.clock, redaction=self.redaction)
        self._connection = await self.application.connect(context)
        substrate = self._connection.substrate
        await substrate.read_fresh()  # the default session opens on what the probes see
        await substrate.start()
        # Its own id, so that two runs of a daemon on one ledger never share transition ids;
        # "default" (or no session at all) names it in requests.
        self.sessions.default = self._open(None, None, expires=False).id
        if self.session_idle_s is not None:
            self._sweeper = asyncio.create_task(self._sweep(self.session_idle_s))
        self._tending = asyncio.create_task(self._tend())

    async def stop(self) -> None:
        """Close every session and the connection; store what evidence is queued; release
        the lease (nothing this host fired is left open)."""
        for task in (self._sweeper, self._tending):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._sweeper = self._tending = None
        for session in self.sessions.drain():
            await session.close()
        if self._connection is not None:
            await self._connection.aclose()
            self._connection = None
        self.evidence.close()
        if self.evidence.failure is None:  # else its fires may be open: leave them closable
            with contextlib.suppress(LedgerError):
                await self.tenure.release()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def default_session(self) -> str:
        """The default session's id: its own, so that two runs of a daemon on one ledger
        never share transition ids (``DEFAULT_SESSION`` names it in requests)."""
        return self.sessions.default

    # The registry's records, under the names tests of the host's memory bounds read.
    @property
    def _used(self) -> Mapping[str, float]:
        return self.sessions.used

    @property
    def _closed(self) -> Mapping[str, str]:
        return self.sessions.closed

    @property
    def _opened(self) -> Mapping[str, int]:
        return self.sessions.opened

    @property
    def connection(self) -> Connection:
        """The live connection; an error before ``start``."""
        if self._connection is None:
            raise RuntimeError("the host has not been started (use 'async with Host(...)')")
        return self._connection

    @property
    def substrate(self) -> Substrate:
        """The application's observed state, shared by every session."""
        return self.connection.substrate

    def open_session(self, node: str | None = None, *, session_id: str | None = None) -> Session:
        """A new session at ``node`` (the application's start page by default)."""
        return self._open(node, session_id, expires=True)

    def _open(self, node: str | None, session_id: str | None, *, expires: bool) -> Session:
        node = node or self.application.start
        if node not in self.graph.pages:
            raise RequestError(
                f"no page is called {node!r}; pages are {', '.join(self.graph.pages)}",
                field="node",
            )
        session = Session(
            self.graph,
            node=node,
            substrate=self.substrate,
            clock=self.clock,
            redaction=self.redaction,
            thresholds=self.thresholds,
            evidence=self.evidence,
            session_id=session_id or f"{self.graph.app}-{uuid.uuid4().hex[:12]}",
        )
        session.register_actions_by_id(self.connection.handlers)
        self.sessions.add(session, expires=expires)
        return session

    def list_sessions(self, *, after: str | None = None, limit: int | None = None) -> list[Session]:
        """The open sessions in the order they were opened (the default one first): those
        opened after session ``after`` (all when ``None``), at most ``limit`` of them.

        Page on with ``after`` = the last id received; it may have closed since.
        ``NotFoundError`` if ``after`` names no session this host opened and remembers.
        """
        return self.sessions.page(after, limit)

    def session(self, session_id: str | None) -> Session:
        """The session called ``session_id`` (the default session for ``None``)."""
        return self.sessions.find(session_id)

    async def close_session(self, session_id: str) -> None:
        """Close a session; its transitions stay in the ledger, those still pending settled
        as unobservable (``Session.close``), durably before this returns."""
        session = self.session(session_id)
        if session.id == self.default_session:
            raise RequestError("the default session cannot be closed", field="session")
        await self._close(session, "was closed")

    async def _close(self, session: Session, why: str) -> None:
        self.sessions.forget(session, why)
        await session.close()
        await self.evidence.durable()

    async def expire_idle(self) -> list[str]:
        """Close each session no request has named for ``session_idle_s`` or longer, unless
        it has a transition pending or a handler still running; answer their ids.

        The host does this by itself while started, at least every ``SWEEP_EVERY_S``; a
        request naming an expired session is told it expired. The default session never
        expires.
        """
        idle_s = self.session_idle_s
        if idle_s is None:
            return []
        expired: list[str] = []
        for session in self.sessions.idle(idle_s):
            await self._close(session, f"expired: no request named it for {idle_s:g} s")
            expired.append(session.id)
        return expired

    async def _sweep(self, idle_s: float) -> None:
        """Expire idle sessions, for as long as the host runs."""
        while True:
            await self.clock.sleep(min(idle_s / 2, SWEEP_EVERY_S))
            # A ledger that stopped taking evidence is told to the requests; the sweep goes on.
            with contextlib.suppress(LedgerError):
                await self.expire_idle()

    async def recover(self) -> list[Entry]:
        """Close the fires that hosts now gone left open (``Recovery``); answer the
        settlements stored. The host does this at start and every third of its lease."""
        if self._recovery is None:
            raise RuntimeError("the host has not been started (use 'async with Host(...)')")
        return await self.tenure.run(self._recovery.sweep, self.tenure.now)

    async def _tend(self) -> None:
        """Renew the lease and close what stopped hosts left open, for as long as the host
        runs; once the lease is found gone, stop recording evidence (see ``Tenure``)."""
        while True:
            await self.clock.sleep(self.tenure.every_s)
            if self.evidence.failure is not None:
                return  # its evidence stopped: it keeps no lease, and closes nothing
            # A ledger that cannot be reached now is tried again at the next renewal.
            with contextlib.suppress(LedgerError):
                if not await self.tenure.renew():
                    self.evidence.halt(self.tenure.lost())
                    return
                await self.recover()

    def describe(self, session: Session) -> SessionInfo:
        """Where ``session`` is and what it has fired."""
        statistics = session.statistics()
        return SessionInfo(
            id=session.id,
            app=self.graph.app,
            node=session.node,
            transitions=statistics.fired,
            pending=statistics.pending,
        )

    def actions(self, session_id: str | None = None) -> ActionList:
        """The actions at the session's current page, with what each needs to fire."""
        session = self.session(session_id)
        return ActionList(
            session=session.id,
            node=session.node,
            confidence=self.substrate.confidence().value,
            actions=[
                ActionInfo(
                    id=spec.id,
                    does=spec.does,
                    writes=list(spec.writes),
                    verify=spec.verify_source,
                    reversibility=spec.reversibility.value,
                    threshold=self.thresholds[spec.reversibility],
                    to=spec.to,
                    single_flight=spec.single_flight,
                    input_schema=dict(spec.input_schema) if spec.input_schema else None,
                )
                for spec in session.available()
            ],
        )

    async def fire(
        self,
        request: ActionRequest,
        *,
        idempotency_key: str | None = None,
        scope: str = "",
        progress: WaitProgress | None = None,
    ) -> ActionResponse:
        """Fire, wait up to ``request.wait_ms`` for settlement, answer once it is durable.

        With ``idempotency_key``, a retry returns the first answer and never fires again,
        also after a restart: the key is recorded in the fire's entry, and a key this host
        does not remember is looked for in the ledger (``assay.host.keyed``), its answer then
        ``did_it_work``'s for that transition after waiting up to ``request.wait_ms``. A retry
        may name the default session by any of its names (or leave it out). ``progress`` is
        told first, before any wait, the fire's transition id.
        """
        if request.session is not None and request.session in (
            DEFAULT_SESSION,
            self.default_session,
        ):
            request = request.model_copy(update={"session": None})
        if idempotency_key is None:
            return await self._fire(request, progress)
        key = idempotency_key
        told = None if progress is None else _quiet(progress)
        return await self.idempotency.run(
            scope,
            key,
            request,
            lambda fingerprint: self._fire(request, told, keyed=(scope, key, fingerprint)),
            lambda fingerprint: self._recall(scope, key, fingerprint, request, told),
        )

    async def _recall(
        self,
        scope: str,
        key: str,
        fingerprint: str,
        request: ActionRequest,
        progress: WaitProgress | None,
    ) -> ActionResponse | None:
        """The answer of the fire the ledger records under ``key``, if it does; refused
        (``IdempotencyKeyReusedError``) when that fire answered a different request."""
        if not self.keyed.loaded:
            async with self._keyed_loading:
                if not self.keyed.loaded:
                    await asyncio.to_thread(self.keyed.load)
        found = self.keyed.get(scope, key)
        if found is None:
            return None
        if found.fingerprint != fingerprint:
            raise reused(key)
        answer = await self.wait(found.session, found.transition, request.wait_ms, progress)
        return replayed(answer, request.action)

    async def _fire(
        self,
        request: ActionRequest,
        progress: WaitProgress | None,
        *,
        keyed: tuple[str, str, str] | None = None,
    ) -> ActionResponse:
        session = self.session(request.session)
        recording = KEYED.set(None if keyed is None else keyed_body(*keyed))
        try:
            fired = await session.afire(
                request.action,
                request.args,
                source=request.source,
                verify_expression=request.verify_expression,
                verify_timeout_ms=request.verify_timeout_ms,
            )
        except SessionError:
            if session.closed:  # while the probes were read: say so, as for any closed session
                self.session(request.session)
            raise
        finally:
            KEYED.reset(recording)
        if keyed is not None and fired.ok and fired.transition_id is not None:
            scope, key, fingerprint = keyed
            self.keyed.add(scope, key, KeyedFire(fingerprint, session.id, fired.transition_id))
        if fired.transition_id is not None and fired.effect_status == "pending":
            await self._wait(session, fired.transition_id, request.wait_ms, progress)
        await self.evidence.durable()
        # Answered as of now, not as of the fire: it may have settled while it waited or while
        # its evidence was stored, and what the answer says must then be durable too.
        response = self._response(session, fired)
        await self.evidence.durable()
        return response

    async def wait(
        self,
        session_id: str | None,
        transition_id: str,
        wait_ms: int,
        progress: WaitProgress | None = None,
    ) -> TransitionAnswer:
        """did_it_work, after waiting up to ``wait_ms`` for the transition to settle; for a
        session this host does not hold, read from the ledger at once (nothing here can
        settle it)."""
        try:
            session = self.session(session_id)
        except NotFoundError:
            return await self.adid_it_work(session_id, transition_id)
        if session.let_go(transition_id):  # settled long since: nothing to wait for
            return await self.adid_it_work(session_id, transition_id)
        session.require_transition(transition_id)  # NotFoundError before waiting
        await self._wait(session, transition_id, wait_ms, progress)
        await self.evidence.durable()
        if session.id not in self.sessions:
            # Closed while this waited, which settled the transition: answer that, not 404.
            return self._told(session, transition_id, None)
        return self.did_it_work(session_id, transition_id)

    async def _wait(
        self, session: Session, transition_id: str, wait_ms: int, progress: WaitProgress | None
    ) -> None:
        ceiling = wait_ms / 1000
        started = self.clock.monotonic()
        if progress is not None and ceiling > 0:
            # Before any wait: a caller whose wait is cut short still knows what to ask about.
            await progress(0.0, float(wait_ms), self._waiting(session, transition_id))
        while True:
            elapsed = self.clock.monotonic() - started
            left = ceiling - elapsed
            step = left if progress is None else min(left, PROGRESS_EVERY_S)
            if await session.wait_settled(transition_id, max(step, 0.0)) or left <= step:
                return
            if progress is not None:
                elapsed_ms = (self.clock.monotonic() - started) * 1000
                await progress(elapsed_ms, float(wait_ms), self._waiting(session, transition_id))

    def _waiting(self, session: Session, transition_id: str) -> str:
        """What a wait's progress says it waits on: the transition, and what would settle it."""
        waiting = self._answer(session, transition_id).waiting_on or "settlement"
        return f"{waiting} (transition {transition_id})"

    def did_it_work(self, session_id: str | None, transition_id: str) -> TransitionAnswer:
        """pending, worked, failed, unobservable, refused or unmaterialized, with evidence.

        A transition the session has let go (see ``Session.let_go``), or of a session this
        host does not hold (closed, expired, another daemon's or an earlier run's), is
        answered from its entries in the ledger, read on this thread: one indexed query
        (``adid_it_work`` reads them in a worker thread instead). ``NotFoundError`` only for
        a transition the ledger does not know either.
        """
        try:
            session = self.session(session_id)
        except NotFoundError as missing:
            return self._unheld(missing, transition_id)
        entries = None
        if session.let_go(transition_id):
            entries = self.ledger.query(session=session.id, transition=transition_id)
        return self._told(session, transition_id, entries)

    async def adid_it_work(self, session_id: str | None, transition_id: str) -> TransitionAnswer:
        """``did_it_work`` for an event loop: a let-go transition's ledger entries are read
        in a worker thread, so the loop never waits on the database."""
        try:
            session = self.session(session_id)
        except NotFoundError as missing:
            return await asyncio.to_thread(self._unheld, missing, transition_id)
        entries = None
        if session.let_go(transition_id):
            entries = await asyncio.to_thread(
                self.ledger.query, session=session.id, transition=transition_id
            )
        return self._told(session, transition_id, entries)

    def _told(
        self, session: Session, transition_id: str, entries: list[Entry] | None
    ) -> TransitionAnswer:
        """The answer for ``transition_id`` of ``session``: read back from its ledger
        ``entries`` once it settled and the session let it go, else as the session holds it
        now (which, for one let go but not in the ledger, says where to look)."""
        ending = None
        if entries is not None:
            kinds = ("settlement", "refusal")
            ending = next((e for e in reversed(entries) if e.kind in kinds), None)
        if ending is None:
            answer = self._answer(session, transition_id)
        else:
            assert entries is not None  # an ending is one of them
            fire = next((entry.body for entry in entries if entry.kind == "fire"), None)
            answer = answer_from_evidence(transition_id, fire, ending.kind, ending.body)
        return TransitionAnswer(session=session.id, **answer.model_dump())

    def _answer(self, session: Session, transition_id: str) -> Answer:
        """``session.did_it_work``, with the fires that the other sessions of this host
        queued counted in a pending writes-only fire's ``waiting_on``: one state report
        settles one fire on a key across every session on the substrate, the first session
        told first (the sessions are told in the order they were opened). A session closing
        is no longer among them, and counts only its own."""
        held = self.sessions.get(session.id) is session
        return session.did_it_work(transition_id, alongside=self.sessions.values() if held else ())

    def _unheld(self, missing: NotFoundError, transition_id: str) -> TransitionAnswer:
        """The answer for a transition of session ``missing.id``, which this host does not
        hold, read from the ledger (``recorded_answer``); ``missing`` itself, saying what to
        do, when the ledger does not know the transition either."""
        backend = self.ledger.backend
        answer = recorded_answer(
            transition_id,
            self.ledger.query(session=missing.id, transition=transition_id),
            owner=self.owner,
            leases=lambda: backend.leases(now=self.tenure.now),
            now=self.clock.wall(),
        )
        if answer is None:
            raise missing
        return TransitionAnswer(session=missing.id, **answer.model_dump())

    def _response(self, session: Session, fired: FireResult) -> ActionResponse:
        """The answer for ``fired`` as the session holds it now (the receipt and the answer
        read at one moment, so they never disagree)."""
        answer = None
        if fired.transition_id is not None and fired.ok:
            transition_id = fired.transition_id
            fired = session.fire_result(transition_id)
            answer = self._answer(session, transition_id)
        executed = fired.ok and fired.materialized
        kind = answer.answer if answer is not None else None
        # The answer's own why (settled or pending), after the already-true sentence when
        # the fire carries that evidence: the sentence says nothing of how it settled.
        why = answer.why if answer is not None else fired.error
        if answer is not None and fired.already_true is not None:
            why = f"{ALREADY_TRUE_WHY} {why}"
        return ActionResponse(
            executed=executed,
            success=success_of(kind),
            session=session.id,
            ok=fired.ok,
            did=fired.did,
            effect_status=fired.effect_status,
            transition_id=fired.transition_id,
            answer=kind if kind is not None else "refused",
            waiting_on=answer.waiting_on if answer is not None else None,
            already_true=fired.already_true,
            why=why,
            outcome_now=fired.outcome_now,
            error=fired.error,
            refusal=fired.refusal,
            refusal_figures=fired.refusal_figures,
            materialized=fired.materialized,
            failure=fired.failure,
            verification=fired.outcome,
        )

    async def verify(
        self, request: VerifyRequest, *, progress: WaitProgress | None = None
    ) -> VerificationOutcome:
        """Check a contract against the state until it holds or the timeout passes; the
        answer is recorded as a verdict before it is returned. ``progress`` is told, about
        every ``PROGRESS_EVERY_S``, how long it has waited and what for."""
        session = self.session(request.session)
        predicate = self.predicate(request.expression)
        await self.substrate.read_fresh()  # "holds now" is the application's now, not a poll's
        options = VerifyOptions(
            settle_ms=request.settle_ms,
            timeout_ms=request.timeout_ms,
            poll_interval_ms=self.substrate.poll_interval_ms,
        )
        checking = verify(
            predicate,
            self.substrate.store,
            options=options,
            clock=self.clock,
            redaction=self.redaction,
        )
        if progress is None:
            outcome = await checking
        else:
            waiting = f"the contract {predicate.source} to hold"
            outcome = await self._with_progress(checking, progress, request.timeout_ms, waiting)
        self.evidence.append(
            "verdict",
            {"subject": "verify", "outcome": outcome.model_dump(mode="json")},
            session=session.id,
        )
        await self.evidence.durable()
        return outcome

    async def _with_progress(
        self, work: Awaitable[VerificationOutcome], progress: WaitProgress, total_ms: int, what: str
    ) -> VerificationOutcome:
        """Await ``work``, telling ``progress`` about every ``PROGRESS_EVERY_S`` that it still
        waits on ``what``; cancelling this cancels ``work``."""
        task = asyncio.ensure_future(work)
        started = self.clock.monotonic()
        try:
            while True:
                tick = asyncio.ensure_future(self.clock.sleep(PROGRESS_EVERY_S))
                try:
                    await asyncio.wait({task, tick}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    tick.cancel()
                if task.done():
                    return task.result()
                elapsed_ms = (self.clock.monotonic() - started) * 1000
                await progress(elapsed_ms, float(total_ms), what)
        finally:
            task.cancel()

    def predicate(self, contract: str | Mapping[str, Any]) -> Predicate:
        """Compile a contract: an expression string or a declarative filter mapping.

        ``ExpressionSyntaxError`` (with position) and ``ContractError`` say what is wrong.
        """
        if isinstance(contract, str):
            return _compile_expression(contract)
        compiled = compile_contract(contract, redaction=self.redaction)
        if compiled.placeholders:
            names = ", ".join(f"{{{name}}}" for name in sorted(compiled.placeholders))
            raise ContractError(
                f"the contract holds placeholders ({names}), which only an action's "
                "arguments fill, and a verify has none; write each key in full, such as "
                "orders.A1.status rather than orders.{order_id}.status"
            )
        return compiled

    def state(self, keys: list[str] | None = None) -> SubstrateState:
        """The current state (redacted) with its confidence; only ``keys`` when given."""
        state = self.substrate.state()
        if not keys:
            return state
        selected: dict[str, Any] = {}
        for key in keys:
            try:
                path = parse_path(key)
            except Exception as error:
                message = f"keys: {key!r} is not a state path: {error}"
                raise RequestError(message, field="keys") from None
            found = read_path(state.objects, path)
            if found.found:
                _place(selected, path, found.value)
                continue
            # Under a withheld key the path cannot be read: show the key as withheld, never
            # as missing (nor claim the path exists under it).
            for depth in range(1, len(path)):
                if read_path(state.objects, path[:depth]).value == REDACTED:
                    _place(selected, path[:depth], REDACTED)
                    break
        return state.model_copy(update={"objects": selected})

    def report(self, request: ReportRequest) -> ReportReceipt:
        """Merge (or replace) the application's reported state; wakes whoever waits on it."""
        store = self.substrate.store
        if request.replace:
            snapshot = store.replace(request.values, source=request.source)
        else:
            snapshot = store.report(request.values, source=request.source)
        return ReportReceipt(changed=snapshot is not None, version=store.version)


def _quiet(progress: WaitProgress) -> WaitProgress:
    """``progress``, its failures ignored: a keyed fire runs on when its first caller has
    gone, and telling that caller must not fail it for the retries."""

    async def told(elapsed_ms: float, ceiling_ms: float, what: str) -> None:
        with contextlib.suppress(Exception):
            await progress(elapsed_ms, ceiling_ms, what)

    return told


@lru_cache(maxsize=1024)
def _compile_expression(source: str) -> Predicate:
    return compile_expression(source)


def _place(target: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    for part in path[:-1]:
        target = target.setdefault(part, {})
    target[path[-1]] = value
