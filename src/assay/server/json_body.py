"""Request bodies are JSON text in UTF-8, sent as ``application/json``, each key once per object.

Every route with a body, the hot ``POST /v1/verify`` (``hot``) and the routes of
``JSONRoute`` alike, reads it by these rules:

- a non-empty body needs ``Content-Type: application/json`` (or ``application/*+json``):
  any other, or none, is a 415 naming the type sent;
- a UTF-8 byte order mark at the start is ignored; other bytes that are not UTF-8 are
  ``json_invalid`` at the first of them;
- a key given twice in one object is ``json_duplicate_key``;
- half of a surrogate pair (``"\\ud800"``) is ``json_invalid`` at the escape;
- a body nested too deeply for Python's parser is ``json_invalid``, saying so;
- an integer of more than 4,300 digits is ``json_number_too_long``, at its field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from email.message import Message
from typing import Any, Final

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from assay.server.auth import authenticate
from assay.state import json_text
from assay.state.canonical import (
    HALF_SURROGATE_PAIR,
    RepeatedKeyError,
    holds_half_surrogate_pair,
    unique_keys,
)

BYTE_ORDER_MARK: Final = b"\xef\xbb\xbf"
JSON_MEDIA: Final = "application/json"
_TOO_DEEP: Final = (
    "it nests too deeply to read (JSON nested hundreds of levels deep); send a flatter body"
)
# An escaped surrogate (\uD800-\uDFFF): only a body holding one can hold half of a pair.
_SURROGATE: Final = re.compile(rb"\\u[dD][89a-fA-F]")


def check_media_type(content_type: str | None) -> None:
    """415 (an ``HTTPException``) unless ``content_type`` is JSON's."""
    if content_type == JSON_MEDIA:
        return
    if content_type:
        message = Message()
        message["content-type"] = content_type
        subtype = message.get_content_subtype()
        if message.get_content_maintype() == "application" and (
            subtype == "json" or subtype.endswith("+json")
        ):
            return
        sent = f"is sent as {message.get_content_type()}"
    else:
        sent = "has no Content-Type"
    raise HTTPException(
        415,
        f"the request body {sent}; send it as JSON, with the header Content-Type: {JSON_MEDIA}",
    )


def duplicate_key(body: bytes, keys: int) -> str | None:
    """The first key ``body`` gives twice in one object, where parsing it kept ``keys`` keys
    in all; ``None`` when no key repeats.

    Each key is followed by a colon, so a body with no more colons than the keys kept cannot
    repeat one: only a body with colons in its strings (or a repeated key) is read again.
    """
    if body.count(b":") <= keys:
        return None
    try:
        json.loads(body, object_pairs_hook=unique_keys)
    except RepeatedKeyError as repeated:
        return repeated.key
    except (ValueError, RecursionError):
        return None  # not this function's to refuse: the caller's parser read it
    return None


def duplicate_key_error(key: str) -> RequestValidationError:
    """The 400 for a body that gives ``key`` twice in one object."""
    return RequestValidationError(
        [
            {
                "loc": ("body",),
                "msg": f"the key {key!r} is given twice in one object; give each key once "
                "(JSON readers differ on which of the two counts)",
                "type": "json_duplicate_key",
            }
        ]
    )


def count_keys(value: Any) -> int:
    """How many keys the objects in ``value`` (parsed JSON) hold in all."""
    if isinstance(value, dict):
        return len(value) + sum(count_keys(item) for item in value.values())
    if isinstance(value, list):
        return sum(count_keys(item) for item in value)
    return 0


class JSONRoute(APIRoute):
    """An ``APIRoute`` that authenticates the request (401) before anything else of it is
    read, then reads its body by this module's rules before FastAPI sees it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()
        takes_body = self.body_field is not None

        async def handler(request: Request) -> Response:
            request = _JSONRequest(request.scope, request.receive)
            authenticate(request)
            if takes_body:
                body = await request.body()
                if body:
                    check_media_type(request.headers.get("content-type"))
                    request.read_json(body)
            return await handle(request)

        return handler


class _JSONRequest(Request):
    """A request whose JSON body ``read_json`` parsed, for FastAPI's ``json()`` to return."""

    def read_json(self, body: bytes) -> None:
        """Parse ``body`` by this module's rules; a ``RequestValidationError`` when it breaks
        one, shaped as FastAPI's for text that is not JSON."""
        try:
            text = body.decode("utf-8-sig")
        except UnicodeDecodeError as error:
            raise _invalid(f"the body is not UTF-8 text ({error.reason})", error.start) from None
        try:
            value = json_text.loads(text, object_pairs_hook=unique_keys)
        except json.JSONDecodeError as error:
            raise _invalid(error.msg, error.pos) from None
        except json_text.NumberTooLongError as error:
            raise too_long_error(error) from None
        except RecursionError:
            raise _invalid(_TOO_DEEP, 0) from None
        except RepeatedKeyError as repeated:
            raise duplicate_key_error(repeated.key) from None
        sign = _SURROGATE.search(body)
        if sign is not None and holds_half_surrogate_pair(value):
            raise _invalid(HALF_SURROGATE_PAIR, sign.start())
        self._json = value

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self.read_json(await self.body())
        return self._json


def too_long_error(error: json_text.NumberTooLongError) -> RequestValidationError:
    """The 400 for an integer with more digits than Python converts, naming its field."""
    return RequestValidationError(
        [{"type": "json_number_too_long", "loc": ("body", *error.path), "msg": error.reason}]
    )


def _invalid(reason: str, position: int) -> RequestValidationError:
    """FastAPI's error for a body that is not JSON text, breaking at ``position``."""
    return RequestValidationError(
        [
            {
                "type": "json_invalid",
                "loc": ("body", position),
                "msg": "JSON decode error",
                "input": {},
                "ctx": {"error": reason},
            }
        ]
    )
