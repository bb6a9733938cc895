"""``Recovery``: closing the fires a host left open when it stopped uncleanly.

An open fire (no settlement or refusal follows it) whose owner's lease expired, or that
names no owner and predates this host while no other lease is live, gets one settlement in
a session's shape: ``unobservable``, no commit, and an error naming the daemon that stopped
and why it is taken for stopped. A host looks at start and, while it runs, whenever it sees
a lease expire; the checks are made again under the store's append lock, so two hosts store
one settlement per fire. docs/operations.md gives the rules in full.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from assay.graph.evidence import settlement_record
from assay.ledger.entry import Entry, format_timestamp
from assay.ledger.lease import Closing, Lease
from assay.ledger.ledger import Ledger

STOPPED: Final = (
    "the daemon that fired it stopped (it was killed or crashed) before the fire settled"
)
UNCHECKED: Final = "its effect was never checked, and nothing more of it will be observed"


def closing_error(owner: str | None, lease: Lease | None, by: str) -> str:
    """The error a closing settlement records: that the daemon that fired stopped, which one
    (``owner``) and why it is taken for stopped (its ``lease``), who closed it (``by``)."""
    if owner is None:
        why = (
            "the fire names no daemon (an assay older than leases recorded it), and daemon "
            f"{by} closed it on starting, holding the only live lease on the ledger"
        )
    elif lease is None:
        why = (
            f"daemon {owner}, which fired it, holds no lease on the ledger any more, and "
            f"daemon {by} closed it"
        )
    else:
        why = (
            f"the lease of daemon {owner}, which fired it, expired unrenewed at "
            f"{format_timestamp(lease.expires_at)}, and daemon {by} closed it"
        )
    return f"{STOPPED}: {why}; {UNCHECKED}"


def fired_by(fire: Entry) -> str | None:
    """The owner a fire entry names, or ``None`` (an assay older than leases recorded it)."""
    owner = fire.body.get("owner") if isinstance(fire.body, dict) else None
    return owner if isinstance(owner, str) and owner else None


class Recovery:
    """Closes, in ``ledger``, the open fires of hosts that are gone, as host ``owner``, which
    started when the ledger held ``started_at`` entries."""

    def __init__(self, ledger: Ledger, owner: str, *, started_at: int) -> None:
        self.ledger = ledger
        self.owner = owner
        self.started_at = started_at
        self._swept = False
        # The expired leases already looked for open fires (owner, expiry), so that a lease
        # left expired by a host that stopped with nothing open costs no more passes.
        self._looked_at: set[tuple[str, datetime]] = set()

    def sweep(self, now: datetime | None) -> list[Entry]:
        """Close what there is to close (the first sweep looks at every open fire; later
        ones only when a lease has expired since); answer the settlements stored. Reads and
        writes the ledger on this thread; ``now`` as for the leases (``Tenure.now``)."""
        backend = self.ledger.backend
        leases = {lease.owner: lease for lease in backend.leases(now=now)}
        expired = {
            (owner, lease.expires_at)
            for owner, lease in leases.items()
            if not lease.live and owner != self.owner
        }
        if self._swept and expired <= self._looked_at:
            return []
        closings = [
            closing
            for fire in backend.open_fires()
            if (closing := self._closing(fire, leases)) is not None
        ]
        closed = self.ledger.close_fires(closings, by=self.owner, now=now) if closings else []
        self._swept = True
        self._looked_at |= expired
        return closed

    def _closing(self, fire: Entry, leases: Mapping[str, Lease]) -> Closing | None:
        """The closing of ``fire`` if its owner is gone (see the module's notes), else None."""
        owner = fired_by(fire)
        lease = None if owner is None else leases.get(owner)
        if owner == self.owner or (lease is not None and lease.live):
            return None
        if owner is None and (
            fire.seq > self.started_at
            or any(held.live for holder, held in leases.items() if holder != self.owner)
        ):
            return None
        body: dict[str, Any] = fire.body if isinstance(fire.body, dict) else {}
        settlement = settlement_record(
            action=str(body.get("action")),
            answer="unobservable",
            effect="unobservable",
            commit=[],
            outcome=None,
            error=closing_error(owner, lease, self.owner),
            state_version=None,
        )
        draft = self.ledger.draft(
            "settlement", settlement, session=fire.session, transition=fire.transition, run=fire.run
        )
        return Closing(draft, fire.seq, owner)
