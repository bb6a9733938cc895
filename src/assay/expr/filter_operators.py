"""The operators of the declarative filter form: the operands each accepts, and its test.

``eq``, ``ne``, ``in`` and ``nin`` use JSON deep equality (``json_equal``). The ordering
operators compare numbers with numbers and strings with strings (by UTF-16 code units, as
JavaScript does); anything else is false with a reason. ``matches`` takes a bounded RE2
pattern. An operator bound to its operand (``bind_operator``) tests a present value; a
missing one holds only for ``ne``, ``nin`` and ``exists: false`` (``holds_if_missing``).
The array quantifiers ``all``, ``any`` and ``contains_all`` are named here and run in
``quantifiers``.
"""

from __future__ import annotations

import functools
import math
import operator
from collections.abc import Callable, Mapping
from typing import Any, Final

import re2

from assay.errors import ContractError
from assay.json.equality import json_equal
from assay.json.path import json_type_name
from assay.json.strings import utf16_less

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
    "all",
    "any",
    "contains_all",
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
_VALID = ", ".join(OPERATORS)

OperatorTest = Callable[[Any], tuple[bool, str | None]]
"""An operator bound to its operand: the verdict on a present value, and why if it could
not compare, said of the value without naming it (``is a string, gte needs a number``), so
that the condition names it by its path, the path of an array's element included."""


def holds_if_missing(op: str, operand: Any) -> bool:
    """Whether the condition holds on a missing key: a missing value equals nothing (as
    ``undefined !== x`` in JavaScript and ``$ne`` in MongoDB), and does not exist."""
    return op in _HOLDS_IF_MISSING or (op == "exists" and operand is False)


def check_operator_names(key: str, value: Mapping[Any, Any]) -> None:
    """Refuse an operator set (the dict authored for ``key``) that is empty or has a name
    that is not an operator, saying how to compare with an object instead."""
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


MAX_OPERAND_DEPTH: Final = 256
"""How deeply an operand may nest: as deeply as a stored state value may."""


def json_value(value: Any, key: str, op: str, depth: int = 0) -> Any:
    """``value`` as plain JSON (tuples become lists); ``ContractError`` naming ``key`` if it
    is not JSON or nests deeper than ``MAX_OPERAND_DEPTH``."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ContractError(
                f"contract key {key!r} ({op}): {value!r} is not a JSON number", key=key
            )
        return value
    if depth > MAX_OPERAND_DEPTH and isinstance(value, list | tuple | Mapping):
        raise ContractError(
            f"contract key {key!r}{f' ({op})' if op else ''}: the operand nests deeper than "
            f"{MAX_OPERAND_DEPTH} levels; flatten it, or compare a part of it",
            key=key,
        )
    if isinstance(value, list | tuple):
        return [json_value(item, key, op, depth + 1) for item in value]
    if isinstance(value, Mapping):
        copy: dict[str, Any] = {}
        for name, item in value.items():
            if not isinstance(name, str):
                raise ContractError(
                    f"contract key {key!r} ({op}): object keys must be strings, got {name!r}",
                    key=key,
                )
            copy[name] = json_value(item, key, op, depth + 1)
        return copy
    raise ContractError(
        f"contract key {key!r} ({op}): operand {value!r} is not a JSON value", key=key
    )


def check_operand(op: str, operand: Any, key: str) -> None:
    """Reject an operand the operator cannot use (``ContractError`` naming ``key``)."""
    if op in _ORDERING:
        if isinstance(operand, bool) or not isinstance(operand, int | float | str):
            raise ContractError(
                f"contract key {key!r}: {op} needs a number or a string, "
                f"got {json_type_name(operand)}",
                key=key,
                op=op,
            )
    elif op in ("in", "nin"):
        if not isinstance(operand, list):
            raise ContractError(
                f"contract key {key!r}: {op} needs a list of values, "
                f'got {json_type_name(operand)}; write {{"{op}": [...]}}',
                key=key,
                op=op,
            )
    elif op == "exists":
        if not isinstance(operand, bool):
            raise ContractError(
                f"contract key {key!r}: exists needs true or false, got {json_type_name(operand)}",
                key=key,
                op=op,
            )
    elif op == "matches":
        compile_pattern(operand, key)
    elif op == "contains_all" and not isinstance(operand, list):
        raise ContractError(
            f"contract key {key!r}: contains_all needs a list of values, "
            f'got {json_type_name(operand)}; write {{"contains_all": [...]}}, or '
            '{"contains_all": {"by": "item_id", "values": [...]}} to match elements by a member',
            key=key,
            op=op,
        )


def compile_pattern(pattern: Any, key: str) -> Any:
    """``pattern`` compiled by RE2 (no captures), or ``ContractError`` saying why not."""
    if not isinstance(pattern, str):
        raise ContractError(
            f"contract key {key!r}: matches needs a regular expression string, "
            f"got {json_type_name(pattern)}",
            key=key,
            op="matches",
        )
    if len(pattern) > PATTERN_LIMIT:
        raise ContractError(
            f"contract key {key!r}: the matches pattern has {len(pattern)} characters, "
            f"more than the limit of {PATTERN_LIMIT}",
            key=key,
            op="matches",
        )
    try:
        return _compiled(pattern)
    except (re2.error, UnicodeError) as error:
        detail = error.args[0] if error.args else error
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise ContractError(
            f"contract key {key!r}: the matches pattern {pattern!r} is not a valid RE2 "
            f"regular expression ({detail})",
            key=key,
            op="matches",
        ) from None


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    """RE2's compiled ``pattern``, shared: checking a contract and binding it compile it once,
    and so do the contracts that repeat a pattern. Raises as ``re2.compile`` does."""
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    return re2.compile(pattern, options)


def bind_operator(op: str, operand: Any, authored: str) -> OperatorTest:
    """``op`` (not a quantifier) bound to its checked ``operand``; ``authored`` names the
    key as written, in a pattern error."""
    if op in ("eq", "ne"):
        negate = op == "ne"
        return lambda actual: (json_equal(actual, operand) != negate, None)
    if op in ("in", "nin"):
        negate = op == "nin"
        return lambda actual: (any(json_equal(actual, item) for item in operand) != negate, None)
    if op == "exists":
        return lambda actual: (operand, None)
    if op in _ORDERING:
        return _ordering(op, operand)
    if op == "contains":
        return _contains(operand)
    return _matches(compile_pattern(operand, authored))


def _ordering(op: str, operand: Any) -> OperatorTest:
    """Numbers with numbers, strings with strings by UTF-16 code units, as JavaScript does."""
    if isinstance(operand, str):
        compare_strings = _STRING_ORDERING[op]

        def test_string(actual: Any) -> tuple[bool, str | None]:
            if not isinstance(actual, str):
                return False, f"is {json_type_name(actual)}, {op} needs a string"
            return compare_strings(actual, operand), None

        return test_string

    compare = _ORDERING[op]

    def test_number(actual: Any) -> tuple[bool, str | None]:
        if isinstance(actual, bool) or not isinstance(actual, int | float):
            return False, f"is {json_type_name(actual)}, {op} needs a number"
        return compare(actual, operand), None

    return test_number


def _contains(operand: Any) -> OperatorTest:
    def test(actual: Any) -> tuple[bool, str | None]:
        if isinstance(actual, str):
            if isinstance(operand, str):
                return operand in actual, None
            return False, (
                "is a string, contains needs a string to look for in it, "
                f"not {json_type_name(operand)}"
            )
        if isinstance(actual, list | tuple):
            return any(json_equal(item, operand) for item in actual), None
        return False, f"is {json_type_name(actual)}, contains needs a string or an array"

    return test


def _matches(pattern: Any) -> OperatorTest:
    def test(actual: Any) -> tuple[bool, str | None]:
        if not isinstance(actual, str):
            return False, f"is {json_type_name(actual)}, matches needs a string"
        try:
            return pattern.search(actual) is not None, None
        except UnicodeEncodeError:
            # A lone surrogate has no UTF-8 form; RE2 sees it as U+FFFD instead.
            text = actual.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return pattern.search(text) is not None, None

    return test
