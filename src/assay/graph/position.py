"""``Position``: where a session is on its graph, and how far along its journeys; both move
on only when a fire worked or had no observable effect."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from assay.errors import GraphError, WrongTypeError
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

    def start_journey(
        self, name: str, steps: Iterable[str], is_action: Callable[[str], bool]
    ) -> Journey:
        """Track the journey ``name`` over ``steps`` (action ids, each passing ``is_action``);
        ``GraphError`` naming the first step that is no action, which could never be done."""
        if isinstance(steps, str):
            raise WrongTypeError(
                f"the journey {name!r}: steps must be a list of action ids, not the string "
                f"{steps!r}",
                parameter="steps",
            )
        steps = tuple(steps)
        for step in steps:
            if not isinstance(step, str) or not is_action(step):
                raise GraphError(
                    f"the journey {name!r}: no action is called {step!r}, so it could never be "
                    "done; steps are page.action ids of the graph"
                )
        journey = Journey(name, steps)
        self.journeys[name] = journey
        return journey
