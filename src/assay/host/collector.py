"""``prepare_to_serve``: garbage collector settings for a process that serves a port.

A daemon's heap is mostly what it loaded to start: modules, the web framework, pydantic's
schemas, the application. CPython's full collections walk all of it, and under load they
come often: the objects of requests in flight outlive two young collections, are promoted,
and their count triggers the next full collection. Freezing what is alive once the port is
built (``gc.freeze``) keeps it out of every later collection, and a larger young threshold
makes young collections rarer. Reference counting still frees almost everything at once;
only cycles wait for the collector, and it still collects them.

Only the processes assay runs itself (``assay serve``, ``assay mcp``) call this: a program
that embeds the library keeps its own collector settings.
"""

from __future__ import annotations

import gc
from typing import Final

YOUNG_THRESHOLD: Final = 50_000
"""Net container allocations between young collections (CPython's default is 700)."""


def prepare_to_serve() -> None:
    """Collect once, freeze every object alive now, and raise the young threshold; call it
    when the port is built, just before it starts answering."""
    gc.collect()
    gc.freeze()
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, oldest)
