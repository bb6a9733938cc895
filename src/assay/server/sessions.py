"""Sessions: open, list, describe, close, and the actions available at a session's page."""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Body, Depends, Path, Query

from assay.host import Host
from assay.host.wire import ActionList, SessionInfo, SessionRequest
from assay.server.auth import Principal, require
from assay.server.declared import errors
from assay.server.json_body import JSONRoute
from assay.server.query import known_query, named, whole
from assay.server.state import host_of
from assay.server.tokens import Scope

router = APIRouter(
    prefix="/v1/sessions",
    tags=["sessions"],
    dependencies=[Depends(known_query)],
    route_class=JSONRoute,
)

HostDependency = Annotated[Host, Depends(host_of)]
MAX_SESSIONS: Final = 1000
"""The most sessions one page of ``GET /v1/sessions`` holds."""
SessionId = Annotated[str, Path(max_length=200, description="a session id")]


@router.post("", response_model=SessionInfo, responses=errors(413), summary="Open a session")
async def open_session(
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.ACT))],
    body: Annotated[SessionRequest | None, Body()] = None,
) -> SessionInfo:
    """A new session at ``node`` (the application's start page when absent)."""
    session = host.open_session(body.node if body is not None else None)
    return host.describe(session)


@router.get(
    "",
    response_model=list[SessionInfo],
    responses=errors(404),
    summary="List the open sessions, a page at a time",
)
async def list_sessions(
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.READ))],
    after: Annotated[
        str | None,
        named("session", "leave after out to start from the first session"),
        Query(
            min_length=1, max_length=200, description="only sessions opened after this one (its id)"
        ),
    ] = None,
    limit: Annotated[
        int,
        whole("limit", 1, MAX_SESSIONS),
        Query(ge=1, le=MAX_SESSIONS, description=f"at most this many (1 to {MAX_SESSIONS})"),
    ] = 100,
) -> list[SessionInfo]:
    """The open sessions in the order they were opened, the default one first. Page on
    with ``after`` = the last ``id`` received (it may have closed since); an empty page
    means there are no more."""
    return [host.describe(session) for session in host.list_sessions(after=after, limit=limit)]


@router.get(
    "/{session_id}", response_model=SessionInfo, responses=errors(404), summary="Describe a session"
)
async def describe_session(
    session_id: SessionId,
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.READ))],
) -> SessionInfo:
    """Where the session is and what it has fired."""
    return host.describe(host.session(session_id))


@router.delete(
    "/{session_id}", response_model=SessionInfo, responses=errors(404), summary="Close a session"
)
async def close_session(
    session_id: SessionId,
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.ACT))],
) -> SessionInfo:
    """Close it and answer what it was; its transitions stay in the ledger."""
    info = host.describe(host.session(session_id))
    await host.close_session(session_id)
    return info


@router.get(
    "/{session_id}/actions",
    response_model=ActionList,
    responses=errors(404),
    summary="The actions available at the session's page, with what each needs to fire",
)
async def actions(
    session_id: SessionId,
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.READ))],
) -> ActionList:
    """Each action's contract, tier and the confidence its tier needs."""
    return host.actions(session_id)
