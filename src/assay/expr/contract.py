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
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import re2

from assay.errors import ContractError
from assay.expr.path import MISSING, format_path, json_type_name, parse_path, read_path
from assay.expr.predicate import Check, ConditionEvidence
from assay.expr.strings import utf16_less
from assay.redaction import Redaction

OPERATORS: Final = (
    "eq",
    "ne",
    "gt",
    "gte",
    "lt",
    "lte",
    "in",
    "nin",
    "exists",
    "contains",
    "matches",
)
"""The operator names of the declarative form, in the order the documentation lists them."""

PATTERN_LIMIT: Final = 1000
"""The longest ``matches`` pattern accepted, in characters."""

_ORDERING: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}
_STRING_ORDERING: Final[dict[str, Callable[[str, str], bool]]] = {
    "gt": lambda a, b: utf16_less(b, a),
    "gte": lambda a, b: not utf16_less(a, b),
    "lt": utf16_less,
    "lte": lambda a, b: not utf16_less(b, a),
}
_HOLDS_IF_MISSING: Final = frozenset({"ne", "nin"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_VALID = ", ".join(OPERATORS)

_Test = Callable[[Any], tuple[bool, str | None]]
"""An operator bound to its operand: the verdict on a present value, and why if it could
not compare."""


def json_equal(a: Any, b: Any) -> bool:
    """JSON deep equality: ``true`` is not ``1``, ``1`` is ``1.0``, objects compare by key
    set and values in any order, arrays by order. Never raises; no recursion."""
    pending = [(a, b)]
    while pending:
        x, y = pending.pop()
        if isinstance(x, str):
            if not (isinstance(y, str) and x == y):
                return False
        elif isinstance(x, bool) or isinstance(y, bool):
            if not (isinstance(x, bool) and isinstance(y, bool) and x == y):
                return False
        elif isinstance(x, int | float):
            if not (isinstance(y, int | float) and x == y):
                return False
        elif x is None:
            if y is not None:
                return False
        elif isinstance(x, Mapping):
            if not (isinstance(y, Mapping) and len(x) == len(y)):
                return False
            for key, value in x.items():
                other = y.get(key, MISSING)
                if other is MISSING:
                    return False
                pending.append((value, other))
        elif isinstance(x, list | tuple):
            if not (isinstance(y, list | tuple) and len(x) == len(y)):
                return False
            pending.extend(zip(x, y, strict=True))
        elif x is not y:
            return False
    return True


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
        self.test = _bind_operator(spec.op, spec.operand, self.key, spec.key)
        self.holds_if_missing = spec.op in _HOLDS_IF_MISSING or (
            spec.op == "exists" and spec.operand is False
        )

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

        Never raises for a JSON state; raises ``ContractError`` if placeholders are unbound.
        """
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
        names.update(name for segment in segments for name in _PLACEHOLDER.findall(segment))
        if isinstance(value, Mapping) and not _is_arg(value):
            _check_operator_names(key, value)
            operators = list(value.items())
        else:
            operators = [("eq", value)]
        for op, raw in operators:
            operand = _operand(raw, key, op)
            _check_operand(op, operand, key)
            if isinstance(operand, Arg):
                names.add(operand.name)
            specs.append(_Spec(key, segments, op, operand))
    source = json.dumps(
        {key: _json_value(value, key, "") for key, value in mapping.items()},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return Contract(tuple(specs), source, redaction or Redaction.none(), frozenset(names))


def _is_arg(value: Mapping[Any, Any]) -> bool:
    return len(value) == 1 and "arg" in value


def _check_operator_names(key: str, value: Mapping[Any, Any]) -> None:
    if not value:
        raise ContractError(
            f"contract key {key!r} has an empty operator set; write one of {_VALID}, "
            'or {"eq": {}} to compare with an empty object',
            key=key,
        )
    unknown = [name for name in value if name not in OPERATORS]
    if not unknown:
        return
    bad = ", ".join(repr(name) for name in unknown)
    if len(unknown) < len(value):
        raise ContractError(
            f"contract key {key!r} mixes operators with other keys ({bad}); valid operators: "
            f'{_VALID}; to compare with an object, write {{"eq": {{...}}}}',
            key=key,
        )
    noun = "operator" if len(unknown) == 1 else "operators"
    raise ContractError(
        f"contract key {key!r} has unknown {noun} {bad}; valid operators: {_VALID}; "
        f'to compare with an object, write {{"eq": {{...}}}}',
        key=key,
    )


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
    return _json_value(raw, key, op)


def _json_value(value: Any, key: str, op: str) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ContractError(
                f"contract key {key!r} ({op}): {value!r} is not a JSON number", key=key
            )
        return value
    if isinstance(value, list | tuple):
        return [_json_value(item, key, op) for item in value]
    if isinstance(value, Mapping):
        copy: dict[str, Any] = {}
        for name, item in value.items():
            if not isinstance(name, str):
                raise ContractError(
                    f"contract key {key!r} ({op}): object keys must be strings, got {name!r}",
                    key=key,
                )
            copy[name] = _json_value(item, key, op)
        return copy
    raise ContractError(
        f"contract key {key!r} ({op}): operand {value!r} is not a JSON value", key=key
    )


def _check_operand(op: str, operand: Any, key: str) -> None:
    """Reject an operand the operator cannot use; an ``Arg`` is checked once bound."""
    if isinstance(operand, Arg):
        return
    if op in _ORDERING:
        if isinstance(operand, bool) or not isinstance(operand, int | float | str):
            raise ContractError(
                f"contract key {key!r}: {op} needs a number or a string, "
                f"got {json_type_name(operand)}",
                key=key,
            )
    elif op in ("in", "nin"):
        if not isinstance(operand, list):
            raise ContractError(
                f"contract key {key!r}: {op} needs a list of values, "
                f'got {json_type_name(operand)}; write {{"{op}": [...]}}',
                key=key,
            )
    elif op == "exists":
        if not isinstance(operand, bool):
            raise ContractError(
                f"contract key {key!r}: exists needs true or false, got {json_type_name(operand)}",
                key=key,
            )
    elif op == "matches":
        _compile_pattern(operand, key)


def _compile_pattern(pattern: Any, key: str) -> Any:
    if not isinstance(pattern, str):
        raise ContractError(
            f"contract key {key!r}: matches needs a regular expression string, "
            f"got {json_type_name(pattern)}",
            key=key,
        )
    if len(pattern) > PATTERN_LIMIT:
        raise ContractError(
            f"contract key {key!r}: the matches pattern has {len(pattern)} characters, "
            f"more than the limit of {PATTERN_LIMIT}",
            key=key,
        )
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    try:
        return re2.compile(pattern, options)
    except (re2.error, UnicodeError) as error:
        detail = error.args[0] if error.args else error
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ContractError(
            f"contract key {key!r}: the matches pattern {pattern!r} is not a valid RE2 "
            f"regular expression ({detail})",
            key=key,
        ) from None


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
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise ContractError(
            f"contract key {spec.key!r}: argument {name!r} stands in the path, so it must be "
            f"a string or an integer, got {json_type_name(value)}",
            key=spec.key,
        )

    segments = tuple(_PLACEHOLDER.sub(segment_value, segment) for segment in spec.segments)
    operand = spec.operand
    if isinstance(operand, Arg):
        name = operand.name
        try:
            operand = _json_value(argument(name, f"its {spec.op} operand"), spec.key, spec.op)
            _check_operand(spec.op, operand, spec.key)
        except ContractError as error:
            if name not in args:
                raise
            raise ContractError(f"{error} (from argument {name!r})", key=spec.key) from None
    return _Spec(spec.key, segments, spec.op, operand)


def _bind_operator(op: str, operand: Any, key: str, authored: str) -> _Test:
    if op in ("eq", "ne"):
        negate = op == "ne"
        return lambda actual: (json_equal(actual, operand) != negate, None)
    if op in ("in", "nin"):
        negate = op == "nin"
        return lambda actual: (any(json_equal(actual, item) for item in operand) != negate, None)
    if op == "exists":
        return lambda actual: (operand, None)
    if op in _ORDERING:
        return _ordering(op, operand, key)
    if op == "contains":
        return _contains(operand, key)
    return _matches(_compile_pattern(operand, authored), key)


def _ordering(op: str, operand: Any, key: str) -> _Test:
    """Numbers with numbers, strings with strings by UTF-16 code units, as JavaScript does."""
    if isinstance(operand, str):
        compare_strings = _STRING_ORDERING[op]

        def test_string(actual: Any) -> tuple[bool, str | None]:
            if not isinstance(actual, str):
                return False, f"{key} is {json_type_name(actual)}, {op} needs a string"
            return compare_strings(actual, operand), None

        return test_string

    compare = _ORDERING[op]

    def test_number(actual: Any) -> tuple[bool, str | None]:
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return False, f"{key} is {json_type_name(actual)}, {op} needs a number"
        return compare(actual, operand), None

    return test_number


def _contains(operand: Any, key: str) -> _Test:
    def test(actual: Any) -> tuple[bool, str | None]:
        if isinstance(actual, str):
            if isinstance(operand, str):
                return operand in actual, None
            return False, (
                f"{key} is a string, contains needs a string to look for in it, "
                f"not {json_type_name(operand)}"
            )
        if isinstance(actual, list | tuple):
            return any(json_equal(item, operand) for item in actual), None
        return False, f"{key} is {json_type_name(actual)}, contains needs a string or an array"

    return test


def _matches(pattern: Any, key: str) -> _Test:
    def test(actual: Any) -> tuple[bool, str | None]:
        if not isinstance(actual, str):
            return False, f"{key} is {json_type_name(actual)}, matches needs a string"
        try:
            return pattern.search(actual) is not None, None
        except UnicodeEncodeError:
            # A lone surrogate has no UTF-8 form; RE2 sees it as U+FFFD instead.
            text = actual.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return pattern.search(text) is not None, None

    return test
