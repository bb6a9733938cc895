"""The error responses each route declares in the OpenAPI document, as problem+json.

Declaring them lets clients (and Schemathesis) check every error against its schema. The
document is shaped once by ``shape_openapi``: error bodies are ``application/problem+json``,
FastAPI's own validation schema is replaced by ours (bad input is a 400 here, 422 means a
verification failed), and auth statuses and the bearer scheme appear only when tokens do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
_BRACKETED: Final = r"""(?:\[(?:0|[1-9][0-9]*)\]|\["[^"\\]*"\]|\['[^'\\]*'\])"""
STATE_PATH: Final = rf"^(?:[^.\[\]]+|{_BRACKETED})(?:\.[^.\[\]]+|{_BRACKETED})*$"
"""A state path, as a pattern: dotted segments (any characters but ``.``, ``[`` and ``]``),
array indices (``[0]``) and quoted keys without escapes (``["a.b"]``). The parser takes more
(escapes in quoted keys); every path this pattern matches, it takes."""
REPORT_KEY: Final = rf"^(?:[^.\[\]]*|{STATE_PATH[1:-1]})$"
"""A state report's key: a state path, or any key without ``.``, ``[`` and ``]`` (the empty
one included), which names itself."""
RFC3339: Final = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
    r"([Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
"""An RFC 3339 date-time with its zone, as the ledger's ``since`` and ``until`` take it."""
_BOUNDS: Final[Mapping[str, str]] = {
    "ge": "minimum",
    "le": "maximum",
    "gt": "exclusiveMinimum",
    "lt": "exclusiveMaximum",
}
"""pydantic's names for the bounds FastAPI writes into a parameter's schema when the
parameter also has a validator of its own, and JSON Schema's."""
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
    """Error media types to problem+json; drop FastAPI's 422 schema; auth only with tokens;
    parameters' bounds in JSON Schema's words (``minimum``, not ``ge``), so that a client
    generated from the document sends what the server takes."""
    for path in document.get("paths", {}).values():
        for operation in path.values():
            for parameter in operation.get("parameters", []):
                parameter["schema"] = _parameter_schema(parameter.get("schema", {}))
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


def _parameter_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's schema with pydantic's bound names made JSON Schema's; an optional
    parameter (``T`` or null) is ``T``, as a URL has no null: it is left out instead."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        given = [option for option in options if option.get("type") != "null"]
        if len(given) == 1 and len(given) < len(options):
            rest = {key: value for key, value in schema.items() if key != "anyOf"}
            schema = {**given[0], **rest}
    return {_BOUNDS.get(key, key): value for key, value in schema.items()}


def declare_application(document: dict[str, Any], *, pages: Sequence[str]) -> dict[str, Any]:
    """What the bodies' schemas take that only the hosted application, or the state's path
    syntax, says: ``node`` is one of ``pages``; a report's keys and a filter contract's are
    state paths; an expression is not empty, and a contract has a condition."""
    schemas = document.get("components", {}).get("schemas", {})
    node = schemas.get("SessionRequest", {}).get("properties", {}).get("node", {})
    for option in node.get("anyOf", ()):
        if option.get("type") == "string":
            option["enum"] = list(pages)
    values = schemas.get("ReportRequest", {}).get("properties", {}).get("values")
    if values is not None:
        values["propertyNames"] = {"pattern": REPORT_KEY}
    expression = schemas.get("VerifyRequest", {}).get("properties", {}).get("expression", {})
    for option in expression.get("anyOf", ()):
        if option.get("type") == "string":
            option["minLength"] = 1
        elif option.get("type") == "object":
            option.update(minProperties=1, propertyNames={"pattern": STATE_PATH})
    return document
