"""Standard output that says when it cannot be written.

A command's answer is written to standard output; a write there that fails (a full disk, an
I/O error) is no bug in assay, but an answer that did not arrive whole. ``WatchedOutput``
turns such a failure into ``OutputError``, which the command line reports as incomplete
output: exit 2, or the command's own exit code when it had decided on a failing one (a ledger
that fails its checks exits 1 even when the report of it cannot be written; ``answer``). A
reader that went away (EPIPE) is left a ``BrokenPipeError``, which the command line answers
quietly.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO


class OutputError(Exception):
    """Writing to ``output`` failed with ``error``: what was written there is incomplete.
    ``code`` is the failing exit code the command had decided on before the write, if any."""

    def __init__(self, output: str, error: OSError) -> None:
        reason = error.strerror or str(error) or type(error).__name__
        super().__init__(f"cannot write to {output}: {reason}; the output is incomplete")
        self.output = output
        self.error = error
        self.code: int | None = None


def answer(code: int, *lines: str) -> int:
    """Print ``lines`` to standard output and return ``code``, which stays the exit code
    (when it is not 0) should the lines not be written."""
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        discard_stdout()  # the reader went away: nothing more to say to it
    except OutputError as error:
        error.code = code or None
        raise
    return code


def discard_stdout() -> None:
    """Point fd 1 at the null device, so that output still buffered for a reader that went
    away, or for a file that cannot grow, is dropped at exit rather than failing again."""
    try:
        descriptor = sys.stdout.fileno()
    except (OSError, ValueError):
        return  # not a file (a test's capture): nothing is left to flush to one
    os.dup2(os.open(os.devnull, os.O_WRONLY), descriptor)


class WatchedOutput:
    """``stream`` (standard output) with failed writes and flushes raised as ``OutputError``;
    everything else is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputError(_name(self._stream), error) from error

    def writelines(self, lines: list[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise OutputError(_name(self._stream), error) from error

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _name(stream: TextIO) -> str:
    """``standard output``, with the file it is redirected to when that can be known."""
    try:
        descriptor = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return "standard output"
    return standard_output_name(descriptor)


def standard_output_name(descriptor: int) -> str:
    """``standard output``, with the file ``descriptor`` (standard output, or a duplicate of
    it) writes to when that can be known."""
    try:
        target = os.readlink(f"/proc/self/fd/{descriptor}")
    except OSError:
        return "standard output"
    # A pipe or a socket reads "pipe:[…]"; only a path names something a person can look at.
    return f"standard output ({target})" if target.startswith("/") else "standard output"
