"""What a session records as evidence, and the protocol of where it records it."""

from __future__ import annotations

from typing import Any, Protocol

from assay.state.snapshot import FieldChange


class EvidenceLog(Protocol):
    """Where a session records its evidence: the Evidence Ledger implements this."""

    def append(
        self,
        kind: str,
        body: Any,
        *,
        session: str | None = None,
        transition: str | None = None,
        run: str | None = None,
    ) -> Any: ...


def change_json(change: FieldChange) -> dict[str, Any]:
    """A field change as a JSON object."""
    return {"key": change.key, "before": change.before, "after": change.after, "kind": change.kind}
