"""What the benchmarks share: timing with the cyclic GC paused, and ratios printed alike."""

from __future__ import annotations

import gc
import math
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a timed block, as ``timeit`` does."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc_was_enabled:
            gc.enable()


def ratio(value: float) -> str:
    """A ratio for people: 1,234x, 12x, 3.4x, 0.72x, 0.0013x."""
    if value >= 10:
        return f"{value:,.0f}x"
    if value >= 1:
        return f"{value:.1f}x"
    # two significant digits in fixed notation: 0.72x, 0.0013x, 0.000085x
    decimals = max(2, 1 - math.floor(math.log10(value))) if value > 0 else 2
    return f"{value:.{decimals}f}x"
