"""Leases: which hosts are alive on a ledger, kept beside its entries and never among them.

A host takes a lease under an owner id of its own when it starts, renews it while it runs and
releases it when it stops cleanly; each fire it records names that owner. A fire left open
whose owner holds no live lease is closed by another host with a ``Closing``, atomically with
every other append and lease change, so that each fire gets one settlement. A lease is
operational state, not evidence: never hashed, chained or exported. Expiry is judged by the
store's clock, or by ``now`` when a caller gives one (tests run on a virtual clock).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from assay.errors import WrongTypeError
from assay.ledger.entry import EntryDraft

ENDINGS: Final = ("settlement", "refusal")
"""The kinds of entry that end a fire: once one follows it, the fire is not open."""


@dataclass(frozen=True, slots=True)
class Lease:
    """``owner``'s lease: renewed at ``renewed_at``, good until ``expires_at`` (UTC), and
    whether it was ``live`` (not expired) by the store's clock, or the ``now`` given, when
    read."""

    owner: str
    renewed_at: datetime
    expires_at: datetime
    live: bool


@dataclass(frozen=True, slots=True)
class Closing:
    """A ``settlement`` that closes the fire entry ``fire_seq`` (its session and transition
    are the settlement's), fired by ``owner`` (``None``: the fire names none, as an assay
    older than leases recorded it). Stored only if the fire is still open and its owner
    gone (``closeable``)."""

    settlement: EntryDraft
    fire_seq: int
    owner: str | None


def closeable(closing: Closing, *, ended: bool, leases: Mapping[str, Lease], by: str) -> bool:
    """Whether host ``by`` may close ``closing``'s fire, given whether a settlement or a
    refusal has ``ended`` it since and the ``leases`` held: not once ended, never its own
    fire, and only when the owner's lease has expired or is gone. A fire that names no
    owner only when no lease but ``by``'s own is live."""
    if ended or closing.owner == by:
        return False
    if closing.owner is None:
        return not any(lease.live for owner, lease in leases.items() if owner != by)
    lease = leases.get(closing.owner)
    return lease is None or not lease.live


def taken_over(closed: Iterable[Closing], leases: Mapping[str, Lease]) -> list[str]:
    """The owners still holding a lease in ``leases`` whose fires ``closed`` closes: their
    leases are dropped with the closing, so that an owner that was only paused finds, at its
    next renewal, that its fires were closed (``renew_lease`` answers ``None``)."""
    return sorted({c.owner for c in closed if c.owner is not None and c.owner in leases})


def check_lease(owner: object, duration_s: object) -> None:
    """``WrongTypeError`` unless ``owner`` is a non-empty string and ``duration_s`` a
    positive, finite number of seconds."""
    if not isinstance(owner, str) or not owner:
        raise WrongTypeError(
            f"owner must be a non-empty string naming the lease's holder, not {owner!r}",
            parameter="owner",
        )
    check_seconds(duration_s, "duration_s")


def check_seconds(value: object, parameter: str) -> None:
    """``WrongTypeError`` naming ``parameter`` unless ``value`` is a positive, finite number
    of seconds."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise WrongTypeError(
            f"{parameter} must be a positive number of seconds, not {value!r}",
            parameter=parameter,
        )


def local_now(now: datetime | None) -> datetime:
    """``now``, or this machine's time when none is given (UTC); ``WrongTypeError`` for a
    naive ``now``, whose zone cannot be told."""
    if now is None:
        return datetime.now(UTC)
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise WrongTypeError(
            f"now must be a timezone-aware datetime (a clock's wall()), not {now!r}",
            parameter="now",
        )
    return now.astimezone(UTC)
