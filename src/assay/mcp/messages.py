"""Reading one JSON-RPC message from a client, or the error that answers it when it is none.

Both transports read through ``read_message``, so a client hears the same answer for the same
mistake over stdio and over streamable HTTP: a text that is not JSON is a parse error
(-32700); one that is JSON but not a valid message is an invalid request (-32600) naming the
first field at fault. A request whose id is neither a string nor an integer (``true``,
``1.5``, ``null``) would be read by the SDK's types as a notification and never answered, so
it is refused too. The error goes under the request's id when it can be written back, else
under a null id, as JSON-RPC 2.0 has it when the id cannot be determined.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import mcp_types
from pydantic import ValidationError

from assay.state.canonical import HALF_SURROGATE_PAIR, holds_half_surrogate_pair


@dataclass(frozen=True, slots=True)
class Refusal:
    """The error to send back for a text that is not a message the server can act on."""

    error: mcp_types.JSONRPCError


def read_message(text: str, unit: str) -> mcp_types.JSONRPCMessage | Refusal:
    """The message ``text`` holds, or its ``Refusal``; ``unit`` names what the text came in
    (``"line"``, ``"body"``) for the error that says it is not JSON."""
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as error:
        return Refusal(_refusal(text, error, unit))
    if isinstance(message, mcp_types.JSONRPCNotification) and '"id"' in text:
        unusable = _unusable_id(text)
        if unusable is not None:  # read as a notification, it would go unanswered
            return Refusal(unusable)
    return message


def _unusable_id(text: str) -> mcp_types.JSONRPCError | None:
    """The error answering ``text``, read as a notification, if it is a request whose id is
    neither a string nor an integer: pydantic drops such an id."""
    data = json.loads(text)
    if not isinstance(data, dict) or "id" not in data:
        return None
    shown = json.dumps(data["id"])
    shown = shown if len(shown) <= 40 else f"{shown[:40]}…"
    reason = f"id: a request's id is a string or an integer, not {shown}"
    return _error(None, mcp_types.INVALID_REQUEST, reason)


def _refusal(text: str, error: ValidationError, unit: str) -> mcp_types.JSONRPCError:
    try:
        data = json.loads(text)
    except RecursionError:
        return _error(None, mcp_types.INVALID_REQUEST, "the message nests too deeply to read")
    except ValueError as not_json:
        return _error(None, mcp_types.PARSE_ERROR, f"the {unit} is not JSON ({not_json})")
    request_id = data.get("id") if isinstance(data, dict) and "method" in data else None
    if (
        isinstance(request_id, bool)
        or not isinstance(request_id, int | str)
        or (isinstance(request_id, str) and holds_half_surrogate_pair(request_id))
    ):
        request_id = None  # a notification, not a request, or an id that cannot be answered
    if holds_half_surrogate_pair(data):
        return _error(request_id, mcp_types.PARSE_ERROR, HALF_SURROGATE_PAIR)
    if isinstance(data, dict) and not {"method", "result", "error"} & data.keys():
        reason = (
            "the message has no method (a request or notification), result or error (a "
            "response to the server)"
        )
        return _error(None, mcp_types.INVALID_REQUEST, reason)
    errors = error.errors()
    kind = _kind_of(data)
    first = next((e for e in errors if e["loc"][:1] == (kind,)), errors[0])
    path = [str(part) for part in first["loc"]]
    if path and path[0].startswith("JSONRPC"):
        del path[0]  # the kind of message it was read as
    where = ".".join(path) or "the message"
    return _error(request_id, mcp_types.INVALID_REQUEST, f"{where}: {first['msg']}")


def _kind_of(data: Any) -> str:
    """The kind of JSON-RPC message ``data`` most looks like, as pydantic names it."""
    if not isinstance(data, dict) or ("method" in data and "id" in data):
        return "JSONRPCRequest"
    if "method" in data:
        return "JSONRPCNotification"
    return "JSONRPCError" if "error" in data else "JSONRPCResponse"


def _error(request_id: int | str | None, code: int, reason: str) -> mcp_types.JSONRPCError:
    return mcp_types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=mcp_types.ErrorData(code=code, message=f"invalid request: {reason}"),
    )
