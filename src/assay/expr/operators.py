"""The operators of the language for every value: property reads, ``in``, arithmetic, comparison.

Compiled expressions call these for every case their inline fast paths do not cover. Each
follows ECMA-262 for JSON values and raises ``ExpressionEvaluationError`` where JavaScript
throws a TypeError, naming the expression text (``path``) at fault and the type of what it
found, never a value read from the state. ``meter`` bounds the strings arrays convert to and
is charged the work of converting them.
"""

from __future__ import annotations

import math
from typing import Any, Final

from assay.errors import ExpressionEvaluationError
from assay.json.meter import Meter
from assay.json.strings import canonical, to_units, utf16_length
from assay.json.values import (
    INF,
    JSON_SCALARS,
    NAN,
    UNDEFINED,
    array_index,
    less_than,
    string_too_long,
    to_double,
    to_number,
    to_primitive,
    to_property_key,
    to_string,
    type_name,
    unsupported,
)

# A key that is a string converts nothing, so reading it needs no allowance at all.
_STRING_KEYS: Final = Meter(max_string=0, max_steps=0, steps=None)


def nullish_read(value: Any, key: str, path: str) -> ExpressionEvaluationError:
    """The error for reading a property of undefined or null, in the spec's wording."""
    what = "undefined" if value is UNDEFINED else "null"
    return ExpressionEvaluationError(f"{path} is {what} (reading '{key}')", path=path)


def get_member(obj: Any, key: Any, path: str, key_text: str | None, meter: Meter) -> Any:
    """``obj[key]`` for any value; ``path`` is the source text of ``obj``.

    ``key_text`` is the source text of a computed key (``None`` for a literal one): a key read
    from the state is named by it in an error, never shown.
    """
    t = type(obj)
    if t is dict:
        return obj.get(key if type(key) is str else to_property_key(key, meter), UNDEFINED)
    if t is list:
        if type(key) is int:
            return obj[key] if 0 <= key < len(obj) else UNDEFINED
        name = to_property_key(key, meter)
        if name == "length":
            return len(obj)
        index = array_index(name)
        return obj[index] if index is not None and index < len(obj) else UNDEFINED
    if t is str:
        name = to_property_key(key, meter)
        if name == "length":
            return utf16_length(obj)
        index = array_index(name)
        if index is None:
            return UNDEFINED
        units = to_units(obj)
        return units[index] if index < len(units) else UNDEFINED
    if obj is UNDEFINED or obj is None:
        if key_text is not None:
            what = "undefined" if obj is UNDEFINED else "null"
            raise ExpressionEvaluationError(f"{path} is {what} (reading [{key_text}])", path=path)
        raise nullish_read(obj, to_property_key(key, meter), path)
    if t in JSON_SCALARS:
        if key is UNDEFINED or key is None:
            return UNDEFINED
        to_property_key(key, meter)
        return UNDEFINED
    raise unsupported(obj)


def member_key(key: Any) -> str | None:
    """The property key ``obj[key]`` reads whatever ``obj`` is, converted as ``get_member``
    converts it (ToPropertyKey): ``1`` reads ``"1"``, ``1.5`` ``"1.5"``, ``1e21`` ``"1e+21"``,
    ``-0`` ``"0"``, ``null`` ``"null"``. ``None`` for undefined, an array or an object: an
    argument that is one of those is taken to name no one member."""
    if type(key) is str:
        return key
    if type(key) in JSON_SCALARS or key is None:
        return to_property_key(key, _STRING_KEYS)  # a scalar converts without the meter
    return None


def get_path(obj: Any, keys: tuple[str, ...], paths: tuple[str, ...]) -> Any:
    """Read a chain of constant keys from ``obj``: ``obj.a.b`` is ``(("a", "b"), (t, t.a))``."""
    for key, path in zip(keys, paths, strict=True):
        obj = get_member(obj, key, path, None, _STRING_KEYS)
    return obj


def length_of(obj: Any, path: str) -> Any:
    """``obj.length``."""
    if type(obj) is list:
        return len(obj)
    return get_member(obj, "length", path, None, _STRING_KEYS)


def has_property(key: Any, obj: Any, path: str, meter: Meter) -> bool:
    """``key in obj``: only arrays and objects can be searched."""
    t = type(obj)
    if t is dict:
        return to_property_key(key, meter) in obj
    if t is list:
        name = to_property_key(key, meter)
        if name == "length":
            return True
        index = array_index(name)
        return index is not None and index < len(obj)
    raise ExpressionEvaluationError(
        f"cannot use 'in' to look for a key in {path}, which is {type_name(obj)}; "
        "the right side of 'in' must be an object or an array",
        path=path,
    )


def add(x: Any, y: Any, meter: Meter) -> Any:
    """``x + y``: concatenation when either side is (or converts to) a string."""
    tx = type(x)
    ty = type(y)
    if (tx is int or tx is float) and (ty is int or ty is float):
        return float(x) + float(y)
    px = to_primitive(x, meter)
    py = to_primitive(y, meter)
    if type(px) is str or type(py) is str:
        sx = px if type(px) is str else to_string(px, meter)
        sy = py if type(py) is str else to_string(py, meter)
        if len(sx) + len(sy) > meter.max_string:
            raise string_too_long(len(sx) + len(sy), meter.max_string)
        if sx and sy and "\ud800" <= sx[-1] <= "\udbff":
            return canonical(sx + sy)
        return sx + sy
    return float(to_number(px, meter)) + float(to_number(py, meter))


def subtract(x: Any, y: Any, meter: Meter) -> float:
    """``x - y``."""
    return to_double(x, meter) - to_double(y, meter)


def multiply(x: Any, y: Any, meter: Meter) -> float:
    """``x * y``."""
    return to_double(x, meter) * to_double(y, meter)


def divide(x: Any, y: Any, meter: Meter) -> float:
    """``x / y``: IEEE division, so dividing by zero gives an infinity or NaN."""
    a = to_double(x, meter)
    b = to_double(y, meter)
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return NAN
        return INF if (a > 0) == (math.copysign(1.0, b) > 0) else -INF


def remainder(x: Any, y: Any, meter: Meter) -> float:
    """``x % y``: the remainder takes the sign of the dividend, as C's fmod."""
    a = to_double(x, meter)
    b = to_double(y, meter)
    try:
        return math.fmod(a, b)
    except ValueError:
        return NAN


def negate(x: Any, meter: Meter) -> float:
    """``-x``."""
    return -to_double(x, meter)


def plus(x: Any, meter: Meter) -> int | float:
    """``+x``."""
    return to_number(x, meter)


def less(x: Any, y: Any, meter: Meter) -> bool:
    """``x < y``."""
    return less_than(x, y, meter) is True


def greater(x: Any, y: Any, meter: Meter) -> bool:
    """``x > y``."""
    return less_than(y, x, meter) is True


def less_equal(x: Any, y: Any, meter: Meter) -> bool:
    """``x <= y``."""
    return less_than(y, x, meter) is False


def greater_equal(x: Any, y: Any, meter: Meter) -> bool:
    """``x >= y``."""
    return less_than(x, y, meter) is False
