"""The pure-Python twin of ``_canonical``, used where the C module was not built.

It takes no value as plain JSON, so every value goes where the C module sends what it does
not take: its text to the ``rfc8785`` package (``canonical``), its draft to ``EntryDraft``
(``entry.draft_now``). Those write the same bytes the C module writes, more slowly.
"""

from __future__ import annotations

from typing import Any


def canonical_copy(value: Any, /) -> tuple[bytes, Any] | None:
    """``None``: ``canonical.canonical_copy`` writes ``value`` with ``rfc8785``."""
    del value
    return None


def canonical(value: Any, /) -> bytes | None:
    """``None``: ``canonical.canonical_json`` writes ``value`` with ``rfc8785``."""
    del value
    return None


# Positional, as the C function's arguments are, so either serves entry.draft_now.
def stamped_draft(  # noqa: PLR0917
    draft_type: type[Any],
    kind: str,
    timestamp: str,
    body: Any,
    session: str | None,
    run: str | None,
    transition: str | None,
    /,
) -> Any:
    """``None``: ``entry.draft_now`` makes the draft with ``EntryDraft``."""
    del draft_type, kind, timestamp, body, session, run, transition
    return None
