"""The meter that charges an evaluation its steps and bounds the strings it produces."""

from __future__ import annotations

from assay.errors import ExpressionLimitError


class Meter:
    """What one evaluation may still spend, in steps, and the longest string it may produce.

    Converting an array to a string walks it in Python, outside the compiled code: the
    conversion charges its work here (a step for every element visited and one for every 16
    characters produced), so conversions and callbacks spend one ``max_steps``. Most
    evaluations convert no array and make no meter: their code passes one shared meter that
    meters nothing (``steps`` is ``None``), on which a conversion raises ``MeterNeededError``
    before it starts, and the evaluation starts again in code that makes a meter and charges
    its callbacks to it too.
    """

    __slots__ = ("max_steps", "max_string", "steps")

    def __init__(self, max_string: int, max_steps: int, steps: int | None) -> None:
        self.max_string = max_string
        self.max_steps = max_steps
        self.steps = steps

    def charge(self, steps: int) -> None:
        """Spend ``steps``; ``ExpressionLimitError`` once the evaluation has spent them all."""
        if self.steps is None:
            raise MeterNeededError
        self.steps -= steps
        if self.steps < 0:
            raise steps_exceeded(self.max_steps)


class MeterNeededError(Exception):
    """A conversion met the meter that meters nothing: the evaluation must start again metered.

    The compiled code catches it around its whole body, so it never escapes an evaluation.
    """


def steps_exceeded(max_steps: int) -> ExpressionLimitError:
    """The error for an evaluation that spent more than ``max_steps``."""
    return ExpressionLimitError(
        f"evaluation exceeded {max_steps} steps (max_steps); array callbacks, the strings and "
        "arrays they scan, and every array converted to a string count toward it",
        limit="max_steps",
        bound=max_steps,
    )
