"""Journeys: a named sequence of actions toward a goal, and how far along it a session is."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from assay.errors import GraphError


class JourneyProgress(BaseModel):
    """How many steps are done, of how many, and which action comes next (None when done)."""

    model_config = ConfigDict(frozen=True)

    name: str
    done: int
    total: int
    next: str | None
    complete: bool


class Journey:
    """Steps are action ids; a step counts done once a fire of it settles successfully."""

    def __init__(self, name: str, steps: tuple[str, ...]) -> None:
        if not steps:
            raise GraphError(f"the journey {name!r} has no steps; give it one action id or more")
        self.name = name
        self.steps = steps
        self.done = 0

    def record(self, action_id: str) -> None:
        """Count a successful settlement of ``action_id`` if it is the next step."""
        if self.done < len(self.steps) and self.steps[self.done] == action_id:
            self.done += 1

    def progress(self) -> JourneyProgress:
        complete = self.done == len(self.steps)
        return JourneyProgress(
            name=self.name,
            done=self.done,
            total=len(self.steps),
            next=None if complete else self.steps[self.done],
            complete=complete,
        )
