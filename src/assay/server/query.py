"""Unknown query parameters are errors, as unknown body fields are: ``?wait_sm=`` must not
silently mean "no wait"."""

from __future__ import annotations

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute


async def known_query(request: Request) -> None:
    """A router dependency: 400 naming each query parameter the route does not take."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    reject_query(request, _names(route))


def reject_query(request: Request, known: frozenset[str]) -> None:
    """400 (a ``RequestValidationError``) naming each query parameter not in ``known``."""
    unknown = [name for name in request.query_params if name not in known]
    if unknown:
        takes = ", ".join(sorted(known)) or "none"
        raise RequestValidationError(
            [
                {
                    "loc": ("query", name),
                    "msg": f"unknown query parameter; this route takes: {takes}",
                    "type": "extra_forbidden",
                }
                for name in dict.fromkeys(unknown)
            ]
        )


_KNOWN: dict[str, frozenset[str]] = {}


def _names(route: APIRoute) -> frozenset[str]:
    known = _KNOWN.get(route.unique_id)
    if known is None:
        known = _KNOWN[route.unique_id] = frozenset(_walk(route.dependant))
    return known


def _walk(dependant: Dependant) -> list[str]:
    names = [param.alias for param in dependant.query_params]
    for inner in dependant.dependencies:
        names += _walk(inner)
    return names
