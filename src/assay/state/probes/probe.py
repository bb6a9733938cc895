"""The probe protocol and what every probe shares: its errors and the keys it owns.

A probe pulls part of the application's state where the application does not push it
(SPEC §2, §4). ``read()`` answers ``{dotted_key: json_value}`` for the keys the probe owns,
or raises ``ProbeError`` saying what went wrong; a ``Poller`` calls it at ``interval`` and
abandons a read that has not answered within the probe's ``timeout`` (an optional attribute;
``DEFAULT_TIMEOUT`` without it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import pairwise
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from assay.errors import ProbeConfigError
from assay.json.path import parse_path

_PASSWORD = re.compile(r"//([^/@:]*):[^/]*@")

DEFAULT_INTERVAL = 0.5
"""Seconds between two reads of a probe unless it says otherwise (SPEC §4)."""

DEFAULT_TIMEOUT = 2.0
"""Seconds a whole read may take, unless the probe has a ``timeout`` of its own."""


@runtime_checkable
class Probe(Protocol):
    """A pull source of state: polled every ``interval`` seconds under a unique ``name``."""

    @property
    def name(self) -> str: ...

    @property
    def interval(self) -> float: ...

    async def read(self) -> dict[str, Any]:
        """The current values of the keys this probe owns; raises when they cannot be read."""
        ...


@runtime_checkable
class ClosableProbe(Probe, Protocol):
    """A probe that holds resources (a connection, a client) between reads."""

    async def aclose(self) -> None:
        """Release what the probe holds; a later ``read()`` acquires it again."""
        ...


def check_interval(interval: float) -> float:
    """``interval`` as a float, refused unless positive and finite."""
    if not isinstance(interval, int | float) or not 0 < interval < float("inf"):
        raise ProbeConfigError(
            f"a probe's interval is a positive number of seconds, got {interval!r}",
            parameter="interval",
        )
    return float(interval)


def check_timeout(timeout: float) -> float:
    """``timeout`` as a float, refused unless positive and finite."""
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout < float("inf")
    ):
        raise ProbeConfigError(
            f"timeout is a positive number of seconds, got {timeout!r}", parameter="timeout"
        )
    return float(timeout)


def read_timeout(probe: Probe) -> float:
    """How long one read of ``probe`` may take: its ``timeout``, else ``DEFAULT_TIMEOUT``."""
    timeout = getattr(probe, "timeout", None)
    return DEFAULT_TIMEOUT if timeout is None else check_timeout(timeout)


def grace(timeout: float) -> float:
    """Half a second, or a tenth of ``timeout`` up to 1 s: how long after it a probe's bound on
    a whole read ends it (so that a timeout of one phase, which says what stalled, comes
    first, even when the first request of a process spends a while getting ready), and,
    twice over, the poller's deadline (so that the probe, not the poller, says why)."""
    return min(1.0, max(0.5, timeout / 10))


def no_answer(what: str, timeout: float) -> str:
    """The message for a read abandoned at its deadline: ``what`` gave no answer in time."""
    return f"{what} gave no answer within {timeout:g} s; the read was abandoned"


def check_keys(keys: Iterable[str], parameter: str) -> tuple[str, ...]:
    """Validate owned state keys: each a path, none the parent of another; return them."""
    owned = tuple(keys)
    parsed = sorted((parse_path(key), key) for key in owned)
    for (segments, key), (next_segments, next_key) in pairwise(parsed):
        if next_segments[: len(segments)] == segments:
            relation = "the same key as" if next_segments == segments else "a parent of"
            raise ProbeConfigError(
                f"state key {key!r} is {relation} {next_key!r}; a probe's keys must not "
                "overlap, so read the parent whole or only its children",
                parameter=parameter,
            )
    return owned


def display_url(url: str) -> str:
    """``url`` fit for messages and names: no password, and the query shown as ``?…``.

    Credentials and tokens travel in user info and query strings; neither is repeated.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        shown, query, _ = url.partition("?")
        return _PASSWORD.sub(r"//\1@", shown) + ("?…" if query else "")
    userinfo, at, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    netloc = f"{user}@{host}" if at and user else host
    shown = f"{parts.scheme}://{netloc}{parts.path}" if parts.scheme else f"{netloc}{parts.path}"
    return shown + ("?…" if parts.query else "")
