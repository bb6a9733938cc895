"""RFC 9457 problem details: every error the daemon answers, and how each error becomes one.

Each problem has a stable ``type`` (``urn:assay:problem:<code>``), a ``title`` per type, the
HTTP ``status``, a ``detail`` sentence that says what was wrong and what to do, the request
path as ``instance``, and extension members that carry the figures a program needs (the
field at fault, an expression's ``position`` and ``caret``, the full ``ActionResponse`` of a
failed or refused fire, the ``VerificationOutcome`` of a failed verification).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException
from starlette.routing import Match

from assay.errors import (
    ContractError,
    EvidenceStoppedError,
    ExpressionError,
    ExpressionSyntaxError,
    IdempotencyKeyReusedError,
    LedgerEntryError,
    LedgerError,
    LedgerIntegrityError,
    NotFoundError,
    ProofError,
    RequestError,
    RunError,
    RunNotFoundError,
    StateError,
    WorkflowError,
    WorkflowUnavailableError,
)
from assay.host.excerpt import EXCERPT_CHARACTERS, excerpt, excerpted
from assay.host.wire import ActionResponse, Problem
from assay.host.withheld import too_long, withhold
from assay.redaction import Redaction
from assay.state.canonical import HALF_SURROGATE_PAIR
from assay.verify.outcome import VerificationOutcome

MEDIA_TYPE: Final = "application/problem+json"
_URN: Final = "urn:assay:problem:"
_HALF_SURROGATE: Final = ("unexpected end of hex escape", "lone leading surrogate in hex escape")
"""How pydantic's JSON parser words a \\uXXXX escape of half a surrogate pair, alone."""

DETAIL_CHARACTERS: Final = 4 * EXCERPT_CHARACTERS
"""The most characters a problem's ``detail`` quotes: an excerpt and what to do instead."""

logger = logging.getLogger("assay.server")


class FieldProblem(BaseModel):
    """One thing wrong with a request: where (``field``, dotted) and what."""

    field: str = Field(description="where in the request: body.args, query.wait_ms, ...")
    message: str
    type: str = Field(description="the kind of mistake, e.g. missing, int_parsing")


class ActionProblem(Problem, ActionResponse):
    """A fire that failed (422), was refused (409, 400, 404): the problem, with the whole
    ``ActionResponse`` as extension members so nothing the 200 answer would say is lost."""


class VerifyProblem(Problem, VerificationOutcome):
    """422 from ``POST /v1/verify``: the contract did not hold; the outcome says what was seen."""


REFUSAL_STATUS: Final[Mapping[str, int]] = {
    "unknown_action": 404,
    "bad_arguments": 400,
    "not_available_here": 409,
    "single_flight": 409,
    "low_confidence": 409,
}
_REFUSAL_TITLE: Final[Mapping[str, str]] = {
    "unknown_action": "No such action",
    "bad_arguments": "Bad arguments",
    "not_available_here": "Refused: not available here",
    "single_flight": "Refused: single flight",
    "low_confidence": "Refused: confidence too low",
}


class ProblemResponse(JSONResponse):
    """A JSON response with the ``application/problem+json`` media type."""

    media_type = MEDIA_TYPE


def problem_response(
    request: Request | None,
    status: int,
    code: str,
    title: str,
    detail: str,
    *,
    headers: Mapping[str, str] | None = None,
    **members: Any,
) -> ProblemResponse:
    """A problem+json response; ``members`` become extension members. A ``detail`` that
    quotes a long value is cut to an ``excerpt``."""
    body: dict[str, Any] = {
        "type": _URN + code if code else "about:blank",
        "title": title,
        "status": status,
        "detail": excerpt(detail, DETAIL_CHARACTERS),
        "instance": request.url.path if request is not None else None,
    }
    for name, value in members.items():
        if name not in body:
            body[name] = value
    return ProblemResponse(body, status_code=status, headers=dict(headers or {}))


def action_problem(request: Request, response: ActionResponse) -> ProblemResponse | None:
    """The problem a fire's answer is over HTTP, or ``None`` when it is a 200; a refusal's
    ``error`` and ``why`` quote what they refused in an ``excerpt``."""
    if response.effect_status == "refused":
        response = excerpted(response)
    members = response.model_dump(mode="json")
    if response.effect_status == "refused":
        reason = response.refusal or "refused"
        status = REFUSAL_STATUS.get(reason, 409)
        title = _REFUSAL_TITLE.get(reason, "Refused")
        detail = response.why or response.error or f"{response.did} was refused ({reason})"
        return problem_response(request, status, reason.replace("_", "-"), title, detail, **members)
    if response.effect_status == "failed" and response.failure == "handler":
        # No verification decided it: the handler itself failed, whatever it did before.
        detail = response.why or response.error or f"{response.did}'s handler failed"
        return problem_response(
            request, 422, "handler-failed", "The action's handler failed", detail, **members
        )
    if response.effect_status == "failed":
        detail = response.why or response.error or f"{response.did} failed"
        if response.executed:
            detail += " The action ran (executed is true); its effect was not observed."
        return problem_response(
            request, 422, "verification-failed", "Verification failed", detail, **members
        )
    return None


def verify_problem(request: Request, outcome: VerificationOutcome) -> ProblemResponse:
    """422 for a contract that did not hold within the timeout."""
    return problem_response(
        request,
        422,
        "verification-failed",
        "Verification failed",
        outcome.narrative,
        **outcome.model_dump(mode="json"),
    )


def install(app: FastAPI) -> None:
    """Render every error as problem+json: assay's own, FastAPI's and anything unexpected."""
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(ExpressionSyntaxError, _expression_syntax)
    app.add_exception_handler(NotFoundError, _not_found)
    app.add_exception_handler(LedgerError, _ledger)
    for error in (
        IdempotencyKeyReusedError,
        RequestError,
        ContractError,
        StateError,
        ExpressionError,
        LedgerEntryError,
        ProofError,
        WorkflowError,
    ):
        app.add_exception_handler(error, _bad_request)
    app.add_exception_handler(WorkflowUnavailableError, _workflow_unavailable)
    app.add_exception_handler(RunNotFoundError, _run_not_found)
    app.add_exception_handler(RunError, _run_conflict)
    app.add_exception_handler(Exception, _unexpected)


async def _validation(request: Request, error: Exception) -> ProblemResponse:
    assert isinstance(error, RequestValidationError)
    redaction = _redaction(request)
    problems = [_field_problem(item, redaction) for item in error.errors()]
    listed = "; ".join(f"{p.field}: {p.message}" for p in problems[:5])
    more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
    return problem_response(
        request,
        400,
        "invalid-request",
        "Invalid request",
        f"the request does not match the schema at /openapi.json: {listed}{more}",
        errors=[p.model_dump() for p in problems],
    )


def _redaction(request: Request) -> Redaction:
    """The redaction of the host the app serves (none before one is set)."""
    host = getattr(request.app.state, "host", None)
    redaction = getattr(host, "redaction", None)
    return redaction if isinstance(redaction, Redaction) else Redaction.none()


def _field_problem(item: Mapping[str, Any], redaction: Redaction) -> FieldProblem:
    loc = tuple(item.get("loc", ()))
    location = ".".join(str(part) for part in loc)
    message = str(item.get("msg", "invalid"))
    if item.get("type") == "json_number_too_long" and loc[:1] == ("body",):
        message = too_long(redaction, loc[1:], message) or message
    if item.get("type") == "json_invalid":
        reason = (item.get("ctx") or {}).get("error")
        if reason and str(reason) not in message:  # FastAPI's: "JSON decode error" alone
            message = f"{message}: {reason}"
        if any(sign in message for sign in _HALF_SURROGATE):  # pydantic's wording of it
            message = f"{message} ({HALF_SURROGATE_PAIR})"
    return FieldProblem(
        field=location or "body", message=message, type=str(item.get("type", "invalid"))
    )


async def _http(request: Request, error: Exception) -> ProblemResponse:
    assert isinstance(error, HTTPException)
    title = _HTTP_TITLES.get(error.status_code, "Error")
    detail = str(error.detail) if error.detail else title
    if error.status_code == 400:
        # Starlette's own: a body that could not be read (not UTF-8, not form data).
        return problem_response(
            request,
            400,
            "invalid-request",
            "Invalid request",
            f"the request body could not be parsed ({detail}); send JSON encoded as UTF-8",
            errors=[{"field": "body", "message": detail, "type": "body_parsing"}],
        )
    if error.status_code == 413:
        limit = getattr(request.app.state, "max_body_bytes", None)
        reads = f" ({limit:,} bytes, its --max-body-bytes)" if isinstance(limit, int) else ""
        detail = (
            f"the request body is larger than this daemon reads{reads}; send less, or start "
            "the daemon with a higher limit"
        )
    elif error.status_code == 404 and detail == "Not Found":
        detail = f"no route is {request.url.path}; the routes are listed at /openapi.json"
    headers = dict(error.headers or {})
    if error.status_code == 405:
        allowed = _allowed(request) or headers.get("Allow", "")
        headers["Allow"] = allowed
        detail = f"{request.method} is not allowed on {request.url.path}; allowed: {allowed}"
    return problem_response(request, error.status_code, "", title, detail, headers=headers or None)


def _allowed(request: Request) -> str:
    """Every method some route serves at the request's path, as ``Allow`` lists them:
    Starlette's 405 names only the methods of the first route whose path matched. Each
    method is tried against the app's routes as the router would match it."""
    routes = request.app.router.routes
    allowed = [
        method
        for method in _METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] is Match.FULL for route in routes
        )
    ]
    return ", ".join(allowed)


_METHODS: Final = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")


_HTTP_TITLES: Final[Mapping[int, str]] = {
    400: "Bad request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not found",
    405: "Method not allowed",
    413: "Request too large",
    415: "Unsupported media type",
}


async def _expression_syntax(request: Request, error: Exception) -> ProblemResponse:
    assert isinstance(error, ExpressionSyntaxError)
    return problem_response(
        request,
        400,
        "expression-syntax",
        "Expression syntax error",
        f"{error.reason} at position {error.position}; fix the expression and send it again",
        position=error.position,
        caret=error.caret,
        reason=error.reason,
    )


async def _not_found(request: Request, error: Exception) -> ProblemResponse:
    assert isinstance(error, NotFoundError)
    return problem_response(
        request, 404, "not-found", "Not found", str(error), kind=error.kind, id=error.id
    )


async def _ledger(request: Request, error: Exception) -> ProblemResponse:
    assert isinstance(error, LedgerError)
    if isinstance(error, LedgerIntegrityError):
        return _fails_checks(request, error)
    logger.error("ledger unavailable: %s", error)
    if isinstance(error, EvidenceStoppedError):  # a retry cannot help: it takes a restart
        detail, headers = f"{error}; nothing was acknowledged", {}
    else:
        detail = f"{error}; nothing was acknowledged, so retry once the ledger is back"
        headers = {"Retry-After": "1"}
    return problem_response(
        request, 503, "ledger-unavailable", "Ledger unavailable", detail, headers=headers
    )


def _fails_checks(request: Request, error: LedgerIntegrityError) -> ProblemResponse:
    """409: what is stored is not a ledger entry (or one is missing). Not the request's
    fault, and not transient: asking again reads the same bytes."""
    logger.error("the ledger fails its checks: %s", error)
    if error.seq is None and error.checkpoint is not None:
        subject = f"checkpoint {error.checkpoint}"
    else:
        subject = "an entry" if error.seq is None else f"entry {error.seq}"
    reason = "it is missing" if error.reason == "missing" else error.reason
    said = reason if reason.startswith(f"{subject} ") else f"{subject}: {reason}"
    return problem_response(
        request,
        409,
        "ledger-fails-checks",
        "Ledger fails its checks",
        f"{said}; the ledger was altered or damaged where it is stored, so asking again cannot "
        "help. Tell whoever runs this daemon: `assay ledger verify` on its ledger finds "
        "everything that is wrong",
        seq=error.seq,
        reason=error.reason,
    )


async def _bad_request(request: Request, error: Exception) -> ProblemResponse:
    if isinstance(error, StateError | ContractError):
        error = withhold(error, _redaction(request))
    members: dict[str, Any] = {}
    for name in ("field", "key", "conflict", "parameter"):
        value = getattr(error, name, None)
        if value is not None:
            members[name] = value
    code = _CODES.get(type(error), "bad-request")
    return problem_response(request, 400, code, "Bad request", str(error), **members)


async def _workflow_unavailable(request: Request, error: Exception) -> ProblemResponse:
    assert isinstance(error, WorkflowUnavailableError)
    return problem_response(
        request,
        409,
        "workflow-unavailable",
        "Workflow unavailable",
        str(error),
        workflow=error.workflow,
    )


async def _run_not_found(request: Request, error: Exception) -> ProblemResponse:
    assert isinstance(error, RunNotFoundError)
    detail = f"{error}; GET /v1/runs lists the runs in the ledger"
    return problem_response(request, 404, "not-found", "Not found", detail, run_id=error.run_id)


async def _run_conflict(request: Request, error: Exception) -> ProblemResponse:
    assert isinstance(error, RunError)
    return problem_response(
        request,
        409,
        "run-state",
        "Conflict",
        str(error),
        run_id=error.run_id,
        run_status=error.status,
    )


_CODES: Final[Mapping[type[Exception], str]] = {
    IdempotencyKeyReusedError: "idempotency-key-reused",
    ContractError: "contract",
    StateError: "state",
}


async def _unexpected(request: Request, error: Exception) -> ProblemResponse:
    # A bug: log the exception (never the request's headers, which hold tokens).
    logger.error(
        "internal error on %s %s",
        request.method,
        request.url.path,
        exc_info=(type(error), error, error.__traceback__),
    )
    return problem_response(
        request,
        500,
        "internal",
        "Internal error",
        "the daemon hit a bug answering this request; nothing about it is in the response, "
        "see the daemon's log",
    )
