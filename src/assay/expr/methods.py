"""The string and array methods expressions may call, with JavaScript's argument rules.

Every method takes ``(receiver, args, meter)``: missing arguments are ``undefined``, extra
ones are ignored, indices count UTF-16 code units, and ``meter`` bounds the strings a method
may produce and is charged the work of converting arrays on the way.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any, Final

from assay.errors import ExpressionEvaluationError
from assay.expr.operators import nullish_read
from assay.json.meter import Meter
from assay.json.strings import JS_WHITESPACE, canonical, to_units
from assay.json.values import (
    JSON_SCALARS,
    UNDEFINED,
    join,
    strict_equal,
    string_too_long,
    to_integer,
    to_string,
    type_name,
    unsupported,
)


def _relative(position: Any, length: int, default: int, meter: Meter) -> int:
    """A relative index argument (``slice``, ``at``) clamped into ``[0, length]``."""
    if position is UNDEFINED:
        return default
    index = to_integer(position, meter)
    if index < 0:
        return int(max(length + index, 0))
    return int(min(index, length))


def _clamped(position: Any, length: int, meter: Meter) -> int:
    index = to_integer(position, meter)
    return int(min(max(index, 0), length))


def argument(args: tuple[Any, ...], index: int) -> Any:
    return args[index] if len(args) > index else UNDEFINED


def string_includes(text: str, args: tuple[Any, ...], meter: Meter) -> bool:
    units = to_units(text)
    search = to_units(to_string(argument(args, 0), meter))
    return units.find(search, _clamped(argument(args, 1), len(units), meter)) != -1


def string_index_of(text: str, args: tuple[Any, ...], meter: Meter) -> int:
    units = to_units(text)
    search = to_units(to_string(argument(args, 0), meter))
    return units.find(search, _clamped(argument(args, 1), len(units), meter))


def string_starts_with(text: str, args: tuple[Any, ...], meter: Meter) -> bool:
    units = to_units(text)
    search = to_units(to_string(argument(args, 0), meter))
    return units.startswith(search, _clamped(argument(args, 1), len(units), meter))


def string_ends_with(text: str, args: tuple[Any, ...], meter: Meter) -> bool:
    units = to_units(text)
    search = to_units(to_string(argument(args, 0), meter))
    end = argument(args, 1)
    end_index = len(units) if end is UNDEFINED else _clamped(end, len(units), meter)
    return units.endswith(search, 0, end_index)


def string_slice(text: str, args: tuple[Any, ...], meter: Meter) -> str:
    units = to_units(text)
    start = _relative(argument(args, 0), len(units), 0, meter)
    end = _relative(argument(args, 1), len(units), len(units), meter)
    return canonical(units[start:end]) if units is not text else units[start:end]


def string_at(text: str, args: tuple[Any, ...], meter: Meter) -> Any:
    units = to_units(text)
    index = to_integer(argument(args, 0), meter)
    if index < 0:
        index += len(units)
    return units[int(index)] if 0 <= index < len(units) else UNDEFINED


def string_to_lower_case(text: str, args: tuple[Any, ...], meter: Meter) -> str:
    return _within(text.lower(), meter)


def string_to_upper_case(text: str, args: tuple[Any, ...], meter: Meter) -> str:
    return _within(text.upper(), meter)


def _within(text: str, meter: Meter) -> str:
    """A changed case can be longer than the original ('ß' is 'SS', 'ΐ' three characters)."""
    if len(text) > meter.max_string:
        raise string_too_long(len(text), meter.max_string)
    return text


def string_trim(text: str, args: tuple[Any, ...], meter: Meter) -> str:
    return text.strip(JS_WHITESPACE)


def _find(items: list[Any], search: Any, start: int) -> int:
    """The first index from ``start`` holding a value strictly equal to ``search``, or -1.

    ``list.index`` scans at C speed with Python's ``==``, which matches a superset of strict
    equality (``1 == True``); each candidate is then confirmed. An array or object is strictly
    equal only to itself, and Python's ``==`` would compare it with every equal-looking array
    or object element by element, however large: it is looked for by identity instead.
    """
    t = type(search)
    if t is float and search != search:
        return -1
    if t is list or t is dict:
        found = map(operator.is_, itertools.islice(items, start, None), itertools.repeat(search))
        try:
            return start + operator.indexOf(found, True)
        except ValueError:
            return -1
    while True:
        try:
            index = items.index(search, start)
        except ValueError:
            return -1
        if strict_equal(items[index], search):
            return index
        start = index + 1


def array_includes(items: list[Any], args: tuple[Any, ...], meter: Meter) -> bool:
    search = argument(args, 0)
    start = _relative(argument(args, 1), len(items), 0, meter)
    if type(search) is float and search != search:
        return any(type(item) is float and item != item for item in items[start:])
    return _find(items, search, start) != -1


def array_index_of(items: list[Any], args: tuple[Any, ...], meter: Meter) -> int:
    search = argument(args, 0)
    return _find(items, search, _relative(argument(args, 1), len(items), 0, meter))


def array_join(items: list[Any], args: tuple[Any, ...], meter: Meter) -> str:
    separator = argument(args, 0)
    separator_text = "," if separator is UNDEFINED else to_string(separator, meter)
    return join(items, separator_text, meter)


def array_slice(items: list[Any], args: tuple[Any, ...], meter: Meter) -> list[Any]:
    start = _relative(argument(args, 0), len(items), 0, meter)
    end = _relative(argument(args, 1), len(items), len(items), meter)
    return items[start:end]


def array_at(items: list[Any], args: tuple[Any, ...], meter: Meter) -> Any:
    index = to_integer(argument(args, 0), meter)
    if index < 0:
        index += len(items)
    return items[int(index)] if 0 <= index < len(items) else UNDEFINED


Method = Callable[[Any, tuple[Any, ...], Meter], Any]


STRING_METHODS: Final[dict[str, Method]] = {
    "includes": string_includes,
    "indexOf": string_index_of,
    "startsWith": string_starts_with,
    "endsWith": string_ends_with,
    "toLowerCase": string_to_lower_case,
    "toUpperCase": string_to_upper_case,
    "trim": string_trim,
    "slice": string_slice,
    "at": string_at,
}


ARRAY_METHODS: Final[dict[str, Method]] = {
    "includes": array_includes,
    "indexOf": array_index_of,
    "join": array_join,
    "slice": array_slice,
    "at": array_at,
}


CALLBACK_METHODS: Final = frozenset({"some", "every", "filter", "map", "find", "findIndex"})


ALLOWED_METHODS: Final = frozenset(STRING_METHODS) | frozenset(ARRAY_METHODS) | CALLBACK_METHODS


def not_a_function(receiver: Any, method: str, path: str) -> ExpressionEvaluationError:
    """The error for calling a method the receiver's type does not have."""
    if receiver is UNDEFINED or receiver is None:
        return nullish_read(receiver, method, path)
    return ExpressionEvaluationError(
        f"{path}.{method} is not a function ({path} is {type_name(receiver)})", path=path
    )


def call_method(receiver: Any, method: str, args: tuple[Any, ...], path: str, meter: Meter) -> Any:
    """``receiver.method(...args)`` for the allowed non-callback methods."""
    t = type(receiver)
    if t is str:
        implementation = STRING_METHODS.get(method)
    elif t is list:
        implementation = ARRAY_METHODS.get(method)
    elif t is dict:
        # An own property of that name would still not be callable: JSON holds no functions.
        implementation = None
    elif receiver is UNDEFINED or receiver is None or t in JSON_SCALARS:
        implementation = None
    else:
        raise unsupported(receiver)
    if implementation is None:
        raise not_a_function(receiver, method, path)
    return implementation(receiver, args, meter)
