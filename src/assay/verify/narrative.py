"""Narratives: one or two sentences saying what a verification observed, built only from it.

A narrative names the keys the contract read and their last values, says for how long and
over how many cycles, and distinguishes the failures an agent must tell apart: nothing
changed at all, something else changed, the key changed to the wrong value, the path is
missing. A quantifier's failure names the element or the values at fault. Redacted values
never appear.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from assay.expr.functions import GLOBAL_VALUES
from assay.expr.mismatch import describe_mismatch
from assay.expr.predicate import Check, ConditionEvidence
from assay.json.equality import json_equal
from assay.json.path import MISSING, PathRead, parse_path, read_path
from assay.redaction import REDACTED, Redaction
from assay.state.snapshot import FieldChange

_MAX_NAMED: Final = 5


@dataclass(slots=True)
class Observation:
    """Everything a narrative may say: the verdict, the reads before and after, the diff.

    Made once per verification and only read (not frozen: a frozen dataclass's constructor
    sets each field through ``object.__setattr__``, at three times the cost).
    """

    subject: str
    keys: tuple[str, ...]
    before: Mapping[str, Any]
    after: Mapping[str, Any]
    check: Check
    passed: bool
    cycles: int
    elapsed_ms: int
    changed: Sequence[FieldChange]
    redaction: Redaction
    after_action: bool = True
    """Whether an action preceded the verification: a bare check has no action to blame."""
    lengths: bool = True
    """Whether ``.length`` reads an array's or a string's length, as in an expression; in a
    declarative contract it is a key like any other."""
    late_after_ms: int | None = None
    """The timeout, when the check held only on state observed after it had passed."""


def narrate(observation: Observation) -> str:
    """The narrative for one verification."""
    timing = _timing(observation)
    reads = [_Read(key, observation) for key in observation.keys]
    # NaN and Infinity read the state first, as every name does; absent there they are the
    # values, not missing keys.
    reads = [read for read in reads if not (read.key in GLOBAL_VALUES and read.absent)]
    if observation.passed:
        detail = "; ".join(read.describe() for read in reads)
        return f"{observation.subject} evaluated to true {timing}" + (
            f"; {detail}." if detail else "."
        )
    if observation.late_after_ms is not None:
        detail = "; ".join(read.describe() for read in reads)
        return (
            f"{observation.subject} evaluated to true only on state observed after its "
            f"{observation.late_after_ms}ms timeout, {timing}"
            + (f"; {detail}" if detail else "")
            + ". An effect observed after the deadline is a failure, however late the check ran."
        )
    if observation.check.result is None:
        missing = [read.after.explain() for read in reads if not read.after.found]
        reason = observation.check.error or "it could not be evaluated"
        text = f"{observation.subject} could not be evaluated {timing}: {reason}"
        if missing:
            text += "; " + "; ".join(missing)
        return text + "."
    if not reads:
        return (
            f"{observation.subject} evaluated to false {timing}; it reads no state keys, so no "
            "change to the state could make it hold."
        )
    clauses = " and ".join(read.describe() for read in reads)
    failing = _failing_conditions(observation)
    # An array's summary is cut at its limit, so a quantifier names the element at fault.
    inside = _inside_arrays(observation)
    seen = f"{clauses} ({inside})" if inside else clauses
    # A condition comparing values of different types fails for that alone: say so rather
    # than blame the action.
    mismatched = "; ".join(
        c.reason for c in observation.check.conditions if c.reason and _mismatch(c)
    )
    action = observation.after_action and not mismatched
    why = f" It cannot hold while the types differ: {mismatched}." if mismatched else ""
    if not observation.changed:
        blame = " The action may have failed silently." if action else ""
        return f"{seen} {timing}; nothing observable changed.{blame}{why}"
    read_changed = any(read.changed for read in reads)
    others = _other_changes(observation)
    if not read_changed:
        if others is None:  # what changed is under a key it reads, but not what it reads
            within = _changed_keys(observation)
            return f"{seen} {timing}, while {within} changed, which it does not read.{why}"
        blame = " The action may have changed something other than what was checked."
        return f"{seen} {timing}, while {others} changed.{blame if action else ''}{why}"
    text = f"{clauses} {timing}, but the {observation.subject.lower()} still evaluated to false"
    if failing:
        text += f" ({failing})"
    return text + "." + why


def _mismatch(condition: ConditionEvidence) -> bool:
    """Whether a failed condition failed on the type of a value it found (its reason says
    which types), rather than on the value or a missing path."""
    return not condition.result and (condition.redacted or condition.actual_summary is not None)


def _timing(observation: Observation) -> str:
    cycles = observation.cycles
    return f"after {cycles} poll cycle{'' if cycles == 1 else 's'} ({observation.elapsed_ms}ms)"


class _Read:
    """One key the contract reads, before the action and at the last cycle."""

    def __init__(self, key: str, observation: Observation) -> None:
        self.key = key
        self.segments = parse_path(key)
        self.redaction = observation.redaction
        lengths = observation.lengths
        self.before = read_path(observation.before, self.segments, lengths=lengths)
        if observation.after is observation.before:
            self.after, self.changed = self.before, False
        else:
            self.after = read_path(observation.after, self.segments, lengths=lengths)
            self.changed = not _same(self.before, self.after)

    @property
    def absent(self) -> bool:
        """Missing before and after."""
        return not self.before.found and not self.after.found

    def render(self, read: PathRead) -> str:
        if not read.found:
            return "missing"
        summary = self.redaction.summarize(self.segments, read.value)
        return REDACTED if summary is None else summary

    def describe(self) -> str:
        redacted = self.redaction.covers(self.segments)
        if not self.changed:
            if not self.after.found:
                return self.after.explain()
            return f"{self.key} {'is' if redacted else 'remained'} {self.render(self.after)}"
        if redacted:
            return f"{self.key} changed (value redacted)"
        return f"{self.key} changed from {self.render(self.before)} to {self.render(self.after)}"


def _same(before: PathRead, after: PathRead) -> bool:
    if before.value is MISSING or after.value is MISSING:
        return before.value is after.value
    return before.value is after.value or json_equal(before.value, after.value)


def _other_changes(observation: Observation) -> str | None:
    """The changed keys unrelated to those read, named; ``None`` when every change is under
    or over a key it reads."""
    read = [parse_path(key) for key in observation.keys]
    names: list[str] = []
    for change in observation.changed:
        segments = parse_path(change.key)
        if any(_related(segments, key) for key in read):
            continue
        names.append(change.key)
    return _named(names) if names else None


def _changed_keys(observation: Observation) -> str:
    return _named([change.key for change in observation.changed])


def _named(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_MAX_NAMED])
    if len(names) > _MAX_NAMED:
        shown += f" and {len(names) - _MAX_NAMED} more"
    return shown


def _related(a: Sequence[str], b: Sequence[str]) -> bool:
    shorter = min(len(a), len(b))
    return tuple(a[:shorter]) == tuple(b[:shorter])


def _inside_arrays(observation: Observation) -> str:
    """What failed inside the arrays that quantifiers looked into."""
    return "; ".join(
        describe_mismatch(condition)
        for condition in observation.check.conditions
        if not condition.result and (condition.elements is not None or condition.missing)
    )


def _failing_conditions(observation: Observation) -> str:
    parts = []
    for condition in observation.check.conditions:
        if condition.result:
            continue
        if condition.elements is not None or condition.missing is not None:
            # A quantifier that looked inside its array: say which element or value failed.
            parts.append(describe_mismatch(condition))
            continue
        seen = REDACTED if condition.redacted else (condition.actual_summary or "nothing")
        threshold = json.dumps(condition.threshold, ensure_ascii=False)
        parts.append(f"{condition.key} {condition.op} {threshold} saw {seen}")
    return "; ".join(parts)
