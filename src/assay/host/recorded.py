"""``recorded_answer``: did_it_work for a transition whose session this host does not hold.

The session was closed, expired, belongs to another daemon on the same ledger, or to an
earlier run of this one (killed mid-fire, say). The ledger still holds the transition's fire
and, once it settled, its settlement or refusal: the answer is read from them, with the
settled answer's evidence (``answer_from_evidence``). A fire with nothing after it yet is
pending, and the answer says so honestly: pending in the daemon that fired it while that one
holds a live lease, or, once it no longer does, pending only until a daemon closes it as
unobservable, since nothing more of it will be observed. It never says that it worked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, Final

from assay.expr.predicate import ConditionEvidence
from assay.graph.answers import answer_from_evidence
from assay.graph.result import Answer
from assay.host.recovery import fired_by
from assay.ledger.entry import Entry
from assay.ledger.lease import ENDINGS, Lease

FROM_LEDGER: Final = (
    " (Read from the ledger: this daemon does not hold the session that fired it, so it can "
    "tell only what is recorded.)"
)


def recorded_answer(
    transition_id: str,
    entries: Sequence[Entry],
    *,
    owner: str,
    leases: Callable[[], Iterable[Lease]],
    now: datetime,
) -> Answer | None:
    """The answer for ``transition_id`` from its session's ``entries`` for it; ``None`` when
    they hold no fire and no ending (the ledger does not know it). ``owner`` is this host's
    id; ``leases`` reads the leases held (only for a pending fire); ``now`` is this host's
    wall time, for how long a pending fire has waited."""
    fire = next((entry for entry in reversed(entries) if entry.kind == "fire"), None)
    ending = next((entry for entry in reversed(entries) if entry.kind in ENDINGS), None)
    if ending is not None and (fire is None or ending.seq > fire.seq):
        fired = None if fire is None else _body(fire)
        return answer_from_evidence(transition_id, fired, ending.kind, _body(ending))
    if fire is None:
        return None
    return _pending(transition_id, fire, owner, leases, now)


def _pending(
    transition_id: str,
    fire: Entry,
    owner: str,
    leases: Callable[[], Iterable[Lease]],
    now: datetime,
) -> Answer:
    body = _body(fire)
    by = fired_by(fire)
    if by is None:
        waiting_on = "its settlement by the daemon that holds its session"
        detail = (
            "Its fire is recorded and its settlement is not yet. The fire names no daemon (an "
            "assay older than leases recorded it), so whether the one that fired it still runs "
            "cannot be told; a daemon that starts on this ledger holding its only live lease "
            "closes it as unobservable."
        )
    elif by == owner:
        waiting_on = "its settlement, which this daemon records as it closes the session"
        detail = "Its fire is recorded and its settlement is not yet."
    elif any(lease.live for lease in leases() if lease.owner == by):
        waiting_on = f"its settlement by daemon {by}, which fired it and holds its session"
        detail = (
            f"Its settlement is not recorded yet, and daemon {by} holds a live lease on the "
            f"ledger: ask that daemon what exactly it waits on and for how long.{_declared(body)}"
        )
    else:
        waiting_on = (
            f"its closing as unobservable: daemon {by}, which fired it, holds no live lease "
            "on the ledger (it stopped before the fire settled)"
        )
        detail = (
            "Nothing more of it will be observed: a daemon on this ledger closes it once it "
            "sees that lease gone, within a third of its own lease."
        )
    evidence = body.get("already_true")
    return Answer(
        transition_id=transition_id,
        answer="pending",
        why=f"Still pending: waiting on {waiting_on}. {detail}{FROM_LEDGER}",
        waiting_on=waiting_on,
        pending_for_ms=max(0, round((now - _moment(fire.timestamp)).total_seconds() * 1000)),
        already_true=None
        if not isinstance(evidence, list)
        else [ConditionEvidence(**condition) for condition in evidence],
    )


def _declared(body: dict[str, Any]) -> str:
    """What the fire declared it waits on, as recorded: its contract and its writes."""
    contract, writes = body.get("contract"), body.get("writes")
    parts = []
    if isinstance(contract, str):
        parts.append(f"the contract {contract}")
    if isinstance(writes, list) and writes:
        parts.append(f"writes {', '.join(map(str, writes))}")
    return f" As fired, it declared {' and '.join(parts)}." if parts else ""


def _body(entry: Entry) -> dict[str, Any]:
    return entry.body if isinstance(entry.body, dict) else {}


def _moment(timestamp: str) -> datetime:
    return datetime.fromisoformat(timestamp)
