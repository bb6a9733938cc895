"""Parameters in a request's URL are read exactly, as bodies are.

Unknown query parameters are errors, as unknown body fields are: ``?wait_sm=`` must not
silently mean "no wait". So is a single-valued parameter given twice: ``?wait_ms=100&wait_ms=200``
must not silently mean the last one. A number is written in the digits 0-9 alone (``whole``):
pydantic would also read ``1.0``, ``+1``, `` 1`` and ``1_000`` as numbers, so that
``/v1/ledger/entries/1.0`` answered entry 1. An id that filters is not empty (``named``): an
empty one would silently match nothing.
"""

from __future__ import annotations

import re
from types import UnionType
from typing import Any, Final, Union, get_args, get_origin

from fastapi import Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

_SEQUENCES: Final = (list, tuple, set, frozenset)
_DIGITS: Final = re.compile("[0-9]+")
_LONGEST: Final = 100
"""The most digits a number may have: a seq, a size or an offset fits in 19."""


def whole(name: str, minimum: int, maximum: int | None = None) -> BeforeValidator:
    """A validator for the whole-number parameter ``name``: written in the digits 0-9 alone,
    from ``minimum`` to ``maximum`` (no maximum: any larger number); a 400 that names the
    parameter, what it must be and what was sent. Declare the bounds with ``Query`` or
    ``Path`` too (``ge``, ``le``), for the OpenAPI document."""
    bounds = f"{minimum} or more" if maximum is None else f"from {minimum:,} to {maximum:,}"

    def check(value: object) -> object:
        if not isinstance(value, str):
            return value
        if _DIGITS.fullmatch(value) is None:
            space = " (a + in a query string stands for a space)" if " " in value else ""
            raise PydanticCustomError(
                "int_parsing",
                f"{name} must be a whole number written in the digits 0-9 alone (no sign, "
                f"space, point, exponent or separator), not {value!r}{space}",
            )
        if len(value) > _LONGEST:
            raise PydanticCustomError(
                "int_parsing_size",
                f"{name} must be {bounds} in at most {_LONGEST} digits, not a number of "
                f"{len(value):,} digits",
            )
        number = int(value)
        below = number < minimum
        above = maximum is not None and number > maximum
        if below or above:
            raise PydanticCustomError(
                "greater_than_equal" if below else "less_than_equal",
                f"{name} must be {bounds}, not {value}",
            )
        return value

    return BeforeValidator(check)


def named(name: str, instead: str) -> BeforeValidator:
    """A validator refusing an empty ``name``: it names nothing, where leaving the parameter
    out does what ``instead`` says."""
    message = f"an empty string names no {name}; {instead}"

    def check(value: object) -> object:
        if value == "":
            raise PydanticCustomError("string_too_short", message)
        return value

    return BeforeValidator(check)


async def known_query(request: Request) -> None:
    """A router dependency: 400 naming each query parameter the route does not take, or
    takes once and was given more often."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute):
        return
    known, repeatable = _names(route)
    reject_query(request, known, repeatable)


def reject_query(
    request: Request, known: frozenset[str], repeatable: frozenset[str] = frozenset()
) -> None:
    """400 (a ``RequestValidationError``) naming each query parameter not in ``known``, then
    each given more than once that is not in ``repeatable``."""
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
    given = [name for name, _ in request.query_params.multi_items()]
    if len(given) != len(request.query_params):
        repeated = [n for n in dict.fromkeys(given) if given.count(n) > 1 and n not in repeatable]
        if repeated:
            raise RequestValidationError(
                [
                    {
                        "loc": ("query", name),
                        "msg": f"given {given.count(name)} times; this parameter takes one value, "
                        "so give it once",
                        "type": "repeated_parameter",
                    }
                    for name in repeated
                ]
            )


_KNOWN: dict[str, tuple[frozenset[str], frozenset[str]]] = {}


def _names(route: APIRoute) -> tuple[frozenset[str], frozenset[str]]:
    """The query parameters ``route`` takes, and those of them that take several values."""
    known = _KNOWN.get(route.unique_id)
    if known is None:
        params = _walk(route.dependant)
        known = _KNOWN[route.unique_id] = (
            frozenset(name for name, _ in params),
            frozenset(name for name, many in params if many),
        )
    return known


def _walk(dependant: Dependant) -> list[tuple[str, bool]]:
    params = [(p.alias, _many(p.field_info.annotation)) for p in dependant.query_params]
    for inner in dependant.dependencies:
        params += _walk(inner)
    return params


def _many(annotation: Any) -> bool:
    """``annotation`` takes a sequence (``list[str] | None``): the parameter may repeat."""
    if get_origin(annotation) in (Union, UnionType):
        return any(_many(arg) for arg in get_args(annotation))
    return annotation in _SEQUENCES or get_origin(annotation) in _SEQUENCES
