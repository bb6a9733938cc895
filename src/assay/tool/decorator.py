"""``verified``: any Python callable, sync or async, as a tool whose every call is verified.

Each decorated function is one action of an implicit one-page graph (page ``tools``, the
action named after the function, ``does`` its docstring's first line), fired through a
session on ``substrate`` with the call's arguments, bound by the function's signature with
its defaults, as the fire's ``args``. The call waits for the tool to return, then up to
``timeout_ms`` from the fire for settlement, and returns ``Verified``: the tool's result,
assay's answer and a one-line summary. A tool that raises still raises, the same exception,
once assay has recorded the failed fire (answer ``failed``, failure ``handler``); the
exception's note carries the summary.

Loops and threads: a substrate and its sessions belong to one event loop, the first one a
verified tool uses with it. An async tool fires on the caller's running loop; called on
another loop than its substrate's, it is refused (``SessionError``). A sync tool runs in the
thread that called it, while its fire is made and verified on the substrate's loop, or, when
the substrate has none yet, on assay's own loop thread (one per process, started on first
use, which then binds the substrate). A sync tool called on its substrate's own loop is
refused, since waiting there would block the loop that verifies it. State a sync tool pushes
itself (``substrate.store.report``) must be pushed on the substrate's loop, as the store
belongs to one thread; an application observed by probes needs nothing of the kind.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import threading
from collections.abc import Callable, Iterable, Mapping
from contextvars import ContextVar
from typing import Any, Final

from pydantic_core import to_jsonable_python

from assay.errors import NotFoundError, SessionError, WrongTypeError
from assay.graph.graph import build_navigation_graph
from assay.graph.result import FireResult
from assay.graph.session import Session
from assay.graph.transition import Transition
from assay.ledger import Ledger
from assay.state.substrate import Substrate
from assay.tool.loops import LoopBinding, blocked_loop, resolve
from assay.tool.result import Verification, Verified, summary, verification_of

PAGE: Final = "tools"
"""The one page of a verified tool's implicit graph: its action id is ``tools.<name>``."""
_APP: Final = "verified"
_VERDICT_GRACE_S: Final = 0.05
"""How much longer a call waits past its ceiling for a verification whose deadline is the
ceiling: its verdict is made at that instant, and belongs in the call's answer."""

_CALL: ContextVar[Call] = ContextVar("assay verified call")


class Call:
    """One call of a verified tool: its arguments, and what the tool did with them."""

    def __init__(
        self, fn: Callable[..., Any], bound: inspect.BoundArguments, exclude: frozenset[str]
    ) -> None:
        self.fn = fn
        self.bound = bound
        kept = {name: value for name, value in bound.arguments.items() if name not in exclude}
        self.args: dict[str, Any] = to_jsonable_python(kept, fallback=repr)
        self.started = False
        self.finished = asyncio.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self.wake = threading.Event()  # a sync call's thread: the tool may run, or never will
        self.relay: asyncio.Future[Any] | None = None

    async def run_async(self) -> Any:
        """Run an async tool as the fire's handler."""
        try:
            self.result = await self.fn(*self.bound.args, **self.bound.kwargs)
        except BaseException as error:
            self.error = error
            raise
        finally:
            self.finished.set()
        return self.result

    async def run_relayed(self) -> Any:
        """The handler of a sync tool: it runs in the calling thread, which is woken now."""
        self.relay = asyncio.get_running_loop().create_future()
        self.wake.set()
        try:
            return await self.relay
        finally:
            self.finished.set()

    def run_here(self, loop: asyncio.AbstractEventLoop) -> None:
        """Run a sync tool in this thread, and hand its result to its handler on ``loop``."""
        assert self.relay is not None
        try:
            self.result = self.fn(*self.bound.args, **self.bound.kwargs)
        except Exception as error:
            self.error = error
            loop.call_soon_threadsafe(resolve, self.relay, None, error)
            return
        except BaseException:  # an interrupt: the handler is cancelled, and it goes on
            loop.call_soon_threadsafe(self.relay.cancel)
            raise
        loop.call_soon_threadsafe(resolve, self.relay, self.result, None)


def _handler(args: Mapping[str, Any]) -> Any:
    """Every verified tool's handler: it runs the call being fired (the fire is made in the
    calling task, so its context holds the call)."""
    call = _CALL.get()
    call.started = True
    return call.run_async() if inspect.iscoroutinefunction(call.fn) else call.run_relayed()


class VerifiedTool:
    """A function declared as an action on ``substrate``, and how a call of it is fired."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        substrate: Substrate,
        writes: Iterable[str],
        verify: Mapping[str, Any] | str | None,
        timeout_ms: int,
        verify_timeout_ms: int | None,
        settle_ms: int,
        reversibility: str,
        single_flight: bool,
        name: str | None,
        does: str | None,
        ledger: Ledger | None,
        source: str,
        exclude: Iterable[str] = (),
    ) -> None:
        if not callable(fn):
            raise WrongTypeError(
                f"verified wraps a function, not {type(fn).__name__}", parameter="fn"
            )
        if not isinstance(substrate, Substrate):
            raise WrongTypeError(
                f"substrate must be an assay Substrate, not {type(substrate).__name__}; wrap a "
                "StateStore as Substrate(store), or give probes as Substrate(probes=[...])",
                parameter="substrate",
            )
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms < 0:
            raise WrongTypeError(
                f"timeout_ms must be a whole number of milliseconds, 0 or more, not {timeout_ms!r}",
                parameter="timeout_ms",
            )
        self.fn = fn
        self.name = name if name is not None else fn.__name__
        self.substrate = substrate
        self.timeout_ms = timeout_ms
        self.ledger = ledger
        self.source = source
        declaration: dict[str, Any] = {
            "does": does if does is not None else _first_line(fn) or f"Call {self.name}",
            "writes": list(writes) if not isinstance(writes, str) else writes,
            "reversibility": reversibility,
            "single_flight": single_flight,
            "settle_ms": settle_ms,
            "verify_timeout_ms": timeout_ms if verify_timeout_ms is None else verify_timeout_ms,
        }
        if verify is not None:
            declaration["verify"] = verify
        self.graph = build_navigation_graph(_APP, {PAGE: {"actions": {self.name: declaration}}})
        self.action_id = f"{PAGE}.{self.name}"
        self.signature = inspect.signature(fn)
        self.exclude = frozenset([exclude] if isinstance(exclude, str) else exclude)
        unknown = sorted(self.exclude - set(self.signature.parameters))
        if unknown:
            raise WrongTypeError(
                f"exclude names {', '.join(map(repr, unknown))}, which {self.name} has no "
                f"parameter called; its parameters are {', '.join(self.signature.parameters)}",
                parameter="exclude",
            )
        self.binding = substrate.shared(LoopBinding)
        self._session: Session | None = None

    def call_of(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Call:
        """The call for these arguments, with the function's defaults (``TypeError`` as the
        function itself raises for arguments that do not fit its signature)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return Call(self.fn, bound, self.exclude)

    def _new_session(self) -> Session:
        session = self.graph.create_session(
            node=PAGE, substrate=self.substrate, clock=self.substrate.clock, evidence=self.ledger
        )
        session.register_actions(PAGE, {self.name: _handler})
        self._session = session
        return session

    async def fire(self, call: Call) -> Verified:
        """Fire ``call`` on the substrate's loop (where this runs) and wait for its answer."""
        session = await self.binding.session(self, self.substrate, self._new_session)
        token = _CALL.set(call)
        try:
            fired = await session.afire(self.action_id, call.args, source=self.source)
        finally:
            _CALL.reset(token)
        if fired.transition_id is None:
            return self._verified(call, verification_of(fired, None))
        transition = session.transitions[fired.transition_id]
        if call.started:
            await call.finished.wait()
        clock = self.substrate.clock
        ceiling = self.timeout_ms / 1000 - (clock.monotonic() - transition.fired_at)
        fired = await session.wait(transition.id, ceiling)
        if fired.effect_status == "pending" and _verdict_due(transition, clock.monotonic()):
            fired = await session.wait(transition.id, _VERDICT_GRACE_S)
        return self._verified(call, verification_of(fired, session.did_it_work(transition.id)))

    def _verified(self, call: Call, verification: Verification) -> Verified:
        return Verified(
            result=call.result, verification=verification, summary=summary(self.name, verification)
        )

    def returned(self, call: Call, verified: Verified) -> Verified:
        """What the wrapper returns for ``call``: ``verified``, or the tool's own exception,
        raised again with the summary as its note."""
        if call.error is not None:
            call.error.add_note(f"assay: {verified.summary}")
            raise call.error
        return verified

    def did_it_work(self, transition_id: str) -> Verification:
        """The answer as of now for a call of this tool (``NotFoundError`` for an id none of
        its calls was given). Ask it on the substrate's loop or from any other thread."""
        session = self._session
        if session is None:
            raise NotFoundError(
                f"no call of the verified tool {self.name!r} has fired yet, so there is no "
                f"transition {transition_id!r}",
                kind="transition",
                id=str(transition_id),
            )

        def now() -> Verification:
            answer = session.did_it_work(transition_id)
            transition = session.transitions.get(transition_id)
            fired = None if transition is None else session.result(transition)
            return verification_of(fired or _NO_RECEIPT, answer)

        loop = self.binding.loop
        if loop is None or loop.is_closed() or _running() is loop or not loop.is_running():
            return now()
        return asyncio.run_coroutine_threadsafe(_returning(now), loop).result()


_NO_RECEIPT: Final = FireResult(ok=True, did="", effect_status="settled", transition_id=None)


async def _returning(fn: Callable[[], Verification]) -> Verification:
    return fn()


def _verdict_due(transition: Transition, now: float) -> bool:
    """Whether ``transition``'s verification deadline has come: its verdict is made now."""
    timeout = transition.verify_timeout_ms
    timeout = transition.spec.verify_timeout_ms if timeout is None else timeout
    return transition.fired_at + timeout / 1000 <= now


def _running() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _first_line(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.strip().splitlines()[0].strip() if doc.strip() else ""


def _wrap(tool: VerifiedTool) -> Callable[..., Any]:
    """The function that stands for ``tool``: the same parameters and docstring, and a
    ``did_it_work(transition_id)`` for asking about a call later."""

    async def fire_async(*args: Any, **kwargs: Any) -> Verified:
        call = tool.call_of(args, kwargs)
        tool.binding.bind(asyncio.get_running_loop(), tool.name)
        return tool.returned(call, await tool.fire(call))

    def fire_sync(*args: Any, **kwargs: Any) -> Verified:
        call = tool.call_of(args, kwargs)
        loop = tool.binding.target()
        if _running() is loop:
            raise SessionError(blocked_loop(tool.name))
        future = asyncio.run_coroutine_threadsafe(tool.fire(call), loop)
        future.add_done_callback(lambda _: call.wake.set())
        call.wake.wait()
        if call.relay is not None:  # its handler began: the tool runs here, now
            call.run_here(loop)
        return tool.returned(call, future.result())

    fn = tool.fn
    wrapper: Any = functools.update_wrapper(
        fire_async if inspect.iscoroutinefunction(fn) else fire_sync, fn
    )
    wrapper.__signature__ = tool.signature.replace(return_annotation=Verified)
    wrapper.__annotations__ = {**getattr(fn, "__annotations__", {}), "return": Verified}
    wrapper.did_it_work = tool.did_it_work
    wrapper.__assay_tool__ = tool
    return wrapper  # type: ignore[no-any-return]


def tool_of(fn: object) -> VerifiedTool | None:
    """The verified tool ``fn`` stands for, or ``None`` when ``verified`` did not make it."""
    tool = getattr(fn, "__assay_tool__", None)
    return tool if isinstance(tool, VerifiedTool) else None


def verified(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    substrate: Substrate,
    writes: Iterable[str] = (),
    verify: Mapping[str, Any] | str | None = None,
    timeout_ms: int = 5000,
    verify_timeout_ms: int | None = None,
    settle_ms: int = 0,
    reversibility: str = "reversible",
    single_flight: bool = False,
    name: str | None = None,
    does: str | None = None,
    ledger: Ledger | None = None,
    source: str = "agent",
    exclude: Iterable[str] = (),
) -> Any:
    """Make ``fn`` a verified tool (``@verified(substrate=..., ...)``, or
    ``verified(fn, substrate=..., ...)``): each call fires it as an action declaring
    ``writes`` and ``verify`` (a filter mapping or an expression, ``{name}`` placeholders
    filled from the call's arguments), waits up to ``timeout_ms`` from the fire, and
    returns ``Verified``. ``verify_timeout_ms`` (default ``timeout_ms``) is how long its
    contract is watched; a call that returns pending is asked about later with the
    wrapper's ``did_it_work(transition_id)``. Evidence goes to ``ledger`` when given, else
    nowhere. ``exclude`` names parameters the function gets but the fire's ``args`` leave out,
    such as a framework's context (``ctx: RunContext``). A declaration that cannot hold raises
    ``GraphError`` here, naming the field."""

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        return _wrap(
            VerifiedTool(
                function,
                substrate=substrate,
                writes=writes,
                verify=verify,
                timeout_ms=timeout_ms,
                verify_timeout_ms=verify_timeout_ms,
                settle_ms=settle_ms,
                reversibility=reversibility,
                single_flight=single_flight,
                name=name,
                does=does,
                ledger=ledger,
                source=source,
                exclude=exclude,
            )
        )

    return decorate if fn is None else decorate(fn)
