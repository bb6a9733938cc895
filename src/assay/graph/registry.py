"""``FireRegistry``: what the sessions on one substrate hold together, as they act on one
application: the single-flight actions pending fires hold, and the claims on changes."""

from __future__ import annotations

from assay.graph.claims import Claims
from assay.graph.transition import Transition


class FireRegistry:
    """The single flights and claims of every session on one substrate (held by the
    substrate: ``substrate.shared(FireRegistry)``)."""

    def __init__(self) -> None:
        self.flights: dict[str, tuple[str, str]] = {}
        """Single-flight action id -> its holder (session id, transition id)."""
        self.claims = Claims()
        """Each observed change credited to at most one fire."""

    def holder(self, action_id: str) -> tuple[str, str] | None:
        """The (session id, transition id) holding single-flight ``action_id``, if any."""
        return self.flights.get(action_id)

    def hold(self, session: str, transition: Transition) -> None:
        """``transition`` of ``session`` holds its single-flight action until it settles."""
        self.flights[transition.spec.id] = (session, transition.id)

    def release(self, session: str, transition: Transition) -> None:
        """Let go of ``transition``'s single flight, if it holds it."""
        if self.flights.get(transition.spec.id) == (session, transition.id):
            del self.flights[transition.spec.id]
