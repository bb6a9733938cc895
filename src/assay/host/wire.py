"""The wire types of the ports, declared once: HTTP bodies, MCP tool schemas, ledger reads.

Each is a pydantic model with its fields described, so the OpenAPI document, the MCP
output schemas and the docs are generated from the same definitions. Inputs forbid unknown
fields, so a misspelt field is an error that names it rather than a silent default, and are
strict, so a value of the wrong JSON type is an error rather than a silent conversion.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from assay.expr.predicate import ConditionEvidence
from assay.graph.result import (
    FAILURE_DESCRIPTION,
    Answer,
    CurrentCheck,
    EffectStatus,
    FailureKind,
    RefusalFigures,
)
from assay.verify.outcome import VerificationOutcome

MAX_WAIT_MS = 55_000
"""The longest wait a port accepts: under the 60 s request timeout common in clients."""
MAX_EXTRA_EXPRESSION = 10_000
"""The longest ``verify_expression`` a fire may carry, in characters."""


def _not_empty(what: str, instead: str) -> Callable[[object], object]:
    """A before-validator refusing ``""`` for a field whose absence means a default: the empty
    string would otherwise either name nothing or silently mean that default."""
    message = f"an empty string names no {what}; {instead}"

    def check(value: object) -> object:
        if value == "":
            raise PydanticCustomError("string_too_short", message)
        return value

    return check


EMPTY_SESSION: Final = BeforeValidator(
    _not_empty("session", "leave session out for the default session")
)
"""Refuses ``session: ""``: leaving session out names the default session, "" names none."""

_Name = Annotated[str, Field(min_length=1, max_length=200)]

SessionName = Annotated[
    _Name | None, EMPTY_SESSION, Field(description="the session id; the default one if absent")
]


class _Input(BaseModel):
    # strict: 0.0 is not false and "30000" is not a number of milliseconds.
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class ActionRequest(_Input):
    """``POST /v1/actions``: fire one action in one session."""

    action: str = Field(description="page.action, e.g. inbox.send", min_length=1, max_length=200)
    args: dict[str, Any] = Field(default_factory=dict, description="the action's arguments")
    session: SessionName = None
    source: str = Field(default="agent", max_length=200, description="who fired it")
    verify_expression: str | None = Field(
        default=None,
        max_length=MAX_EXTRA_EXPRESSION,
        description="an extra contract checked in addition to the declared one",
    )
    verify_timeout_ms: int | None = Field(default=None, ge=0, le=600_000)
    wait_ms: int = Field(
        default=0,
        ge=0,
        le=MAX_WAIT_MS,
        description="wait up to this long for settlement; a settled answer is folded in",
    )

    def idempotency_identity(self) -> ActionRequest:
        """What a retry under the same Idempotency-Key must repeat: all of it but ``wait_ms``,
        which says how long the caller waits for the answer, not what is fired."""
        return self.model_copy(update={"wait_ms": 0}) if self.wait_ms else self


class ActionResponse(BaseModel):
    """What a fire answered: the fire result, with ``executed``/``success`` for callers that
    want two booleans, and the verification outcome when a contract was checked."""

    model_config = ConfigDict(frozen=True)

    executed: bool = Field(description="the action's handler was called (not refused, wired)")
    success: bool | None = Field(
        description="settled and worked; false if it did not; null while pending"
    )
    session: str
    ok: bool = Field(description="the fire was accepted (not refused)")
    did: str
    effect_status: EffectStatus
    transition_id: str | None
    answer: str | None = Field(
        default=None, description="did_it_work's answer: pending, worked, failed, ..."
    )
    waiting_on: str | None = Field(default=None, description="pending only: what would settle it")
    already_true: list[ConditionEvidence] | None = None
    why: str | None = None
    outcome_now: CurrentCheck | None = None
    error: str | None = None
    refusal: str | None = None
    refusal_figures: RefusalFigures | None = None
    materialized: bool = True
    failure: FailureKind | None = Field(default=None, description=FAILURE_DESCRIPTION)
    verification: VerificationOutcome | None = Field(
        default=None, description="the verify contract's outcome, once checked"
    )


def success_of(answer: str | None) -> bool | None:
    """``ActionResponse.success`` for did_it_work's ``answer``: true once it worked, null while
    pending or when no effect could be observed, false otherwise."""
    return True if answer == "worked" else None if answer in ("pending", "unobservable") else False


class VerifyRequest(_Input):
    """``POST /v1/verify``: check a contract against a session's state, now and as it changes."""

    expression: str | dict[str, Any] = Field(
        description="a verify_expression, or a declarative filter contract"
    )
    session: SessionName = None
    timeout_ms: int = Field(default=5000, ge=0, le=MAX_WAIT_MS)
    settle_ms: int = Field(default=0, ge=0, le=MAX_WAIT_MS)


class ReportRequest(_Input):
    """``POST /v1/state/reports``: the application says these keys now have these values."""

    values: dict[str, Any] = Field(description="dotted or nested keys; null deletes (RFC 7396)")
    source: str = Field(default="app", min_length=1, max_length=200)
    replace: bool = Field(default=False, description="replace the whole state instead of merging")


class ReportReceipt(BaseModel):
    """What a state report did."""

    model_config = ConfigDict(frozen=True)

    changed: bool = Field(description="false when it changed nothing (it still counts as heard)")
    version: int = Field(description="the state version after the report")


class SessionRequest(_Input):
    """``POST /v1/sessions``: open a session."""

    node: Annotated[
        _Name | None,
        BeforeValidator(_not_empty("page", "leave node out to open the session at the start page")),
        Field(description="the start page if absent"),
    ] = None


class SessionInfo(BaseModel):
    """A session: where it is and what it has fired."""

    model_config = ConfigDict(frozen=True)

    id: str
    app: str
    node: str
    transitions: int
    pending: int


class ActionInfo(BaseModel):
    """One action available at a page, as an agent needs to know it before firing."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="page.action, what to pass to fire")
    does: str
    writes: list[str]
    verify: str | None = Field(description="the contract as authored (JSON or expression)")
    reversibility: Literal["reversible", "compensable", "irreversible"]
    threshold: float = Field(description="the confidence this action's tier needs to fire")
    to: str | None = Field(description="the page a successful fire leads to")
    single_flight: bool
    input_schema: dict[str, Any] | None = None


class ActionList(BaseModel):
    """The actions at a session's current page, and how far the state can be trusted."""

    model_config = ConfigDict(frozen=True)

    session: str
    node: str
    confidence: float
    actions: list[ActionInfo]


class TransitionAnswer(Answer):
    """``GET /v1/transitions/{id}``: did_it_work, with the session it belongs to."""

    session: str


class EntryView(BaseModel):
    """One ledger entry as stored."""

    model_config = ConfigDict(frozen=True)

    seq: int
    timestamp: datetime | str
    kind: str
    session: str | None
    run: str | None
    transition: str | None
    body: Any
    prev_hash: str
    hash: str


class Problem(BaseModel):
    """RFC 9457 problem details: every error the HTTP port answers has this shape."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(default="about:blank")
    title: str
    status: int
    detail: str
    instance: str | None = None
