"""``KeyedFires``: the fires the ledger records under an idempotency key, found again after a
restart, so that a retry answers the first fire instead of firing a second time.

A fire made under a key records it in its entry's body, as ``idempotency``: the key, its
scope (the HTTP token's name; empty over MCP) and the request's fingerprint
(``assay.host.idempotency.fingerprint``). A host reads them back on its first keyed request
that its memory does not know, by one pass over the ledger's fire entries (their kind is
indexed), and then keeps the most recent ``capacity`` of them, adding those it fires itself.
A request refused before it fired records no fire, and a retry of it is decided afresh:
nothing ran.
"""

from __future__ import annotations

from collections import OrderedDict
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from assay.graph.answers import EFFECT_STATUSES
from assay.graph.transition import Phase
from assay.host.idempotency import DEFAULT_CAPACITY
from assay.host.wire import ActionResponse, TransitionAnswer, success_of
from assay.ledger.ledger import Ledger

BODY_FIELD: Final = "idempotency"
"""The fire body's member that holds the key it was made under."""

PAGE: Final = 1000
"""Fire entries read per query while the keys are read back."""

KEYED: ContextVar[dict[str, str] | None] = ContextVar("assay_keyed_fire", default=None)
"""The key the fire being made now is made under, as its body records it (``BODY_FIELD``);
set by the host around the one fire, read by ``DurableEvidence`` as it records it."""


@dataclass(frozen=True, slots=True)
class KeyedFire:
    """Where a keyed fire is: the request it answered, its session and its transition."""

    fingerprint: str
    session: str
    transition: str


class KeyedFires:
    """The keyed fires of ``ledger`` by (scope, key): the most recent ``capacity``."""

    def __init__(self, ledger: Ledger, capacity: int = DEFAULT_CAPACITY) -> None:
        self.ledger = ledger
        self.capacity = capacity
        self._fires: OrderedDict[tuple[str, str], KeyedFire] | None = None

    @property
    def loaded(self) -> bool:
        """Whether the ledger's keyed fires have been read back."""
        return self._fires is not None

    def load(self) -> None:
        """Read every keyed fire the ledger holds (blocking: run it in a worker thread)."""
        fires: OrderedDict[tuple[str, str], KeyedFire] = OrderedDict()
        after = 0
        while page := self.ledger.query(kind="fire", after=after, limit=PAGE):
            after = page[-1].seq
            for entry in page:
                keyed = _keyed(entry.body)
                if keyed is None or entry.session is None or entry.transition is None:
                    continue
                slot = (keyed["scope"], keyed["key"])
                fires.pop(slot, None)
                fires[slot] = KeyedFire(keyed["request"], entry.session, entry.transition)
                while len(fires) > self.capacity:
                    fires.popitem(last=False)
        if self._fires is not None:  # recorded while this read: those are the newest
            fires.update(self._fires)
        self._fires = fires

    def get(self, scope: str, key: str) -> KeyedFire | None:
        """The fire recorded under ``key`` in ``scope``, if any (``None`` before ``load``)."""
        return None if self._fires is None else self._fires.get((scope, key))

    def add(self, scope: str, key: str, fire: KeyedFire) -> None:
        """Remember a keyed fire just recorded (nothing before ``load``: it reads it)."""
        if self._fires is None:
            return
        self._fires[(scope, key)] = fire
        self._fires.move_to_end((scope, key))
        while len(self._fires) > self.capacity:
            self._fires.popitem(last=False)


def keyed_body(scope: str, key: str, fingerprint: str) -> dict[str, str]:
    """The ``BODY_FIELD`` member of a fire made under ``key``."""
    return {"scope": scope, "key": key, "request": fingerprint}


def _keyed(body: Any) -> dict[str, str] | None:
    keyed = body.get(BODY_FIELD) if isinstance(body, dict) else None
    if not isinstance(keyed, dict):
        return None
    if not all(isinstance(keyed.get(name), str) for name in ("scope", "key", "request")):
        return None
    return keyed


def replayed(answer: TransitionAnswer, action: str) -> ActionResponse:
    """The fire's answer for a retry of a keyed fire found in the ledger: ``did_it_work``
    for its transition now, in the shape a fire answers (without ``failure`` and
    ``refusal_figures``, which the ledger's settlement does not hold)."""
    kind = answer.answer
    return ActionResponse(
        executed=kind not in ("unmaterialized", "refused"),
        success=success_of(kind),
        session=answer.session,
        ok=kind != "refused",
        did=action,
        effect_status=EFFECT_STATUSES[Phase(kind)],
        transition_id=answer.transition_id,
        answer=kind,
        waiting_on=answer.waiting_on,
        already_true=answer.already_true,
        why=answer.why,
        outcome_now=answer.outcome_now,
        error=answer.error,
        materialized=kind != "unmaterialized",
        verification=answer.outcome,
    )
