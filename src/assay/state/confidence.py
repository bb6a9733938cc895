"""Confidence: how far the current snapshot can be trusted to reflect the application.

Confidence = freshness × coverage × health, each in 0..1 and all three reported (SPEC §4):

- freshness: 1 while the last successful read or report is no older than the expected
  interval, falling linearly to 0 at three intervals; 0 before anything was heard.
- coverage: the share of the keys the graph's actions declare they write that are present.
- health: the mean success ratio of the recent reads of each probe; 1 with no probes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from assay.json.path import read_path

_STALE_AFTER_INTERVALS = 3.0


class Confidence(BaseModel):
    """The product and its three parts."""

    model_config = ConfigDict(frozen=True)

    value: float = Field(ge=0, le=1, description="freshness × coverage × health")
    freshness: float = Field(ge=0, le=1, description="age of the last read or report")
    coverage: float = Field(ge=0, le=1, description="share of declared written keys present")
    health: float = Field(ge=0, le=1, description="recent probe read success ratio")


def freshness(age: float | None, expected_interval: float) -> float:
    """1 up to one expected interval of age, 0 from three; ``None`` (never heard) is 0."""
    if age is None:
        return 0.0
    if age <= expected_interval:
        return 1.0
    span = expected_interval * (_STALE_AFTER_INTERVALS - 1)
    return max(0.0, 1.0 - (age - expected_interval) / span)


def coverage(objects: Mapping[str, Any], declared: Iterable[Sequence[str]]) -> float:
    """The share of declared key paths present in ``objects``; 1 when none are declared."""
    paths = list(declared)
    if not paths:
        return 1.0
    present = sum(1 for path in paths if read_path(objects, path).found)
    return present / len(paths)


def health(ratios: Iterable[float]) -> float:
    """The mean of the probes' recent success ratios; 1 when there are no probes."""
    values = list(ratios)
    return sum(values) / len(values) if values else 1.0


def assess(
    *,
    age: float | None,
    expected_interval: float,
    objects: Mapping[str, Any],
    declared: Iterable[Sequence[str]] = (),
    probe_ratios: Iterable[float] = (),
) -> Confidence:
    """Combine the three parts into a ``Confidence``."""
    f = freshness(age, expected_interval)
    c = coverage(objects, declared)
    h = health(probe_ratios)
    return Confidence(value=round(f * c * h, 6), freshness=f, coverage=c, health=h)
