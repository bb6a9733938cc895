"""The declarative filter form of a contract (SPEC §3), compiled to a ``Predicate``.

``{"view.domain": {"eq": "billing"}, "cart.quantity": {"gte": 1}}`` holds when every
condition holds. A plain value is shorthand for ``eq``; a dict value is an operator set and
all of its keys must be operators (compare with a literal object as ``{"eq": {...}}``).

Keys may hold ``{name}`` placeholders and operands may be ``{"arg": "name"}``; ``bind``
resolves them from a fire's arguments. A literal object whose only key is ``"arg"`` cannot
be written as an operand.

A missing key fails every operator but three, which hold: ``exists: false``, and ``ne`` and
``nin``, because a missing value equals nothing (as ``undefined !== x`` in JavaScript and
``$ne`` in MongoDB). Every evidence record on a missing key says which part was missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from assay.errors import ContractError
from assay.expr.filter_operators import (
    bind_operator,
    check_operand,
    check_operator_names,
    holds_if_missing,
    json_value,
)
from assay.expr.operators import member_key
from assay.expr.path import MISSING, format_path, json_type_name, parse_path, read_path
from assay.expr.predicate import Check, ConditionEvidence, require_state

if TYPE_CHECKING:
    from assay.redaction import Redaction

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``{name}`` placeholder in a key, filled from a fire's arguments; group 1 is the name."""


def placeholder_text(value: Any) -> str | None:
    """What a ``{name}`` placeholder is filled with: a string as it is, an integer as the key
    an expression reads with it (``orders[args.n]``, ``n`` being ``1e21``, reads
    ``orders["1e+21"]``); ``None`` for any other value, which a placeholder refuses."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return member_key(int(value))
    return None


@dataclass(frozen=True, slots=True)
class Arg:
    """An operand to be taken from the fire's arguments: written ``{"arg": "name"}``."""

    name: str


@dataclass(frozen=True, slots=True)
class _Spec:
    """One authored condition: a key's segments (placeholders still in), an operator, an
    operand (a JSON value or an ``Arg``)."""

    key: str
    segments: tuple[str, ...]
    op: str
    operand: Any


class _Condition:
    """A condition ready to run: path parsed, operand checked, operator bound."""

    __slots__ = (
        "holds_if_missing",
        "key",
        "op",
        "redacted",
        "redaction",
        "segments",
        "test",
        "threshold",
    )

    def __init__(self, spec: _Spec, redaction: Redaction) -> None:
        self.segments = spec.segments
        self.key = format_path(spec.segments)
        self.op = spec.op
        self.threshold = spec.operand
        self.redaction = redaction
        self.redacted = redaction.covers(spec.segments)
        self.test = bind_operator(spec.op, spec.operand, self.key, spec.key)
        self.holds_if_missing = holds_if_missing(spec.op, spec.operand)

    def evaluate(self, state: Mapping[str, Any]) -> ConditionEvidence:
        read = read_path(state, self.segments)
        if read.value is MISSING:
            return ConditionEvidence(
                self.key,
                self.op,
                self.threshold,
                None,
                self.holds_if_missing,
                self.redacted,
                read.explain(),
            )
        result, reason = self.test(read.value)
        summary = None if self.redacted else self.redaction.summarize(self.segments, read.value)
        return ConditionEvidence(
            self.key, self.op, self.threshold, summary, result, self.redacted, reason
        )


class Contract:
    """A compiled declarative contract; a ``Predicate`` once its placeholders are bound."""

    __slots__ = ("_conditions", "_keys", "_placeholders", "_redaction", "_source", "_specs")

    def __init__(
        self,
        specs: tuple[_Spec, ...],
        source: str,
        redaction: Redaction,
        placeholders: frozenset[str],
    ) -> None:
        self._specs = specs
        self._source = source
        self._redaction = redaction
        self._keys = tuple(sorted({format_path(spec.segments) for spec in specs}))
        self._placeholders = placeholders
        self._conditions: tuple[_Condition, ...] | None = (
            None if placeholders else tuple(_Condition(spec, redaction) for spec in specs)
        )

    @property
    def source(self) -> str:
        """The contract as authored, as canonical JSON text (keys sorted, no spaces); ``bind``
        keeps it."""
        return self._source

    @property
    def keys(self) -> tuple[str, ...]:
        """The dotted paths it reads, sorted and unique (placeholders as written)."""
        return self._keys

    @property
    def placeholders(self) -> frozenset[str]:
        """The argument names ``bind`` must be given; empty once bound."""
        return self._placeholders

    def __repr__(self) -> str:
        return f"Contract({self._source})"

    def bind(self, args: Mapping[str, Any]) -> Contract:
        """Resolve ``{name}`` key segments and ``{"arg": name}`` operands from ``args``.

        Raises ``ContractError`` naming the key and the argument when one is missing or
        unfit; arguments the contract does not use are ignored.
        """
        if not self._placeholders:
            return self
        specs = tuple(_bind_spec(spec, args) for spec in self._specs)
        return Contract(specs, self._source, self._redaction, frozenset())

    def check(self, state: Mapping[str, Any]) -> Check:
        """Evaluate every condition once against ``state``; holds when all of them hold.

        Never raises for a JSON object; raises ``ContractError`` if placeholders are unbound
        and ``WrongTypeError`` if ``state`` is not a mapping.
        """
        require_state(state)
        if self._conditions is None:
            names = ", ".join(sorted(self._placeholders))
            raise ContractError(
                f"contract {self._source} has unbound placeholders ({names}); "
                "call bind(args) before check"
            )
        evidence = tuple(condition.evaluate(state) for condition in self._conditions)
        result = all(item.result for item in evidence)
        return Check(result=result, value=result, conditions=evidence)


def compile_contract(mapping: Mapping[str, Any], *, redaction: Redaction | None = None) -> Contract:
    """Compile the declarative filter form; raise ``ContractError`` naming the key at fault."""
    if not isinstance(mapping, Mapping):
        raise ContractError(
            f"a contract must be a mapping of keys to conditions, got {json_type_name(mapping)}"
        )
    if not mapping:
        raise ContractError(
            'a contract needs at least one condition, e.g. {"view.domain": {"eq": "billing"}}'
        )
    specs: list[_Spec] = []
    names: set[str] = set()
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise ContractError(f"contract key {key!r} must be a string path", key=str(key))
        segments = parse_path(key)
        names.update(name for segment in segments for name in PLACEHOLDER.findall(segment))
        if isinstance(value, Mapping) and not _is_arg(value):
            check_operator_names(key, value)
            operators = list(value.items())
        else:
            operators = [("eq", value)]
        for op, raw in operators:
            operand = _operand(raw, key, op)
            if isinstance(operand, Arg):
                names.add(operand.name)  # its operand is checked once bound
            else:
                check_operand(op, operand, key)
            specs.append(_Spec(key, segments, op, operand))
    source = json.dumps(
        {key: json_value(value, key, "") for key, value in mapping.items()},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    if redaction is None:
        from assay.redaction import Redaction  # which reads paths with this package

        redaction = Redaction.none()
    return Contract(tuple(specs), source, redaction, frozenset(names))


def _is_arg(value: Mapping[Any, Any]) -> bool:
    return len(value) == 1 and "arg" in value


def _operand(raw: Any, key: str, op: str) -> Any:
    """An authored operand as an ``Arg`` or a JSON value (tuples become lists)."""
    if isinstance(raw, Mapping) and _is_arg(raw):
        name = raw["arg"]
        if not (isinstance(name, str) and _NAME.fullmatch(name)):
            raise ContractError(
                f'contract key {key!r} ({op}): {{"arg": ...}} needs an argument name such as '
                f'"order_id", got {name!r}',
                key=key,
            )
        return Arg(name)
    return json_value(raw, key, op)


def _bind_spec(spec: _Spec, args: Mapping[str, Any]) -> _Spec:
    def argument(name: str, what: str) -> Any:
        if name not in args:
            given = ", ".join(sorted(map(str, args))) or "none"
            raise ContractError(
                f"contract key {spec.key!r} needs argument {name!r} for {what}, "
                f"which was not given (given: {given})",
                key=spec.key,
            )
        return args[name]

    def segment_value(match: re.Match[str]) -> str:
        name = match.group(1)
        value = argument(name, "its path")
        text = placeholder_text(value)
        if text is not None:
            return text
        raise ContractError(
            f"contract key {spec.key!r}: argument {name!r} stands in the path, so it must be "
            f"a string or an integer, got {json_type_name(value)}",
            key=spec.key,
        )

    segments = tuple(PLACEHOLDER.sub(segment_value, segment) for segment in spec.segments)
    operand = spec.operand
    if isinstance(operand, Arg):
        name = operand.name
        try:
            operand = json_value(argument(name, f"its {spec.op} operand"), spec.key, spec.op)
            check_operand(spec.op, operand, spec.key)
        except ContractError as error:
            if name not in args:
                raise
            raise ContractError(f"{error} (from argument {name!r})", key=spec.key) from None
    return _Spec(spec.key, segments, spec.op, operand)
