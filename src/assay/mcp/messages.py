"""Reading one JSON-RPC message from a client, or the error that answers it when it is none.

Both transports read through ``read_message``, so a client hears the same answer for the same
mistake over stdio and over streamable HTTP: a parse error (-32700) for text that is not JSON,
an invalid request (-32600) naming the first field at fault for JSON that is not a valid
message, including a request whose id is neither a string nor an integer. The error goes
under the request's id when it can be written back, else under a null id. ``ParamsRefusal``
answers valid messages whose params are not what the method takes (-32602, naming the field).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Final

import mcp_types
from mcp import MCPError
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from pydantic import ValidationError

from assay.json.path import json_type_name
from assay.redaction import Redaction
from assay.state import json_text
from assay.state.canonical import (
    HALF_SURROGATE_PAIR,
    RepeatedKeyError,
    holds_half_surrogate_pair,
    unique_keys,
)

_EXPECTED: Final = {
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "list_type": "an array",
}
"""What a field must be, by the pydantic error type that says it is not."""

_SHOWN: Final = 40
"""How many characters of a refused value an error shows."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """The error to send back for a text that is not a message the server can act on."""

    error: mcp_types.JSONRPCError


def read_message(data: bytes | str, unit: str) -> mcp_types.JSONRPCMessage | Refusal:
    """The message ``data`` (UTF-8 bytes, or text) holds, or its ``Refusal``; ``unit`` names
    what it came in (``"line"``, ``"body"``) for the error that says it is not JSON."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            reason = f"the {unit} is not UTF-8 text ({error.reason} at byte {error.start})"
            return Refusal(_error(None, mcp_types.PARSE_ERROR, reason))
    else:
        text = data
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as error:
        return Refusal(_refusal(text, error, unit))
    if isinstance(message, mcp_types.JSONRPCNotification) and '"id"' in text:
        unusable = _unusable_id(text)
        if unusable is not None:  # read as a notification, it would go unanswered
            return Refusal(unusable)
    strict = _not_strict_json(text, message)
    return message if strict is None else Refusal(strict)


def _not_strict_json(text: str, message: mcp_types.JSONRPCMessage) -> mcp_types.JSONRPCError | None:
    """The error for a message the SDK's parser reads but JSON (RFC 8259) does not have it
    so: a key given twice in one object (readers differ on which counts, and the last
    would win: ``{"action": "a", "action": "b"}`` fired ``b``), or ``NaN``, ``Infinity``."""
    request_id = message.id if isinstance(message, mcp_types.JSONRPCRequest) else None
    try:
        json.loads(
            text,
            object_pairs_hook=unique_keys,
            parse_constant=_not_a_number,
            parse_float=_finite,
        )
    except RepeatedKeyError as repeated:
        reason = (
            f"the key {repeated.key!r} is given twice in one object; give each key once "
            "(JSON readers differ on which of the two counts)"
        )
        return _error(request_id, mcp_types.INVALID_REQUEST, reason)
    except _NotANumberError as number:
        reason = f"{number.args[0]}; send a finite number, or null for none"
        return _error(request_id, mcp_types.PARSE_ERROR, reason)
    except (ValueError, RecursionError):
        return None  # the SDK's parser read it; nothing more to say
    return None


class _NotANumberError(Exception):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a message, or a number beyond a double's
    range (``1e400``, which would be read as infinity): no number a reply can carry."""


def _not_a_number(constant: str) -> Any:
    raise _NotANumberError(f"{constant} is not a JSON number")


def _finite(text: str) -> float:
    number = float(text)
    if math.isinf(number):
        shown = text if len(text) <= 40 else f"{text[:40]}…"
        raise _NotANumberError(f"{shown} is beyond the range of a double (±1.8e308)")
    return number


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
        data = json_text.loads(text)
    except json_text.NumberTooLongError as too_long:
        return _too_long(text, too_long)
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


def _too_long(text: str, error: json_text.NumberTooLongError) -> mcp_types.JSONRPCError:
    """The error for a message holding an integer of more digits than a number may have,
    naming its field; under the request's id, read with that integer left out."""
    limit = error.limit
    data = json.loads(text, parse_int=lambda digits: 0 if len(digits) > limit else int(digits))
    request_id = data.get("id") if isinstance(data, dict) and "method" in data else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    where = json_text.where(error.path)
    if error.path[:1] == ("params",):
        return _error(request_id, mcp_types.INVALID_PARAMS, f"{where}: {error.reason}", "params")
    return _error(request_id, mcp_types.INVALID_REQUEST, f"{where}: {error.reason}")


def _kind_of(data: Any) -> str:
    """The kind of JSON-RPC message ``data`` most looks like, as pydantic names it."""
    if not isinstance(data, dict) or ("method" in data and "id" in data):
        return "JSONRPCRequest"
    if "method" in data:
        return "JSONRPCNotification"
    return "JSONRPCError" if "error" in data else "JSONRPCResponse"


def _error(
    request_id: int | str | None, code: int, reason: str, what: str = "request"
) -> mcp_types.JSONRPCError:
    return mcp_types.JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=mcp_types.ErrorData(code=code, message=f"invalid {what}: {reason}"),
    )


class ParamsRefusal:
    """Server middleware: a request whose params fail its method's schema is refused with
    invalid params (-32602) naming the field at fault (``invalid_params``)."""

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        try:
            return await call_next(ctx)
        except ValidationError as error:
            reason = invalid_params(ctx.method, error)
            if reason is None:
                raise
            raise MCPError(mcp_types.INVALID_PARAMS, reason) from error


def invalid_params(method: str, error: ValidationError) -> str | None:
    """What is wrong with the params of a ``method`` request, from the SDK's check of the
    whole request; ``None`` for an error that is not about the params."""
    errors = error.errors()
    if not errors or any(found["loc"][:1] != ("params",) for found in errors):
        return None
    first = errors[0]
    loc, faults = first["loc"], [first]
    members = [found for found in errors if found["loc"][:-1] == loc[:-1]]
    if len(loc) > 2 and len(members) > 1 and all(m["input"] is first["input"] for m in members):
        loc, faults = loc[:-1], members  # one error per member of a union, tagged by its name
    where = ".".join(str(part) for part in loc)
    if first["type"] == "missing":
        return f"invalid params: {where} is missing; {method} requires it"
    expected = [_EXPECTED.get(found["type"]) for found in faults]
    if None in expected:
        return f"invalid params: {where}: {first['msg']}"
    seen = json_type_name(first["input"])
    shown = Redaction.none().summarize((), first["input"], limit=_SHOWN)
    hint = (
        " (the tool's arguments by name, as its inputSchema in tools/list gives them)"
        if loc == ("params", "arguments")
        else ""
    )
    must = " or ".join(dict.fromkeys(str(e) for e in expected))
    return f"invalid params: {where} must be {must}{hint}, not {seen}: {shown}"
