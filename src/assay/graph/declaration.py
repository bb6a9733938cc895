"""Action declarations: what an action does, writes and must make true, validated at build time.

Every declaration error names the page, the action and the field, says what was expected and
what was seen, so a graph that builds is a graph whose contracts can be checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from assay.errors import ContractError, ExpressionSyntaxError, GraphError
from assay.expr import Expression, compile_expression
from assay.expr.contract import Contract, compile_contract
from assay.expr.specs import PLACEHOLDER
from assay.json.path import parse_path
from assay.state.canonical import HALF_SURROGATE_PAIR, holds_half_surrogate_pair

_NAME: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*\Z")
_ACTION_FIELDS: Final = frozenset(
    {
        "does",
        "writes",
        "verify",
        "verify_expression",
        "to",
        "reversibility",
        "input",
        "single_flight",
        "settle_ms",
        "verify_timeout_ms",
    }
)


class Reversibility(StrEnum):
    """How far an action can be undone, which sets the confidence it needs to fire."""

    REVERSIBLE = "reversible"
    COMPENSABLE = "compensable"
    IRREVERSIBLE = "irreversible"


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """One action of one page, as declared and validated."""

    page: str
    name: str
    does: str
    writes: tuple[str, ...] = ()
    contract: Contract | None = None
    verify_mapping: Mapping[str, Any] | None = None
    expression: Expression | None = None
    to: str | None = None
    reversibility: Reversibility = Reversibility.REVERSIBLE
    input_schema: Mapping[str, Any] | None = None
    single_flight: bool = False
    settle_ms: int = 0
    verify_timeout_ms: int = 5000
    placeholders: frozenset[str] = field(default=frozenset())

    @property
    def id(self) -> str:
        """``page.action``, the prefix of its transition ids."""
        return f"{self.page}.{self.name}"

    @property
    def verify_source(self) -> str | None:
        """The contract as authored: the declarative form's canonical JSON or the expression."""
        if self.contract is not None:
            return self.contract.source
        if self.expression is not None:
            return self.expression.source
        return None


def check_name(kind: str, name: Any, where: str) -> str:
    """A page or action name usable inside transition ids (``page.action#N``)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise GraphError(
            f"{where}: the {kind} name {name!r} cannot form a transition id; use letters, "
            "digits, '_' and '-' (no '.', '#' or spaces)",
            page=where,
        )
    return name


def parse_action(page: str, name: str, raw: Any) -> ActionSpec:
    """Validate one action declaration; ``GraphError`` names page, action and field."""
    where = f"{page}.{name}"

    def fail(field_name: str, message: str) -> GraphError:
        return GraphError(
            f"{where}: {field_name}: {message}", page=page, action=name, field=field_name
        )

    if not isinstance(raw, Mapping):
        raise fail("(declaration)", f"expected a mapping of fields, got {type(raw).__name__}")
    unknown = sorted(set(raw) - _ACTION_FIELDS)
    if unknown:
        raise fail(
            unknown[0],
            f"unknown field; the fields of an action are {', '.join(sorted(_ACTION_FIELDS))}",
        )
    for field_name, value in raw.items():
        if holds_half_surrogate_pair(value):  # no fire of it could be recorded
            raise fail(field_name, HALF_SURROGATE_PAIR)
    does = raw.get("does")
    if not isinstance(does, str) or not does.strip():
        raise fail("does", "expected a sentence saying what the action does")
    writes = _writes(raw.get("writes", ()), fail)
    contract, expression = _contract(raw, fail)
    reversibility = _reversibility(raw.get("reversibility", "reversible"), fail)
    if reversibility is Reversibility.IRREVERSIBLE and contract is None and expression is None:
        raise fail(
            "verify",
            "an irreversible action must declare a verify contract: nothing else can tell "
            "whether it happened",
        )
    _check_keys_within_writes(contract, expression, writes, fail)
    to = raw.get("to")
    if to is not None and not isinstance(to, str):
        raise fail("to", f"expected a page name, got {to!r}")
    placeholders = frozenset(match for key in writes for match in PLACEHOLDER.findall(key)) | (
        contract.placeholders if contract is not None else frozenset()
    )
    return ActionSpec(
        page=page,
        name=name,
        does=does,
        writes=writes,
        contract=contract,
        verify_mapping=raw.get("verify") if isinstance(raw.get("verify"), Mapping) else None,
        expression=expression,
        to=to,
        reversibility=reversibility,
        input_schema=_input_schema(raw.get("input"), fail),
        single_flight=_flag(raw.get("single_flight", False), "single_flight", fail),
        settle_ms=_milliseconds(raw.get("settle_ms", 0), "settle_ms", fail),
        verify_timeout_ms=_milliseconds(
            raw.get("verify_timeout_ms", 5000), "verify_timeout_ms", fail
        ),
        placeholders=placeholders,
    )


def _writes(raw: Any, fail: Any) -> tuple[str, ...]:
    if isinstance(raw, str) or not isinstance(raw, Sequence):
        raise fail("writes", f"expected a list of dotted keys, got {raw!r}")
    writes = []
    for key in raw:
        if not isinstance(key, str):
            raise fail("writes", f"expected dotted keys, got {key!r}")
        try:
            parse_path(key)
        except ContractError as error:
            raise fail("writes", str(error)) from None
        writes.append(key)
    return tuple(writes)


def _contract(raw: Mapping[str, Any], fail: Any) -> tuple[Contract | None, Expression | None]:
    verify = raw.get("verify")
    source = raw.get("verify_expression")
    if verify is not None and source is not None:
        raise fail("verify", "declare either verify or verify_expression, not both")
    if isinstance(verify, str):
        verify, source = None, verify
    contract = expression = None
    if verify is not None:
        if not isinstance(verify, Mapping):
            raise fail("verify", f"expected a filter mapping or an expression, got {verify!r}")
        try:
            contract = compile_contract(verify)
        except ContractError as error:
            raise fail("verify", str(error)) from None
    if source is not None:
        if not isinstance(source, str):
            raise fail("verify_expression", f"expected an expression string, got {source!r}")
        try:
            expression = compile_expression(source)
        except ExpressionSyntaxError as error:
            raise fail("verify_expression", str(error)) from None
    return contract, expression


def _check_keys_within_writes(
    contract: Contract | None, expression: Expression | None, writes: tuple[str, ...], fail: Any
) -> None:
    """Every state key a contract reads must lie on a declared write (above or below it)."""
    if not writes:
        return
    write_paths = [_generic(parse_path(key)) for key in writes]
    keys = list(contract.keys) if contract is not None else []
    if expression is not None:
        keys.extend(key for key in expression.keys if key != "args" and not key.startswith("args."))
    for key in keys:
        path = _generic(parse_path(key))
        if not any(_related_generic(path, write) for write in write_paths):
            raise fail(
                "verify",
                f"the contract reads {key!r}, which is outside the declared writes "
                f"({', '.join(writes)}); declare it in writes or check only what the action "
                "writes",
            )


def _generic(path: Sequence[str]) -> tuple[str | None, ...]:
    """A path with placeholder segments as wildcards (``None``)."""
    return tuple(None if PLACEHOLDER.fullmatch(segment) else segment for segment in path)


def _related_generic(a: Sequence[str | None], b: Sequence[str | None]) -> bool:
    shorter = min(len(a), len(b))
    return all(
        x is None or y is None or x == y for x, y in zip(a[:shorter], b[:shorter], strict=False)
    )


def _reversibility(raw: Any, fail: Any) -> Reversibility:
    try:
        return Reversibility(raw)
    except ValueError:
        options = ", ".join(tier.value for tier in Reversibility)
        raise fail("reversibility", f"expected one of {options}, got {raw!r}") from None


def _mapping_or_none(raw: Any, name: str, fail: Any) -> Mapping[str, Any] | None:
    if raw is None or isinstance(raw, Mapping):
        return raw
    raise fail(name, f"expected a JSON schema mapping, got {raw!r}")


def _flag(raw: Any, name: str, fail: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    raise fail(name, f"expected true or false, got {raw!r}")


MAX_MILLISECONDS: Final = 86_400_000
"""The longest settle delay or verification an action may declare, or a fire ask for: a day.
A contract waited on for longer holds a verification open for something it should not."""


def _milliseconds(raw: Any, name: str, fail: Any) -> int:
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw <= MAX_MILLISECONDS:
        return raw
    raise fail(
        name,
        f"expected a whole number of milliseconds from 0 to {MAX_MILLISECONDS:,} (a day), "
        f"got {raw!r}",
    )


def _input_schema(raw: Any, fail: Any) -> Mapping[str, Any] | None:
    """A JSON Schema (2020-12) for the action's arguments, checked to be one at build time."""
    schema = _mapping_or_none(raw, "input", fail)
    if schema is None:
        return None
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as error:
        raise fail("input", f"not a valid JSON Schema: {error.message}") from None
    return schema


def check_arguments(spec: ActionSpec, args: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the first argument that breaks the action's input schema."""
    if spec.input_schema is None:
        return
    validator = _validator(spec.id, _freeze(spec.input_schema))
    error = best_match(validator.iter_errors(dict(args)))
    if error is not None:
        where = "args" + "".join(f"[{part!r}]" for part in error.absolute_path)
        raise ValueError(f"{spec.id}: {where}: {error.message}")


@lru_cache(maxsize=512)
def _validator(action: str, frozen: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(frozen))


def _freeze(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True)
