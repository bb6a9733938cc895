"""Idempotency keys: a retried write returns the first answer and never runs twice.

The first request with a key runs; every later one with the same key — also one that arrives
while the first is still running — waits for and returns that same answer (or error). A key
reused with a different request is refused, since returning the first answer to it would
answer a question it did not ask; a request with an ``idempotency_identity()`` method is
compared by what that returns (``ActionRequest`` leaves out how long its caller waits). Keys
live in memory, the most recent ``capacity`` of them.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any, Final, Generic, TypeVar

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

    async def run(self, scope: str, key: str, request: Any, make: Callable[[], Awaitable[T]]) -> T:
        """``make()``'s answer for the first request with ``key``; the same answer for every
        retry; ``IdempotencyKeyReusedError`` when ``request`` differs from the first."""
        check_key(key)
        identity = getattr(request, "idempotency_identity", None)
        shown = identity() if callable(identity) else request
        fingerprint = hashlib.sha256(repr(shown).encode()).hexdigest()
        slot = (scope, key)
        known = self._answers.get(slot)
        if known is not None:
            first, future = known
            if first != fingerprint:
                raise IdempotencyKeyReusedError(
                    f"the Idempotency-Key {key!r} was first used for a different request; "
                    "use a new key for a new request",
                    key=key,
                )
            self._answers.move_to_end(slot)
            return await asyncio.shield(future)
        # The work runs as its own task: a first caller that goes away (a dropped connection)
        # must not cancel a fire halfway, or leave its retries nothing to return.
        task = asyncio.ensure_future(make())
        self._answers[slot] = (fingerprint, task)
        while len(self._answers) > self.capacity:
            self._answers.popitem(last=False)
        task.add_done_callback(_observe)
        return await asyncio.shield(task)


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
