"""The bounds every compiled expression runs within."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ExpressionLimits:
    """Bounds on an expression; every one has a clear error naming it when exceeded."""

    max_source_length: int = 10_000
    max_depth: int = 64
    max_callback_depth: int = 8
    max_steps: int = 500_000
    max_string_length: int = 1_000_000
