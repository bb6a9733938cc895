"""Calls bounded by a wall: a planner, an executor or a verifier is waited for only until the
tightest wall bound around it runs out, plus a short grace to stop.

An ``async`` callable runs on the event loop and is cancelled when the bound runs out; a
plain one runs in a daemon thread of its own, which nothing can stop, so the loop (and the
daemon serving on it) runs on meanwhile. A call that has not ended ``STOP_GRACE_S`` after its
bound ran out (a coroutine that swallows ``CancelledError``, a thread that stays blocked) is
abandoned: it is no longer waited for, whatever it returns later is dropped, and
``AbandonedError`` says so. ``run`` is ``asyncio.run`` except that, when the run is over, it
gives what was abandoned a few turns of the loop to stop, and does not wait for it longer.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import math
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from assay.clock import Clock, Timer
from assay.workflow.budget import BudgetMeter, Exhaustion

STOP_GRACE_S: Final = 5.0
"""How long, after its wall bound ran out, a call may take to stop before it is abandoned."""

_T = TypeVar("_T")
_LAST_TURNS: Final = 64
"""How many turns of the loop abandoned calls get, as it ends, to take their cancellation."""
_abandoned: set[asyncio.Future[Any]] = set()
"""Calls given up on that have not ended yet; held here so none is collected while it runs."""


class OutOfTimeError(Exception):
    """A call was still running when a wall bound ran out; it stopped within the grace, and
    what it came to, if anything, is dropped."""

    def __init__(self, exhaustion: Exhaustion) -> None:
        super().__init__(exhaustion.reason)
        self.exhaustion = exhaustion


class AbandonedError(Exception):
    """A call did not stop within ``grace`` seconds after a wall bound ran out: it was
    abandoned, possibly still running; ``in_thread`` when it is a plain call in a thread."""

    def __init__(self, exhaustion: Exhaustion, grace: float, *, in_thread: bool) -> None:
        super().__init__(exhaustion.reason)
        self.exhaustion = exhaustion
        self.grace = grace
        self.in_thread = in_thread


def is_async(function: Callable[..., Any]) -> bool:
    """Whether calling ``function`` only makes a coroutine: an ``async def`` function, or an
    object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__
    )


async def bounded(
    function: Callable[[Any], Any],
    argument: Any,
    meter: BudgetMeter,
    clock: Clock,
    *,
    grace: float = STOP_GRACE_S,
) -> Any:
    """``function(argument)`` within ``meter``'s tightest wall bound: an ``async`` one on the
    loop, a plain one in a daemon thread (an awaitable it returns is awaited on the loop,
    within the same bound). ``OutOfTimeError`` or ``AbandonedError`` when the bound runs out;
    what the call raises, otherwise."""
    if is_async(function):
        return await within(function(argument), meter, clock, grace=grace)
    result = await within(
        in_thread(lambda: function(argument)), meter, clock, grace=grace, in_thread=True
    )
    if inspect.isawaitable(result):
        return await within(result, meter, clock, grace=grace)
    return result


async def within(
    awaitable: Any,
    meter: BudgetMeter,
    clock: Clock,
    *,
    grace: float = STOP_GRACE_S,
    in_thread: bool = False,
) -> Any:
    """Await ``awaitable`` until ``meter``'s tightest wall bound, its own or an enclosing
    scope's, runs out on ``clock``; then cancel it (unless ``in_thread``: a thread cannot be)
    and wait ``grace`` more for it to stop. Stopped: ``OutOfTimeError``, its answer dropped.
    Not stopped: it is abandoned, ``AbandonedError``. A wait that is itself cancelled (the
    run is) cancels the call and abandons it, without waiting for it to stop."""
    task = asyncio.ensure_future(awaitable)
    bound = meter.wall_left()
    left, scope = bound if bound is not None else (math.inf, meter)
    loop = asyncio.get_running_loop()
    given_up: asyncio.Future[None] = loop.create_future()
    timers: list[Timer] = []
    ran_out: Exhaustion | None = None  # the bound, as it was read when it ran out

    def run_out() -> None:
        nonlocal ran_out
        if task.done():
            return
        ran_out = scope.wall_exhaustion()
        if not in_thread:
            task.cancel()
        timers.append(clock.call_later(grace, give_up))

    def give_up() -> None:
        if not given_up.done():
            given_up.set_result(None)

    if math.isfinite(left):
        timers.append(clock.call_later(left, run_out))
    try:
        await asyncio.wait((task, given_up), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        _abandon(task)
        raise
    finally:
        for timer in timers:
            timer.cancel()
        given_up.cancel()
    if not task.done():
        _abandon(task)
        assert ran_out is not None  # only a bound that ran out gives up
        raise AbandonedError(ran_out, grace, in_thread=in_thread)
    if ran_out is not None:  # it stopped, or answered within the grace: still out of time
        if not task.cancelled():
            task.exception()  # retrieved, so that nothing reports it as never seen
        raise OutOfTimeError(ran_out)
    return task.result()


def abandoned() -> int:
    """How many abandoned calls have not ended yet, in this process."""
    return sum(1 for call in _abandoned if not call.done())


def run(main: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run(main)``, except that at the end abandoned calls are cancelled once more
    and given a few turns of the loop, not waited for: a coroutine that swallows
    cancellation would otherwise keep the process from ever finishing. Everything else left
    is cancelled and waited for, as ``asyncio.run`` does."""
    loop = asyncio.new_event_loop()
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(main)
    finally:
        try:
            _cancel_the_rest(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_the_rest(loop: asyncio.AbstractEventLoop) -> None:
    left = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in left:
        task.cancel()
    while True:  # a call is abandoned once the task that awaited it has taken its cancellation
        waiting = [task for task in left if not task.done() and task not in _abandoned]
        if not waiting:
            break
        loop.run_until_complete(asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED))
    # Abandoned ones get a few turns of the loop to take their cancellation (and clean up what
    # needs no waiting), no more: one that swallows it would otherwise be waited for for ever.
    for _ in range(_LAST_TURNS):
        if not any(not call.done() for call in _abandoned):
            break
        loop.run_until_complete(asyncio.sleep(0))
    awaited = [task for task in left if task.done()]
    for task in awaited:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler(
                {
                    "message": "unhandled exception during workflow shutdown",
                    "exception": task.exception(),
                    "task": task,
                }
            )


def _abandon(call: asyncio.Future[Any]) -> None:
    """Stop waiting for ``call``: cancel it, hold it until it ends, and drop what it ends
    with."""
    call.cancel()
    if call.done():
        _drop(call)
        return
    _abandoned.add(call)
    call.add_done_callback(_drop)


def _drop(call: asyncio.Future[Any]) -> None:
    _abandoned.discard(call)
    if not call.cancelled():
        call.exception()  # retrieved: an abandoned call's failure is nobody's to report


async def in_thread(call: Callable[[], _T], *, name: str = "assay workflow call") -> _T:
    """``call()`` run in a daemon thread of its own (called ``name``), awaited.

    Unlike ``asyncio.to_thread`` (the loop's default executor, which ``asyncio.run`` and the
    interpreter's exit both wait for), a cancelled wait here leaves nothing waiting on the
    thread: its answer, when it comes, finds the wait cancelled or the loop closed, and is
    dropped.
    """
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[_T] = loop.create_future()
    context = contextvars.copy_context()

    def settle(give: Callable[[Any], object], value: Any) -> None:
        if not answer.done():  # else the wait was cancelled, and this answer came too late
            give(value)

    def work() -> None:
        outcome: tuple[Callable[[Any], object], Any]
        try:
            outcome = (answer.set_result, context.run(call))
        except BaseException as error:  # handed to the waiter, as to_thread would
            outcome = (answer.set_exception, error)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=work, name=name, daemon=True).start()
    return await answer
