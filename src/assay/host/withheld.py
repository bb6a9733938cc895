"""A refused value under a redacted key is named, never quoted, by every port.

A state report (``values``) and a filter contract (``expression``) carry values under state
paths, and a path the redaction rules cover must not have its value shown anywhere: not in a
summary, the ledger, nor the 400 that refuses it. ``withhold`` rewords such a refusal
(a ``StateError`` or ``ContractError`` naming the path as its ``key``) to say where and what
to do, with the value withheld; ``too_long`` does the same for an integer of more digits than
a number may have, found at a request's field. HTTP and MCP answer through them alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, overload

from assay.errors import AssayError, ContractError, StateError
from assay.json.path import format_path, parse_path
from assay.redaction import Redaction

_STORABLE: Final = "send a value that is JSON and can be stored as given"
_OPERAND: Final = "send an operand this operator takes"


def covered(redaction: Redaction, key: str | None) -> tuple[str, ...] | None:
    """The path ``key`` names when ``redaction`` covers it; ``None`` when it does not (or
    ``key`` is no path)."""
    if key is None or not redaction.patterns:
        return None
    try:
        path = parse_path(key)
    except AssayError:
        path = (key,)
    return path if redaction.covers(path) else None


def withheld_text(path: Sequence[str], instead: str) -> str:
    """Why the value at state path ``path`` is not shown, and what to do: ``instead``."""
    key = format_path(path)
    return f"the value sent is refused and not shown, as {key} is a redacted key; {instead}"


@overload
def withhold(error: StateError, redaction: Redaction) -> StateError: ...
@overload
def withhold(error: ContractError, redaction: Redaction) -> ContractError: ...
def withhold(error: StateError | ContractError, redaction: Redaction) -> StateError | ContractError:
    """``error`` reworded without the value it refused when ``redaction`` covers its
    ``key``; otherwise ``error`` itself. What to do instead is kept (the text after the
    last ``;`` of the message, where assay's refusals put it)."""
    path = covered(redaction, error.key)
    if path is None:
        return error
    message = str(error)
    generic = _STORABLE if isinstance(error, StateError) else _OPERAND
    instead = message.rsplit("; ", 1)[1] if "; " in message else generic
    if isinstance(error, StateError):
        text = f"cannot store {format_path(path)}: {withheld_text(path, instead)}"
        return StateError(text, key=error.key)
    where = f"contract key {error.key!r}" + (f" ({error.op})" if error.op else "")
    return ContractError(f"{where}: {withheld_text(path, instead)}", key=error.key, op=error.op)


def state_path(field: Sequence[str | int]) -> tuple[str, ...] | None:
    """The state path a request field holds a value of: a report's ``values.KEY...`` or a
    filter contract's ``expression.KEY``; ``None`` for any other field."""
    if len(field) < 2 or field[0] not in ("values", "expression"):
        return None
    key = str(field[1])
    try:
        path = parse_path(key)
    except AssayError:
        path = (key,)
    if field[0] == "values":
        return (*path, *(str(part) for part in field[2:]))
    return path


def too_long(redaction: Redaction, field: Sequence[str | int], reason: str) -> str | None:
    """The refusal of a too-long integer at request ``field`` (its ``reason`` names no
    value), saying its value is redacted when ``redaction`` covers the state path the field
    holds; ``None`` when it does not."""
    path = state_path(field)
    if path is None or not redaction.covers(path):
        return None
    return withheld_text(path, reason)
