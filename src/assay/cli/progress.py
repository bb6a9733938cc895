"""``TerminalProgress``: how far a long command has got, on a terminal's stderr.

Redrawn on one line at most four times a second and erased when the work ends, so stdout
(what a script reads) never holds it; when stderr is not a terminal nothing is shown.
"""

from __future__ import annotations

import sys
import time
from typing import IO

REDRAW_S = 0.25


class TerminalProgress:
    """Call it with the count done so far: ``"{doing} 12,288 of 200,000 entries"`` (without
    ``of ...`` when the ``total`` is not known)."""

    def __init__(self, doing: str, total: int | None, stream: IO[str] | None = None) -> None:
        self._stream = sys.stderr if stream is None else stream
        self._doing = doing
        self._total = total
        self._shown = False
        self._next = 0.0
        self.enabled = self._stream.isatty()

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if not self.enabled or now < self._next:
            return
        self._next = now + REDRAW_S
        of = "" if self._total is None else f" of {self._total:,}"
        self._stream.write(f"\r{self._doing} {done:,}{of} entries…\033[K")
        self._stream.flush()
        self._shown = True

    def close(self) -> None:
        """Erase the line, if one was shown (``contextlib.closing`` calls it)."""
        if self._shown:
            self._stream.write("\r\033[K")  # erase the line: what follows starts clean
            self._stream.flush()
