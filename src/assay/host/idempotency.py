"""Idempotency keys: a retried write returns the first answer and never runs twice.

The first request with a key runs; every later one with the same key — also one that arrives
while the first is still running — waits for and returns that same answer (or error). A key
reused with a different request is refused, since returning the first answer to it would
answer a question it did not ask; a request with an ``idempotency_identity()`` method is
compared by what that returns (``ActionRequest`` leaves out how long its caller waits). Keys
live in memory, the most recent ``capacity`` of them; a ``recall``, asked on a miss before
anything runs, finds an answer kept elsewhere (the host's: a keyed fire in its ledger, from
before a restart, ``assay.host.keyed``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Final, Generic, TypeVar

from pydantic import BaseModel

from assay.errors import IdempotencyKeyReusedError, RequestError

T = TypeVar("T")

DEFAULT_CAPACITY = 10_000
MAX_KEY_LENGTH = 255


class IdempotencyCache(Generic[T]):
    """The answers of the last ``capacity`` keyed requests, by (scope, key)."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self._answers: OrderedDict[tuple[str, str], tuple[str, asyncio.Future[T]]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._answers)

    async def run(
        self,
        scope: str,
        key: str,
        request: Any,
        make: Callable[[str], Awaitable[T]],
        recall: Callable[[str], Awaitable[T | None]] | None = None,
    ) -> T:
        """``make(fingerprint)``'s answer for the first request with ``key``; the same answer
        for every retry; ``IdempotencyKeyReusedError`` when ``request`` differs from the
        first. On a miss, ``recall(fingerprint)`` is asked first: its answer, unless
        ``None``, is the first one (it raises ``IdempotencyKeyReusedError`` itself)."""
        check_key(key)
        shown = fingerprint(request)
        slot = (scope, key)
        known = self._answers.get(slot)
        if known is not None:
            first, future = known
            if first != shown:
                raise reused(key)
            self._answers.move_to_end(slot)
            return await asyncio.shield(future)
        # The work runs as its own task: a first caller that goes away (a dropped connection)
        # must not cancel a fire halfway, or leave its retries nothing to return.
        task = asyncio.ensure_future(self._first(slot, shown, make, recall))
        self._answers[slot] = (shown, task)
        while len(self._answers) > self.capacity:
            self._answers.popitem(last=False)
        task.add_done_callback(_observe)
        return await asyncio.shield(task)

    async def _first(
        self,
        slot: tuple[str, str],
        shown: str,
        make: Callable[[str], Awaitable[T]],
        recall: Callable[[str], Awaitable[T | None]] | None,
    ) -> T:
        if recall is not None:
            try:
                recalled = await recall(shown)
            except IdempotencyKeyReusedError:
                # Not kept: the key is the recalled request's, and a retry of that one must
                # find it again rather than this refusal.
                if self._answers.get(slot, (None, None))[1] is asyncio.current_task():
                    del self._answers[slot]
                raise
            if recalled is not None:
                return recalled
        return await make(shown)


def fingerprint(request: Any) -> str:
    """What two requests under one key must share: the SHA-256 of their
    ``idempotency_identity()`` (the request itself, without that method), a model as JSON
    with sorted keys, so that it reads the same after a restart; anything else by ``repr``."""
    identity = getattr(request, "idempotency_identity", None)
    shown = identity() if callable(identity) else request
    if isinstance(shown, BaseModel):
        text = json.dumps(shown.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    else:
        text = repr(shown)
    return hashlib.sha256(text.encode()).hexdigest()


def reused(key: str) -> IdempotencyKeyReusedError:
    """The refusal of ``key`` sent again with a different request than the first."""
    return IdempotencyKeyReusedError(
        f"the Idempotency-Key {key!r} was first used for a different request; "
        "use a new key for a new request",
        key=key,
    )


KEY_FORM: Final = (
    f"an Idempotency-Key is 1 to {MAX_KEY_LENGTH} visible ASCII characters (letters, digits, "
    "punctuation and spaces between them, such as a UUID)"
)


def check_key(key: str) -> None:
    """``RequestError`` naming what is wrong with ``key``, unless it is 1 to ``MAX_KEY_LENGTH``
    characters from ``" "`` to ``"~"`` (the form of a structured-field string, RFC 8941)."""
    if key and len(key) <= MAX_KEY_LENGTH and _VISIBLE.fullmatch(key):
        return
    if not key:
        got = "got an empty one"
    elif not key.isascii():
        got = "this one holds other characters; send a key of ASCII characters only"
    elif not _VISIBLE.fullmatch(key):
        got = "this one holds a control character"
    else:
        got = f"got {len(key)} characters"
    raise RequestError(f"{KEY_FORM}; {got}", field="Idempotency-Key")


_VISIBLE: Final = re.compile("[ -~]+")


def _observe(task: asyncio.Future[Any]) -> None:
    """Retrieve the outcome, so a failure nobody awaited any more is not reported as lost."""
    if not task.cancelled():
        task.exception()
