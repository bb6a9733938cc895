"""The error responses each route declares in the OpenAPI document, as problem+json.

Declaring them lets clients (and Schemathesis) check every error against its schema. The
document is shaped once by ``shape_openapi``: error bodies are ``application/problem+json``,
FastAPI's own validation schema is replaced by ours (bad input is a 400 here, 422 means a
verification failed), and auth statuses and the bearer scheme appear only when tokens do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel

from assay.host.wire import Problem
from assay.server.problems import MEDIA_TYPE

_DESCRIPTIONS: Final[Mapping[int, str]] = {
    400: "Bad input: the request did not match its schema, or an expression, contract, "
    "state report or argument was malformed",
    401: "No bearer token, or one this daemon does not know",
    403: "The token lacks the scope this route needs",
    404: "No such session, transition, entry or action",
    409: "Refused: low confidence, single flight, or not available at the session's page",
    413: "The request body is larger than the daemon's --max-body-bytes",
    415: "The request body is not sent as JSON (Content-Type: application/json)",
    422: "Verification failed: the contract did not hold within its timeout",
    503: "The ledger is unavailable; nothing was acknowledged",
}
AUTH: Final = (401, 403)
FAILS_CHECKS: Final = (
    "The ledger fails its checks (ledger-fails-checks): a stored entry this answer reads "
    "cannot be read as one, or is missing (seq names it); asking again cannot help"
)


def errors(
    *statuses: int,
    models: Mapping[int, type[BaseModel]] | None = None,
    reads_entries: bool = False,
) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: 400, 401, 403 and 503 always, plus ``statuses``, and 415
    with 413: a route that takes a body refuses one not sent as JSON; with ``reads_entries``,
    409 for a ledger that fails its checks.

    A 400 or 404 may come from several causes (schema, expression, contract, unknown
    session, ...), so they are declared as the base ``Problem``: every problem is one.
    """
    models = models or {}
    declared: dict[int, dict[str, Any]] = {}
    body = (415,) if 413 in statuses else ()
    for status in {400, *AUTH, 503, *statuses, *body}:
        declared[status] = {
            "model": models.get(status, Problem),
            "description": _DESCRIPTIONS[status],
        }
    if reads_entries:
        refused = declared.get(409)
        said = f"{refused['description']}; or: {FAILS_CHECKS}" if refused else FAILS_CHECKS
        declared[409] = {"model": models.get(409, Problem), "description": said}
    return dict(sorted(declared.items()))


def shape_openapi(document: dict[str, Any], *, auth: bool) -> dict[str, Any]:
    """Error media types to problem+json; drop FastAPI's 422 schema; auth only with tokens."""
    for path in document.get("paths", {}).values():
        for operation in path.values():
            responses: dict[str, Any] = operation.get("responses", {})
            for status, response in list(responses.items()):
                content = response.get("content", {})
                schema = content.get("application/json", {}).get("schema", {})
                if schema.get("$ref", "").endswith("/HTTPValidationError"):
                    del responses[status]
                    continue
                if int(status) >= 400 and "application/json" in content:
                    content[MEDIA_TYPE] = content.pop("application/json")
                if not auth and int(status) in AUTH:
                    del responses[status]
            if not auth:
                operation.pop("security", None)
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    if not auth:
        document.get("components", {}).pop("securitySchemes", None)
    return document
