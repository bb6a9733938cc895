"""Waiting on a transition: ``did_it_work``'s answer as of now (a pending one says what it
waits on, and for how long), and a wait for settlement bounded by a ceiling."""

from __future__ import annotations

import asyncio

from assay.clock import Clock
from assay.errors import WrongTypeError
from assay.graph.answers import answer, waiting_on
from assay.graph.result import Answer
from assay.graph.transition import Phase, Transition
from assay.state.snapshot import Snapshot


def answer_now(transition: Transition, current: Snapshot, queued_before: int, now: float) -> Answer:
    """``did_it_work`` for ``transition`` on ``current``, at monotonic time ``now``: with
    what it waits on when pending (``queued_before`` writes-only fires queued ahead of it)."""
    if transition.phase is not Phase.PENDING:
        return answer(transition, current)
    return answer(
        transition,
        current,
        waiting_on=waiting_on(transition, queued_before),
        pending_for_ms=round((now - transition.fired_at) * 1000),
    )


def check_ceiling(ceiling_s: object) -> None:
    """``WrongTypeError`` unless ``ceiling_s`` is a number of seconds (NaN is not)."""
    if (
        isinstance(ceiling_s, bool)
        or not isinstance(ceiling_s, int | float)
        or ceiling_s != ceiling_s  # NaN: a timer that never fires
    ):
        shown = "NaN" if isinstance(ceiling_s, float) else type(ceiling_s).__name__
        raise WrongTypeError(
            f"ceiling_s must be a number of seconds, not {shown}", parameter="ceiling_s"
        )


async def wait_settled(transition: Transition, ceiling_s: float, clock: Clock) -> None:
    """Return once ``transition`` settles or ``ceiling_s`` has passed on ``clock`` (at once
    for 0 or less); the caller's own cancellation is raised, never swallowed."""
    if transition.phase.terminal or ceiling_s <= 0:
        return
    if transition.settled is None:
        transition.settled = asyncio.Event()
    waiter = asyncio.ensure_future(transition.settled.wait())
    ceiling_passed = False

    def give_up() -> None:
        nonlocal ceiling_passed
        ceiling_passed = True
        waiter.cancel()

    timer = clock.call_later(ceiling_s, give_up)
    try:
        await waiter
    except asyncio.CancelledError:
        # Only the ceiling ends a wait quietly; the caller's own cancellation goes on.
        if not ceiling_passed:
            raise
    finally:
        timer.cancel()
        waiter.cancel()
