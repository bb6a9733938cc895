"""What is wrong with where ``--ledger`` points, found before the ledger is opened, in the
command line's terms: a memory ledger given to a command that only reads, and a SQLite path
that is there but is not a regular file (SQLite's own words for these mislead)."""

from __future__ import annotations

import os
import stat
from typing import Final

_SQLITE: Final = "sqlite:///"


def memory_refusal(command: str) -> str:
    """Why ``command`` refuses ``--ledger memory:``, and what to give instead."""
    return (
        f"--ledger memory: names a ledger that lives only inside one process, so it holds "
        f"nothing for `{command}` to read; give the ledger that process wrote to, such as "
        "sqlite:///assay.db or postgresql://..."
    )


def sqlite_path_problem(url: str) -> str | None:
    """What is wrong with the path of a ``sqlite:///PATH`` URL, when it is there but is not a
    regular file a SQLite ledger could be; ``None`` otherwise (no such path is the
    backend's to say)."""
    if url[: len(_SQLITE)].lower() != _SQLITE or any(mark in url for mark in "?#"):
        return None
    path = url[len(_SQLITE) :]
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return (
            f"{path} is a directory, not a SQLite ledger file; name a file in it, such as "
            f"{_SQLITE}{path.rstrip('/')}/assay.db"
        )
    return (
        f"{path} is not a regular file (it is a device, a pipe or a socket), so it cannot "
        "hold a SQLite ledger; name a ledger file"
    )
