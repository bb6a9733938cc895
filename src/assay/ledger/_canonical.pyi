"""RFC 8785 canonical JSON of plain JSON values, in C (``_canonical.c``; see ``canonical``)."""

from typing import Any

def canonical_copy(value: Any, /) -> tuple[bytes, Any] | None:
    """(RFC 8785 text, the plain copy it reads back as) of plain JSON, else None."""

def canonical(value: Any, /) -> bytes | None:
    """The RFC 8785 text of plain JSON, else None."""

def stamped_draft(
    draft_type: type[Any],
    kind: str,
    timestamp: str,
    body: Any,
    session: str | None,
    run: str | None,
    transition: str | None,
    /,
) -> Any:
    """The draft of plain fields, made without its __init__, else None (entry.draft_now)."""
