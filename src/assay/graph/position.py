"""``Position``: where a session is on its graph, and how far along its journeys; both move
on only when a fire worked or had no observable effect."""

from __future__ import annotations

from assay.graph.journey import Journey
from assay.graph.transition import Transition


class Position:
    """A session's node and its journeys, by name."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.journeys: dict[str, Journey] = {}

    def advance(self, transition: Transition) -> None:
        """``transition`` worked (or had no observable effect): move to where its action
        leads, and count it in every journey."""
        if transition.spec.to is not None:
            self.node = transition.spec.to
        for journey in self.journeys.values():
            journey.record(transition.spec.id)
