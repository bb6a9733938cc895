"""Probe health: how the recent reads of one probe went (SPEC §4, the "health" of confidence).

A ``HealthWindow`` records each read of a probe in O(1) and keeps the outcomes of the last
``size`` reads (20 by default); ``snapshot()`` answers a frozen ``ProbeHealth``. Before any
read the health is unknown: ``ratio`` is then 1.0, so a probe that has not been read yet
does not drag confidence down, and ``reads == 0`` (``known`` is false) lets a caller tell
"unknown" from "perfect". The last error is kept after a later success, for diagnosis;
``consecutive_failures`` says whether the probe is failing now.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Final

from assay.errors import ProbeConfigError

DEFAULT_WINDOW: Final = 20
"""How many recent reads the success ratio is taken over."""

ERROR_LIMIT: Final = 500
"""Error messages are kept to this many characters, so a health record stays small."""


@dataclass(frozen=True, slots=True)
class ProbeHealth:
    """One probe's health at an instant; times are the poller clock's ``monotonic()``."""

    probe: str
    ratio: float
    """Successes over reads in the recent window; 1.0 while there have been no reads."""
    reads: int
    """Reads since the probe was first polled, successes and failures alike."""
    recent: int
    """Reads in the window the ratio is taken over: ``min(reads, window size)``."""
    consecutive_failures: int
    last_error: str | None
    last_success_at: float | None
    last_failure_at: float | None

    @property
    def known(self) -> bool:
        """Whether any read has happened, i.e. whether ``ratio`` means anything yet."""
        return self.reads > 0


class HealthWindow:
    """The running record of one probe's reads; cheap to update and to snapshot."""

    __slots__ = (
        "_consecutive_failures",
        "_last_error",
        "_last_failure_at",
        "_last_success_at",
        "_outcomes",
        "_reads",
        "_successes",
        "probe",
    )

    def __init__(self, probe: str, size: int = DEFAULT_WINDOW) -> None:
        if size < 1:
            raise ProbeConfigError(
                f"a health window holds at least one read, got size={size}", parameter="size"
            )
        self.probe = probe
        self._outcomes: deque[bool] = deque(maxlen=size)
        self._successes = 0
        self._reads = 0
        self._consecutive_failures = 0
        self._last_error: str | None = None
        self._last_success_at: float | None = None
        self._last_failure_at: float | None = None

    @property
    def size(self) -> int:
        """How many recent reads the ratio is taken over."""
        maxlen = self._outcomes.maxlen
        assert maxlen is not None
        return maxlen

    @property
    def ratio(self) -> float:
        """The success ratio of the recent reads; 1.0 before any read."""
        recent = len(self._outcomes)
        return self._successes / recent if recent else 1.0

    def record_success(self, at: float) -> None:
        """Count a read that succeeded at monotonic time ``at``."""
        self._push(True)
        self._consecutive_failures = 0
        self._last_success_at = at

    def record_failure(self, at: float, error: str) -> None:
        """Count a read that failed at monotonic time ``at`` with the message ``error``."""
        self._push(False)
        self._consecutive_failures += 1
        self._last_failure_at = at
        if len(error) > ERROR_LIMIT:
            error = error[: ERROR_LIMIT - 1] + "…"
        self._last_error = error

    def snapshot(self) -> ProbeHealth:
        """The health as it is now, as a frozen record."""
        return ProbeHealth(
            probe=self.probe,
            ratio=self.ratio,
            reads=self._reads,
            recent=len(self._outcomes),
            consecutive_failures=self._consecutive_failures,
            last_error=self._last_error,
            last_success_at=self._last_success_at,
            last_failure_at=self._last_failure_at,
        )

    def _push(self, success: bool) -> None:
        outcomes = self._outcomes
        if len(outcomes) == outcomes.maxlen and outcomes[0]:
            self._successes -= 1
        outcomes.append(success)
        self._successes += success
        self._reads += 1
