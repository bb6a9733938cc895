"""``GET /v1/state`` and ``POST /v1/state/reports``; ``host_of``, the routes' host."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from assay.host import Host
from assay.host.wire import ReportReceipt, ReportRequest
from assay.server.auth import Principal, require
from assay.server.declared import STATE_PATH, errors
from assay.server.json_body import JSONRoute
from assay.server.query import known_query
from assay.server.tokens import Scope
from assay.state.substrate import SubstrateState

router = APIRouter(
    prefix="/v1", tags=["state"], dependencies=[Depends(known_query)], route_class=JSONRoute
)


async def host_of(request: Request) -> Host:
    """The host the app serves (``create_app`` puts it on ``app.state``); ``async`` so that
    FastAPI calls it on the loop rather than through its thread pool."""
    host: Host = request.app.state.host
    return host


HostDependency = Annotated[Host, Depends(host_of)]


@router.get(
    "/state",
    response_model=SubstrateState,
    responses=errors(),
    summary="The application's observed state, its version and confidence (and its parts)",
)
async def state(
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.READ))],
    keys: Annotated[
        list[str],
        Query(
            description="only these dotted paths (repeat the parameter for several)",
            json_schema_extra={"items": {"type": "string", "pattern": STATE_PATH}},
        ),
    ] = [],  # noqa: B006 - FastAPI copies defaults per request
) -> SubstrateState:
    """The state as of now, redacted; with ``keys``, only those paths."""
    return host.state(keys or None)


@router.post(
    "/state/reports",
    response_model=ReportReceipt,
    responses=errors(413),
    summary="The application reports that these keys now have these values",
)
async def report(
    body: ReportRequest,
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.REPORT))],
) -> ReportReceipt:
    """Merge (RFC 7396) or replace; waiting verifications are woken by the change."""
    return host.report(body)
