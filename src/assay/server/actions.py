"""``POST /v1/actions``, ``POST /v1/verify`` and ``GET /v1/transitions/{id}``.

A fire answers 200 when it was accepted and did not fail (settled, or still pending when
the wait ran out), 422 when its verification failed, 409 when it was refused for low
confidence, single flight or the session's page, 400 for bad arguments and 404 for an
unknown action; every non-200 is problem+json carrying the whole ``ActionResponse``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from assay.errors import RequestError
from assay.host import Host
from assay.host.idempotency import MAX_KEY_LENGTH, check_key
from assay.host.wire import (
    EMPTY_SESSION,
    MAX_WAIT_MS,
    ActionRequest,
    ActionResponse,
    TransitionAnswer,
)
from assay.server.auth import Principal, require
from assay.server.declared import errors
from assay.server.hot import Answered
from assay.server.json_body import JSONRoute
from assay.server.problems import ActionProblem, VerifyProblem, action_problem
from assay.server.query import known_query, whole
from assay.server.state import host_of
from assay.server.tokens import Scope
from assay.verify.outcome import VerificationOutcome

router = APIRouter(
    prefix="/v1", tags=["actions"], dependencies=[Depends(known_query)], route_class=JSONRoute
)
lean = APIRouter(prefix="/v1", tags=["actions"], route_class=JSONRoute)

HostDependency = Annotated[Host, Depends(host_of)]


@router.post(
    "/actions",
    response_model=ActionResponse,
    responses=errors(404, 409, 413, 422, models={409: ActionProblem, 422: ActionProblem}),
    summary="Fire an action, wait up to wait_ms for it to settle, answer with evidence",
)
async def fire(
    body: ActionRequest,
    request: Request,
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.ACT))],
    idempotency_key: Annotated[
        str | None,
        BeforeValidator(_key),
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=MAX_KEY_LENGTH,
            pattern="^[ -~]+$",
            # HTTP drops spaces at either end of a header's value: one of spaces alone
            # arrives empty, and is refused.
            json_schema_extra={"pattern": "^[ -~]*[!-~][ -~]*$"},
            description="a retry with the same key returns the first answer and never fires "
            "again, also while the first is still running; 1 to 255 visible ASCII characters",
        ),
    ] = None,
) -> Response:
    """Fire ``body.action`` in ``body.session``; the answer is durable in the ledger first."""
    answer = await host.fire(body, idempotency_key=idempotency_key, scope=who.name)
    return action_problem(request, answer) or _json(answer)


def _key(value: object) -> object:
    """An Idempotency-Key's own message where the header's schema would say less."""
    if isinstance(value, str):
        try:
            check_key(value)
        except RequestError as error:
            raise PydanticCustomError("idempotency_key", str(error)) from None
    return value


@lean.post(
    "/verify",
    response_model=VerificationOutcome,
    responses=errors(404, 413, 422, models={422: VerifyProblem}),
    summary="Check a contract against the state until it holds or the timeout passes",
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {"schema": {"$ref": "#/components/schemas/VerifyRequest"}}
            },
        }
    },
)
async def verify() -> Response:
    """200 with the outcome when it held, 422 with the outcome when it did not."""
    # ``Daemon`` answers this route ahead of the router by the same function; it is
    # declared here for the OpenAPI document.
    return Answered()


@router.get(
    "/transitions/{transition_id}",
    response_model=TransitionAnswer,
    responses=errors(404),
    summary="did_it_work: pending (and on what), worked, failed, unobservable, refused",
)
async def transition(
    transition_id: str,
    host: HostDependency,
    who: Annotated[Principal, Depends(require(Scope.READ))],
    session: Annotated[
        str | None,
        EMPTY_SESSION,
        Query(min_length=1, max_length=200, description="the session; the default if absent"),
    ] = None,
    wait_ms: Annotated[
        int,
        whole("wait_ms", 0, MAX_WAIT_MS),
        Query(ge=0, le=MAX_WAIT_MS, description="wait up to this long for settlement"),
    ] = 0,
) -> Response:
    """The transition's answer (``#`` in its id is sent as ``%23``)."""
    if wait_ms:
        answer = await host.wait(session, transition_id, wait_ms)
    else:
        answer = await host.adid_it_work(session, transition_id)
    return _json(answer)


def _json(model: ActionResponse | VerificationOutcome | TransitionAnswer) -> Response:
    return Response(model.model_dump_json(), media_type="application/json")
