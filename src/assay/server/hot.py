"""``POST /v1/verify`` and ``POST /v1/actions`` answered ahead of FastAPI: the hot routes.

The daemon's app (``app.Daemon``) hands these routes straight to ``serve_verify`` and
``serve_fire``, because routing through FastAPI costs more than verifying a contract
(docs/http.md, "Performance"). Errors are rendered by the app's own exception handlers, so a
refusal here is the problem+json the router would have answered; ``serve_fire`` answers a
well-formed fire itself and hands any other to the router, with the body it read.
"""

from __future__ import annotations

import inspect
from typing import Final

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.types import Message, Receive, Scope, Send

from assay.host.idempotency import MAX_KEY_LENGTH
from assay.host.wire import ActionRequest, ActionResponse, VerifyRequest
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
from assay.server.problems import action_problem, verify_problem
from assay.server.query import reject_query
from assay.server.tokens import Scope as TokenScope
from assay.state import json_text
from assay.verify.outcome import VerificationOutcome

PATH: Final = "/v1/verify"
FIRE_PATH: Final = "/v1/actions"

_NO_QUERY: Final[frozenset[str]] = frozenset()
_JSON_MEDIA: Final = JSON_MEDIA.encode()
_OUTCOME_JSON: Final = VerificationOutcome.__pydantic_serializer__
_ANSWER_JSON: Final = ActionResponse.__pydantic_serializer__
_IDEMPOTENCY_KEY: Final = b"idempotency-key"
_VISIBLE_ASCII: Final = frozenset(range(0x20, 0x7F))


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
        body = await _read_body(receive)
        if body is None:
            return  # nobody is left to answer; nothing was recorded
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
    await _send_json(send, _OUTCOME_JSON.to_json(outcome))


async def serve_fire(scope: Scope, receive: Receive, send: Send) -> None:
    """Answer one ``POST /v1/actions`` (``scope["app"]`` is the daemon's app) as its route in
    ``actions`` does: checks the token (act scope) first; a fire with no query, a valid
    Idempotency-Key (or none) and a JSON body that validates as an ``ActionRequest`` with
    each key once is fired here, any other request is answered by the router."""
    app = scope["app"]
    if scope["query_string"] or not _plain_key(scope):
        await FastAPI.__call__(app, scope, receive, send)
        return
    request = Request(scope, receive)
    try:
        who = authorize(request, TokenScope.ACT)
        body = await _read_body(receive)
        if body is None:
            return  # nobody is left to answer; nothing was recorded
    except Exception as error:
        response = await _render(request, error)
        await response(scope, receive, send)
        return
    fire = _plain_fire(scope, body)
    if fire is None:
        await FastAPI.__call__(app, scope, _replayed(body, receive), send)
        return
    try:
        answer = await app.state.host.fire(fire, idempotency_key=_key_of(scope), scope=who.name)
    except Exception as error:
        response = await _render(request, error)
        await response(scope, receive, send)
        return
    problem = action_problem(request, answer)
    if problem is not None:
        await problem(scope, receive, send)
        return
    await _send_json(send, _ANSWER_JSON.to_json(answer))


def _plain_fire(scope: Scope, body: bytes) -> ActionRequest | None:
    """``body`` as an ``ActionRequest`` when it is sent as JSON, without a byte order mark,
    validates, and gives each key once; ``None`` for the router to refuse it otherwise."""
    sent_as = _header(scope, b"content-type")
    if not body or body.startswith(BYTE_ORDER_MARK) or sent_as != _JSON_MEDIA:
        return None
    try:
        fire = ActionRequest.model_validate_json(body)
    except ValidationError:
        return None
    if duplicate_key(body, len(fire.model_fields_set) + count_keys(fire.args)) is not None:
        return None
    return fire


def _plain_key(scope: Scope) -> bool:
    """Whether the request sends no Idempotency-Key, or one of 1 to ``MAX_KEY_LENGTH``
    visible ASCII characters (or spaces) once."""
    keys = [value for name, value in scope["headers"] if name == _IDEMPOTENCY_KEY]
    if not keys:
        return True
    (key,) = keys if len(keys) == 1 else (b"",)
    return 0 < len(key) <= MAX_KEY_LENGTH and _VISIBLE_ASCII.issuperset(key)


def _key_of(scope: Scope) -> str | None:
    key = _header(scope, _IDEMPOTENCY_KEY)
    return None if key is None else key.decode("ascii")


def _header(scope: Scope, name: bytes) -> bytes | None:
    """The first value of the header ``name`` (lower case) the request sends."""
    for sent, value in scope["headers"]:
        if sent == name:
            return bytes(value)
    return None


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body, or ``None`` when the client left before sending it."""
    chunks: list[bytes] = []
    while True:
        message = await receive()  # the app's, which refuses a body over its limit
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """``receive`` that gives ``body``, already read, as the request's one message first."""
    replay: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return replay.pop() if replay else await receive()

    return replayed


async def _send_json(send: Send, payload: bytes) -> None:
    """A 200 with ``payload`` (a model's JSON, without a ``str`` between) as its body."""
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
    sent_as = _header(scope, b"content-type")
    if sent_as != _JSON_MEDIA:
        check_media_type(None if sent_as is None else sent_as.decode("latin-1"))


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
