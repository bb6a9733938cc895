"""Rows as a database backend stores them, and as it hands them to verification untrusted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import ValidationError

from assay.errors import CheckpointError
from assay.ledger.backends.query import query_fields
from assay.ledger.checkpoint import Checkpoint
from assay.ledger.entry import Entry

COLUMNS: Final = ("timestamp", "kind", "session", "run", "transition", "prev_hash", "hash")
"""The entry fields a database backend also keeps in columns of their own, beside ``seq``."""

CHECKPOINT_FIELDS: Final = ("size", "root", "timestamp", "key_id", "signature")


def entry_row(entry: Entry) -> tuple[object, ...]:
    """What a database backend stores for ``entry``: ``seq``, the ``COLUMNS`` in order, and
    the entry's canonical JSON as text."""
    return (*query_fields(entry), entry.prev_hash, entry.hash, entry.canonical.decode())


@dataclass(frozen=True, slots=True)
class StoredRow:
    """One stored entry exactly as the store holds it, for verification.

    ``seq`` is the row's key, ``entry`` its canonical JSON bytes, ``columns`` the other
    fields it keeps in columns of their own (empty when it keeps only the JSON). A tampered
    store may hold anything in them, so nothing here is trusted.
    """

    seq: int
    entry: bytes
    columns: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class StoredCheckpoint:
    """One stored signed tree head exactly as the store holds it; ``number`` counts from 1."""

    number: int
    fields: Mapping[str, object]

    def checkpoint(self) -> Checkpoint:
        """The checkpoint, validated; ``CheckpointError`` names the malformed field."""
        try:
            return Checkpoint.model_validate(dict(self.fields))
        except ValidationError as error:
            first = error.errors()[0]
            field = str(first["loc"][0]) if first["loc"] else "checkpoint"
            raise CheckpointError(
                f"checkpoint {self.number}: field {field!r} is malformed: {first['msg']}",
                field=field,
            ) from None


def stored_checkpoints_of(rows: Iterable[Sequence[Any]]) -> list[StoredCheckpoint]:
    """Rows of ``(number, *CHECKPOINT_FIELDS)``, as a store reads them, as checkpoints."""
    return [
        StoredCheckpoint(number, dict(zip(CHECKPOINT_FIELDS, fields, strict=True)))
        for number, *fields in rows
    ]


def checkpoint_fields(checkpoint: Checkpoint) -> tuple[object, ...]:
    """A checkpoint's fields in ``CHECKPOINT_FIELDS`` order, for storing in columns."""
    return tuple(getattr(checkpoint, name) for name in CHECKPOINT_FIELDS)
