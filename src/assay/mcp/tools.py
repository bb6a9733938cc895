"""``AssayTools``: the five MCP tools, each a thin call into one session of a ``Host``.

The tools' parameters reuse the wire models' fields (``ActionRequest``, ``VerifyRequest``),
so their input schemas carry the same descriptions and bounds as the HTTP port, and each
result's structured content is the wire model HTTP answers. Every tool is a coroutine, so it
runs on the event loop that owns the host (the SDK runs plain functions on worker threads).
A wait never outlives the MCP request: cancelling the request stops the wait, never the
fire, whose evidence and later settlement the session still records.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import BeforeValidator, Field, Strict

from assay.errors import (
    ContractError,
    ExpressionSyntaxError,
    NotFoundError,
    RequestError,
    WrongTypeError,
)
from assay.host import Host
from assay.host.excerpt import excerpt
from assay.host.idempotency import MAX_KEY_LENGTH, check_key
from assay.host.wire import (
    MAX_EXTRA_EXPRESSION,
    ActionList,
    ActionRequest,
    ActionResponse,
    TransitionAnswer,
    VerifyRequest,
)
from assay.host.withheld import withhold
from assay.mcp.results import answer, problem
from assay.state.substrate import SubstrateState
from assay.verify.outcome import VerificationOutcome

DEFAULT_WAIT_MS = 10_000
"""How long ``fire`` waits for settlement unless told: well under a client's request timeout."""

_FIRE = ActionRequest.model_fields
_VERIFY = VerifyRequest.model_fields
_EXTRA = _FIRE["verify_expression"]
# The bound goes on the string: on the whole ``str | None`` pydantic applies it to None too,
# and a null (or "null", which the SDK reads as JSON) then crashed the tool.
_EXTRA_TEXT = Annotated[str, Field(max_length=MAX_EXTRA_EXPRESSION)]

ARGUMENT_REFUSALS = frozenset({"unknown_action", "not_available_here", "bad_arguments"})
"""Refusals that are the caller's mistake, answered as tool errors saying what to fix.

The others (``low_confidence``, ``single_flight``) are facts about the world, answered as
ordinary results with their figures.
"""


def _sent_text(value: object) -> object:
    """An expression argument as the client sent it, where the SDK parsed it as JSON first.

    The SDK reads a string argument as JSON whenever its annotation is not plain ``str``,
    and keeps what it read unless that is a string or a number: so the expression ``[1, 2]``
    would arrive as a list, and fail validation as one. Written back as JSON it is the same
    array literal (its spacing aside). A JSON object is left as it is: a filter contract.
    """
    return json.dumps(value) if isinstance(value, list) else value


def _sent_expression(value: object) -> object:
    """``_sent_text``, and ``null`` as well: a required expression that arrives as None was
    the literal ``null`` (or a null the schema refuses anyway), echoed as such."""
    return "null" if value is None else _sent_text(value)


def _oversized(contract: dict[str, Any]) -> str | None:
    """Why a filter contract is too long to check, as an expression over
    ``MAX_EXTRA_EXPRESSION`` characters is; ``None`` when it is not. Its answer echoes the
    contract, and an answer over 64 KiB is more than MCP clients read."""
    try:
        length = len(json.dumps(contract, separators=(",", ":"), ensure_ascii=False))
    except (ValueError, TypeError, RecursionError):
        return None  # not JSON text: compiling the contract says why
    if length <= MAX_EXTRA_EXPRESSION:
        return None
    return (
        f"expression: the filter contract is {length:,} characters long as JSON; the limit is "
        f"{MAX_EXTRA_EXPRESSION:,}, as for an expression; check fewer keys, or a part of the value"
    )


def _check_key(key: str) -> None:
    """``check_key``, its refusal naming the tool's argument rather than the HTTP header."""
    try:
        check_key(key)
    except RequestError as error:
        raise RequestError(f"idempotency_key: {error}", field="idempotency_key") from None


class AssayTools:
    """The tools of one MCP server: they act in session ``session`` of ``host``."""

    def __init__(self, host: Host, session: str | None = None) -> None:
        if session is not None and (type(session) is not str or not session):
            raise WrongTypeError(
                f"session must be a session id (a non-empty string), or None for the default "
                f"session, not {session!r}",
                parameter="session",
            )
        self.host = host
        self.session = session

    async def list_actions(self) -> Annotated[CallToolResult, ActionList]:
        """List the actions available at the current page: what each does, the state keys
        it writes, the contract that says it worked (verify), its reversibility
        (irreversible ones cannot be undone) and its input schema. Fire one with `fire`."""
        return answer(self.host.actions(self.session))

    async def fire(
        self,
        action: Annotated[str, _FIRE["action"]],
        args: Annotated[dict[str, Any], _FIRE["args"]],
        wait_ms: Annotated[int, Strict(), _FIRE["wait_ms"]] = DEFAULT_WAIT_MS,
        verify_expression: Annotated[
            _EXTRA_TEXT | None,
            BeforeValidator(_sent_text),
            Field(description=_EXTRA.description),
        ] = None,
        idempotency_key: Annotated[
            str | None,
            Field(
                description="any unique string (a UUID) naming this fire: a retry with the same "
                "key and arguments, also after a restart, answers the first fire and never "
                "fires again; the same key with other arguments is refused",
                min_length=1,
                max_length=MAX_KEY_LENGTH,
            ),
        ] = None,
        *,
        ctx: Context,
    ) -> Annotated[CallToolResult, ActionResponse]:
        """Fire an action and wait up to wait_ms for its effect to be observed.

        The answer is settled (answer: worked, failed or unobservable, with the evidence;
        already_true lists conditions that held before it fired, which say nothing of its
        effect) or pending, with the transition_id and waiting_on: exactly what would
        settle it. Call did_it_work with the transition_id to ask again (the first
        progress notification of a wait names it too); if waiting_on names something
        that will not come, stop waiting. To retry safely, send an idempotency_key. A
        refusal because of the world (low confidence, another fire in flight) is an
        answer with its figures; a mistake in the arguments is an error that says what
        to fix."""
        try:
            request = ActionRequest(
                action=action,
                args=args,
                session=self.session,
                wait_ms=wait_ms,
                verify_expression=verify_expression,
            )
        except ValueError as error:
            return problem(f"fire: {error}")

        async def progress(elapsed_ms: float, ceiling_ms: float, waiting_on: str) -> None:
            await ctx.report_progress(elapsed_ms, ceiling_ms, f"waiting on {waiting_on}")

        try:
            if idempotency_key is not None:
                _check_key(idempotency_key)
            response = await self.host.fire(
                request, idempotency_key=idempotency_key, progress=progress
            )
        except ExpressionSyntaxError as error:
            return problem(f"verify_expression has a syntax error: {error}")
        except (NotFoundError, RequestError) as error:
            return problem(str(error))
        if response.refusal in ARGUMENT_REFUSALS:
            return problem(self._refusal_hint(response), response)
        return answer(response)

    async def did_it_work(
        self,
        transition_id: Annotated[
            str, Field(description="what fire answered, page.action#N", min_length=1)
        ],
        wait_ms: Annotated[int, Strict(), _FIRE["wait_ms"]] = 0,
        session: Annotated[
            str | None,
            Field(
                description="the session that fired it, if not this server's own: one closed, "
                "or of an earlier run of the daemon (read from the ledger)",
                min_length=1,
                max_length=200,
            ),
        ] = None,
        *,
        ctx: Context,
    ) -> Annotated[CallToolResult, TransitionAnswer]:
        """Did this fire work? Answers pending, worked, failed, unobservable, refused or
        unmaterialized, with the outcome and evidence; with wait_ms it first waits up to
        that long for settlement. A pending answer says what it is waiting_on and for how
        long (pending_for_ms), so you can tell "still working" from "nothing is coming".
        Any transition the ledger knows is answered, its session open or not."""

        async def progress(elapsed_ms: float, ceiling_ms: float, waiting_on: str) -> None:
            await ctx.report_progress(elapsed_ms, ceiling_ms, f"waiting on {waiting_on}")

        try:
            settled = await self.host.wait(
                session or self.session, transition_id, wait_ms, progress
            )
        except NotFoundError as error:
            return problem(str(error))
        return answer(settled)

    async def get_state(
        self,
        keys: Annotated[
            list[str] | None,
            Field(
                description="dotted state paths to return (e.g. inbox.unread); all if absent",
                max_length=100,
            ),
        ] = None,
    ) -> Annotated[CallToolResult, SubstrateState]:
        """The application's observed state (redacted), its version, and how far it can be
        trusted now (confidence and its parts: freshness, coverage, source health)."""
        try:
            return answer(self.host.state(keys))
        except RequestError as error:
            return problem(str(error))

    async def verify(
        self,
        expression: Annotated[
            str | dict[str, Any], BeforeValidator(_sent_expression), _VERIFY["expression"]
        ],
        timeout_ms: Annotated[int, Strict(), _VERIFY["timeout_ms"]] = 5000,
        settle_ms: Annotated[int, Strict(), _VERIFY["settle_ms"]] = 0,
        *,
        ctx: Context,
    ) -> Annotated[CallToolResult, VerificationOutcome]:
        """Check a contract against the live state, now and as it changes, until it holds or
        timeout_ms passes: a JavaScript-style expression (inbox.unread === 0) or a
        declarative filter ({"inbox.unread": {"eq": 0}}). The outcome says whether it
        passed, narrates the keys it read and lists what changed meanwhile."""
        if isinstance(expression, dict):
            oversized = _oversized(expression)
            if oversized is not None:
                return problem(oversized)
        request = VerifyRequest(
            expression=expression,
            session=self.session,
            timeout_ms=timeout_ms,
            settle_ms=settle_ms,
        )

        async def progress(elapsed_ms: float, ceiling_ms: float, waiting_on: str) -> None:
            await ctx.report_progress(elapsed_ms, ceiling_ms, f"waiting on {waiting_on}")

        try:
            return answer(await self.host.verify(request, progress=progress))
        except ExpressionSyntaxError as error:
            return problem(f"expression has a syntax error: {error}")
        except ContractError as error:
            refused = withhold(error, self.host.redaction)
            return problem(f"expression is not a valid filter contract: {refused}")

    def _refusal_hint(self, response: ActionResponse) -> str:
        message = excerpt(response.error or f"{response.did} was refused: {response.refusal}")
        if response.refusal == "bad_arguments":
            spec = self.host.graph.action(response.did)
            if spec is not None and spec.input_schema:
                schema = json.dumps(spec.input_schema, separators=(",", ":"))
                return f"{message}; the arguments must match this schema: {schema}"
        if response.refusal == "not_available_here":
            return f"{message}; navigate there first (list_actions shows what is available)"
        return f"{message} (list_actions shows each one's arguments)"
