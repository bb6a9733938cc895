"""``POST /v1/verify`` answered ahead of FastAPI: the daemon's hottest route.

Taking a request through FastAPI (its telemetry check, middleware layers, matching some
thirty routes, resolving the endpoint's parameters) costs more than verifying a contract
and recording the verdict. The daemon's app (``app.Daemon``) hands this one route straight
to ``serve_verify``; the route declared in ``actions`` (for the OpenAPI document) answers by
the same function. Errors are rendered by the app's own exception handlers, so a
400, 401, 403, 404 or 503 here is the problem+json the router would have answered.
"""

from __future__ import annotations

import inspect
from typing import Final

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.types import Receive, Scope, Send

from assay.host.wire import VerifyRequest
from assay.server.auth import authorize
from assay.server.json_body import (
    BYTE_ORDER_MARK,
    JSON_MEDIA,
    check_media_type,
    count_keys,
    duplicate_key,
    duplicate_key_error,
    too_long_error,
)
from assay.server.problems import verify_problem
from assay.server.query import reject_query
from assay.server.tokens import Scope as TokenScope
from assay.state import json_text
from assay.verify.outcome import VerificationOutcome

PATH: Final = "/v1/verify"

_NO_QUERY: Final[frozenset[str]] = frozenset()
_JSON_MEDIA: Final = JSON_MEDIA.encode()
_OUTCOME_JSON: Final = VerificationOutcome.__pydantic_serializer__


async def serve_verify(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer one ``POST /v1/verify`` (``scope["app"]`` is the daemon's app): 200 with the
    outcome when the contract held, 422 with the outcome when it did not.

    Checks the token (read scope), rejects any query parameter, reads the body by the rules
    of ``json_body`` and validates it as a ``VerifyRequest``; other errors are rendered by
    the app's exception handlers. Writes the ASGI messages itself: this is the daemon's hot
    path.
    """
    app = scope["app"]
    try:
        if app.state.authenticator.enabled or scope["query_string"]:
            _check(Request(scope, receive))
        chunks: list[bytes] = []
        while True:
            message = await receive()  # the app's, which refuses a body over its limit
            if message["type"] == "http.disconnect":
                return  # nobody is left to answer; nothing was recorded
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if body:
            _check_media_type(scope)
            if body.startswith(BYTE_ORDER_MARK):
                body = body[len(BYTE_ORDER_MARK) :]
        try:
            request = VerifyRequest.model_validate_json(body)
        except ValidationError as error:
            _name_too_long_integer(error, body)
            raise RequestValidationError(
                [{**item, "loc": ("body", *item["loc"])} for item in error.errors()]
            ) from None
        keys = len(request.model_fields_set)
        if type(request.expression) is dict:
            keys += count_keys(request.expression)
        repeated = duplicate_key(body, keys)
        if repeated is not None:
            raise duplicate_key_error(repeated)
        outcome = await app.state.host.verify(request)
    except Exception as error:
        response = await _render(Request(scope, receive), error)
        await response(scope, receive, send)
        return
    if not outcome.passed:
        await verify_problem(Request(scope, receive), outcome)(scope, receive, send)
        return
    payload = _OUTCOME_JSON.to_json(outcome)  # model_dump_json's bytes, without a str between
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-length", b"%d" % len(payload)),
                (b"content-type", b"application/json"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})


class Answered(Response):
    """What the declared route returns: a response that answers by ``serve_verify``, so the
    route answers the same whether or not ``Daemon`` intercepted the request first."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await serve_verify(scope, receive, send)


def _check_media_type(scope: Scope) -> None:
    """415 unless the request says its body is JSON; read from the raw headers, as the
    request's are not parsed here."""
    for name, value in scope["headers"]:
        if name == b"content-type":
            if value != _JSON_MEDIA:
                check_media_type(value.decode("latin-1"))
            return
    check_media_type(None)


def _name_too_long_integer(error: ValidationError, body: bytes) -> None:
    """Raise the 400 naming the field of an integer too long to convert, where pydantic's
    parser says only "number out of range" at a column; return for any other error."""
    if not any(item["type"] == "json_invalid" for item in error.errors()):
        return
    try:
        json_text.loads(body)
    except json_text.NumberTooLongError as too_long:
        raise too_long_error(too_long) from None
    except (ValueError, RecursionError):
        return


def _check(request: Request) -> None:
    """401/403 without a token holding the read scope; 400 for any query parameter."""
    authorize(request, TokenScope.READ)
    if request.scope.get("query_string"):
        reject_query(request, _NO_QUERY)


async def _render(request: Request, error: Exception) -> Response:
    """``error`` as the app's exception handler for it renders it, the handler found by the
    error's MRO as Starlette finds it (the app installs one for ``Exception``)."""
    handlers = request.app.exception_handlers
    for kind in type(error).__mro__:
        if kind in handlers:
            rendered = handlers[kind](request, error)
            response: Response = await rendered if inspect.isawaitable(rendered) else rendered
            return response
    raise error
