"""The built-in operations the language allows: property reads, operators, methods, globals.

Compiled expressions call these for every case their inline fast paths do not cover. Each
follows ECMA-262 for JSON values and raises ``ExpressionEvaluationError`` where JavaScript
throws a TypeError, naming the expression text (``path``) at fault.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from assay.errors import ExpressionEvaluationError, ExpressionLimitError
from assay.expr.strings import canonical, to_units, utf16_length
from assay.expr.values import (
    INF,
    NAN,
    UNDEFINED,
    array_index,
    describe,
    join,
    less_than,
    own_keys,
    strict_equal,
    to_boolean,
    to_integer,
    to_number,
    to_primitive,
    to_property_key,
    to_string,
    type_of,
    unsupported,
)

_JSON_SCALARS: Final = (int, float, bool)
_JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def nullish_read(value: Any, key: str, path: str) -> ExpressionEvaluationError:
    """The error for reading a property of undefined or null, in the spec's wording."""
    what = "undefined" if value is UNDEFINED else "null"
    return ExpressionEvaluationError(f"{path} is {what} (reading '{key}')", path=path)


def get_member(obj: Any, key: Any, path: str) -> Any:
    """``obj[key]`` for any value; ``path`` is the source text of ``obj``."""
    t = type(obj)
    if t is dict:
        return obj.get(key if type(key) is str else to_property_key(key), UNDEFINED)
    if t is list:
        if type(key) is int:
            return obj[key] if 0 <= key < len(obj) else UNDEFINED
        name = to_property_key(key)
        if name == "length":
            return len(obj)
        index = array_index(name)
        return obj[index] if index is not None and index < len(obj) else UNDEFINED
    if t is str:
        name = to_property_key(key)
        if name == "length":
            return utf16_length(obj)
        index = array_index(name)
        if index is None:
            return UNDEFINED
        units = to_units(obj)
        return units[index] if index < len(units) else UNDEFINED
    if obj is UNDEFINED or obj is None:
        raise nullish_read(obj, to_property_key(key), path)
    if t in _JSON_SCALARS:
        if key is UNDEFINED or key is None:
            return UNDEFINED
        to_property_key(key)
        return UNDEFINED
    raise unsupported(obj)


def get_path(obj: Any, keys: tuple[str, ...], paths: tuple[str, ...]) -> Any:
    """Read a chain of constant keys from ``obj``: ``obj.a.b`` is ``(("a", "b"), (t, t.a))``."""
    for key, path in zip(keys, paths, strict=True):
        obj = get_member(obj, key, path)
    return obj


def length_of(obj: Any, path: str) -> Any:
    """``obj.length``."""
    if type(obj) is list:
        return len(obj)
    return get_member(obj, "length", path)


def has_property(key: Any, obj: Any, path: str) -> bool:
    """``key in obj``: only arrays and objects can be searched."""
    t = type(obj)
    if t is dict:
        return to_property_key(key) in obj
    if t is list:
        name = to_property_key(key)
        if name == "length":
            return True
        index = array_index(name)
        return index is not None and index < len(obj)
    raise ExpressionEvaluationError(
        f"cannot use 'in' to search for {describe(key)} in {path}, which is {describe(obj)}; "
        "the right side of 'in' must be an object or an array",
        path=path,
    )


def add(x: Any, y: Any, max_string: int) -> Any:
    """``x + y``: concatenation when either side is (or converts to) a string."""
    tx = type(x)
    ty = type(y)
    if (tx is int or tx is float) and (ty is int or ty is float):
        return float(x) + float(y)
    px = to_primitive(x)
    py = to_primitive(y)
    if type(px) is str or type(py) is str:
        sx = px if type(px) is str else to_string(px)
        sy = py if type(py) is str else to_string(py)
        if len(sx) + len(sy) > max_string:
            raise _string_too_long(len(sx) + len(sy), max_string)
        if sx and sy and "\ud800" <= sx[-1] <= "\udbff":
            return canonical(sx + sy)
        return sx + sy
    return float(to_number(px)) + float(to_number(py))


def _float(value: Any) -> float:
    number = to_number(value)
    try:
        return float(number)
    except OverflowError:
        return INF if number > 0 else -INF


def subtract(x: Any, y: Any) -> float:
    """``x - y``."""
    return _float(x) - _float(y)


def multiply(x: Any, y: Any) -> float:
    """``x * y``."""
    return _float(x) * _float(y)


def divide(x: Any, y: Any) -> float:
    """``x / y``: IEEE division, so dividing by zero gives an infinity or NaN."""
    a = _float(x)
    b = _float(y)
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return NAN
        return INF if (a > 0) == (math.copysign(1.0, b) > 0) else -INF


def remainder(x: Any, y: Any) -> float:
    """``x % y``: the remainder takes the sign of the dividend, as C's fmod."""
    a = _float(x)
    b = _float(y)
    try:
        return math.fmod(a, b)
    except ValueError:
        return NAN


def negate(x: Any) -> float:
    """``-x``."""
    return -_float(x)


def plus(x: Any) -> int | float:
    """``+x``."""
    return to_number(x)


def less(x: Any, y: Any) -> bool:
    """``x < y``."""
    return less_than(x, y) is True


def greater(x: Any, y: Any) -> bool:
    """``x > y``."""
    return less_than(y, x) is True


def less_equal(x: Any, y: Any) -> bool:
    """``x <= y``."""
    return less_than(y, x) is False


def greater_equal(x: Any, y: Any) -> bool:
    """``x >= y``."""
    return less_than(x, y) is False


def _relative(position: Any, length: int, default: int) -> int:
    """A relative index argument (``slice``, ``at``) clamped into ``[0, length]``."""
    if position is UNDEFINED:
        return default
    index = to_integer(position)
    if index < 0:
        return int(max(length + index, 0))
    return int(min(index, length))


def _clamped(position: Any, length: int) -> int:
    index = to_integer(position)
    return int(min(max(index, 0), length))


def _argument(args: tuple[Any, ...], index: int) -> Any:
    return args[index] if len(args) > index else UNDEFINED


def string_includes(text: str, args: tuple[Any, ...], max_string: int) -> bool:
    units = to_units(text)
    search = to_units(to_string(_argument(args, 0)))
    return units.find(search, _clamped(_argument(args, 1), len(units))) != -1


def string_index_of(text: str, args: tuple[Any, ...], max_string: int) -> int:
    units = to_units(text)
    search = to_units(to_string(_argument(args, 0)))
    return units.find(search, _clamped(_argument(args, 1), len(units)))


def string_starts_with(text: str, args: tuple[Any, ...], max_string: int) -> bool:
    units = to_units(text)
    search = to_units(to_string(_argument(args, 0)))
    return units.startswith(search, _clamped(_argument(args, 1), len(units)))


def string_ends_with(text: str, args: tuple[Any, ...], max_string: int) -> bool:
    units = to_units(text)
    search = to_units(to_string(_argument(args, 0)))
    end = _argument(args, 1)
    end_index = len(units) if end is UNDEFINED else _clamped(end, len(units))
    return units.endswith(search, 0, end_index)


def string_slice(text: str, args: tuple[Any, ...], max_string: int) -> str:
    units = to_units(text)
    start = _relative(_argument(args, 0), len(units), 0)
    end = _relative(_argument(args, 1), len(units), len(units))
    return canonical(units[start:end]) if units is not text else units[start:end]


def string_at(text: str, args: tuple[Any, ...], max_string: int) -> Any:
    units = to_units(text)
    index = to_integer(_argument(args, 0))
    if index < 0:
        index += len(units)
    return units[int(index)] if 0 <= index < len(units) else UNDEFINED


def string_to_lower_case(text: str, args: tuple[Any, ...], max_string: int) -> str:
    return text.lower()


def string_to_upper_case(text: str, args: tuple[Any, ...], max_string: int) -> str:
    return text.upper()


def string_trim(text: str, args: tuple[Any, ...], max_string: int) -> str:
    return text.strip(_JS_WHITESPACE)


def _find(items: list[Any], search: Any, start: int) -> int:
    """The first index from ``start`` holding a value strictly equal to ``search``, or -1.

    ``list.index`` scans at C speed with Python's ``==``, which matches a superset of strict
    equality (``1 == True``, equal but distinct lists); each candidate is then confirmed.
    """
    if type(search) is float and search != search:
        return -1
    while True:
        try:
            index = items.index(search, start)
        except ValueError:
            return -1
        if strict_equal(items[index], search):
            return index
        start = index + 1


def array_includes(items: list[Any], args: tuple[Any, ...], max_string: int) -> bool:
    search = _argument(args, 0)
    start = _array_start(_argument(args, 1), len(items))
    if type(search) is float and search != search:
        return any(type(item) is float and item != item for item in items[start:])
    return _find(items, search, start) != -1


def array_index_of(items: list[Any], args: tuple[Any, ...], max_string: int) -> int:
    search = _argument(args, 0)
    return _find(items, search, _array_start(_argument(args, 1), len(items)))


def _array_start(position: Any, length: int) -> int:
    if position is UNDEFINED:
        return 0
    index = to_integer(position)
    if index < 0:
        return int(max(length + index, 0))
    return int(min(index, length))


def array_join(items: list[Any], args: tuple[Any, ...], max_string: int) -> str:
    separator = _argument(args, 0)
    separator_text = "," if separator is UNDEFINED else to_string(separator)
    if len(items) > 1 and len(separator_text) * (len(items) - 1) > max_string:
        raise _string_too_long(len(separator_text) * (len(items) - 1), max_string)
    result = join(items, separator_text)
    if len(result) > max_string:
        raise _string_too_long(len(result), max_string)
    return result


def _string_too_long(length: int, max_string: int) -> ExpressionLimitError:
    return ExpressionLimitError(
        f"a string of {length} characters exceeds the limit of {max_string} (max_string_length)",
        limit="max_string_length",
        bound=max_string,
    )


def array_slice(items: list[Any], args: tuple[Any, ...], max_string: int) -> list[Any]:
    start = _relative(_argument(args, 0), len(items), 0)
    end = _relative(_argument(args, 1), len(items), len(items))
    return items[start:end]


def array_at(items: list[Any], args: tuple[Any, ...], max_string: int) -> Any:
    index = to_integer(_argument(args, 0))
    if index < 0:
        index += len(items)
    return items[int(index)] if 0 <= index < len(items) else UNDEFINED


Method = Callable[[Any, tuple[Any, ...], int], Any]

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
        f"{path}.{method} is not a function ({path} is {describe(receiver)})", path=path
    )


def call_method(
    receiver: Any, method: str, args: tuple[Any, ...], path: str, max_string: int
) -> Any:
    """``receiver.method(...args)`` for the allowed non-callback methods."""
    t = type(receiver)
    if t is str:
        implementation = STRING_METHODS.get(method)
    elif t is list:
        implementation = ARRAY_METHODS.get(method)
    elif t is dict:
        # An own property of that name would still not be callable: JSON holds no functions.
        implementation = None
    elif receiver is UNDEFINED or receiver is None or t in _JSON_SCALARS:
        implementation = None
    else:
        raise unsupported(receiver)
    if implementation is None:
        raise not_a_function(receiver, method, path)
    return implementation(receiver, args, max_string)


def object_keys(value: Any) -> list[Any]:
    """``Object.keys(value)``."""
    t = type(value)
    if t is dict:
        return own_keys(value)
    if t is list:
        return [str(index) for index in range(len(value))]
    if t is str:
        return [str(index) for index in range(utf16_length(value))]
    _require_object_coercible(value, "Object.keys")
    return []


def object_values(value: Any) -> list[Any]:
    """``Object.values(value)``."""
    t = type(value)
    if t is dict:
        return [value[key] for key in own_keys(value)]
    if t is list:
        return list(value)
    if t is str:
        return list(to_units(value))
    _require_object_coercible(value, "Object.values")
    return []


def object_entries(value: Any) -> list[Any]:
    """``Object.entries(value)``: ``[key, value]`` pairs."""
    t = type(value)
    if t is dict:
        return [[key, value[key]] for key in own_keys(value)]
    if t is list:
        return [[str(index), item] for index, item in enumerate(value)]
    if t is str:
        return [[str(index), unit] for index, unit in enumerate(to_units(value))]
    _require_object_coercible(value, "Object.entries")
    return []


def _require_object_coercible(value: Any, function: str) -> None:
    if value is UNDEFINED or value is None:
        raise ExpressionEvaluationError(
            f"{function} cannot convert {to_string(value)} to an object", path=None
        )
    if type(value) not in _JSON_SCALARS:
        raise unsupported(value)


def math_abs(*args: Any) -> float | int:
    return abs(to_number(_argument(args, 0)))


def math_floor(*args: Any) -> float:
    x = _float(_argument(args, 0))
    if x != x or x in (INF, -INF) or x == 0:
        return x
    return float(math.floor(x))


def math_ceil(*args: Any) -> float:
    x = _float(_argument(args, 0))
    if x != x or x in (INF, -INF) or x == 0:
        return x
    result = float(math.ceil(x))
    return -0.0 if result == 0 else result


def math_round(*args: Any) -> float:
    x = _float(_argument(args, 0))
    if x != x or x in (INF, -INF) or x == 0:
        return x
    if -0.5 <= x < 0:
        return -0.0
    floor = math.floor(x)
    return float(floor + 1 if x - floor >= 0.5 else floor)


def math_max(*args: Any) -> float | int:
    numbers = [to_number(arg) for arg in args]
    result: float | int = -INF
    for number in numbers:
        if number != number:
            return NAN
        if number > result or (number == 0 and result == 0 and math.copysign(1.0, result) < 0):
            result = number
    return result


def math_min(*args: Any) -> float | int:
    numbers = [to_number(arg) for arg in args]
    result: float | int = INF
    for number in numbers:
        if number != number:
            return NAN
        if number < result or (number == 0 and result == 0 and math.copysign(1.0, number) < 0):
            result = number
    return result


def number_is_integer(*args: Any) -> bool:
    x = _argument(args, 0)
    t = type(x)
    if t is int:
        return True
    return t is float and x == x and x not in (INF, -INF) and x == math.trunc(x)


def global_number(*args: Any) -> int | float:
    return to_number(args[0]) if args else 0


def global_string(*args: Any) -> str:
    return to_string(args[0]) if args else ""


def global_boolean(*args: Any) -> bool:
    return to_boolean(args[0]) if args else False


def global_is_nan(*args: Any) -> bool:
    x = to_number(_argument(args, 0))
    return x != x


def array_is_array(*args: Any) -> bool:
    return type(_argument(args, 0)) is list


GLOBAL_FUNCTIONS: Final[dict[str, Callable[..., Any]]] = {
    "Math.abs": math_abs,
    "Math.min": math_min,
    "Math.max": math_max,
    "Math.floor": math_floor,
    "Math.ceil": math_ceil,
    "Math.round": math_round,
    "Object.keys": object_keys,
    "Object.values": object_values,
    "Object.entries": object_entries,
    "Array.isArray": array_is_array,
    "Number": global_number,
    "Number.isInteger": number_is_integer,
    "String": global_string,
    "Boolean": global_boolean,
    "isNaN": global_is_nan,
}

GLOBAL_VALUES: Final[dict[str, Any]] = {"NaN": NAN, "Infinity": INF}

GLOBAL_NAMESPACES: Final = frozenset({"Math", "Object", "Array", "Number"})

__all__ = ["GLOBAL_FUNCTIONS", "type_of"]
