"""The global functions expressions may call: ``Object``, ``Math``, ``Number`` and the rest.

Expressions reach them only as callees (``Math.max(a, b)``, ``Number(x)``); a state key with
a global's name shadows it. ``NaN`` and ``Infinity`` are the only global values. Each takes
``meter`` first: it bounds the strings a function may produce or convert arrays to, and is
charged the work of converting them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

from assay.errors import ExpressionEvaluationError
from assay.expr.methods import argument
from assay.json.meter import Meter
from assay.json.strings import to_units, utf16_length
from assay.json.values import (
    INF,
    JSON_SCALARS,
    NAN,
    UNDEFINED,
    own_keys,
    to_boolean,
    to_double,
    to_number,
    to_string,
    type_name,
    unsupported,
)


def object_keys(meter: Meter, *args: Any) -> list[Any]:
    """``Object.keys(value)``."""
    value = argument(args, 0)
    t = type(value)
    if t is dict:
        return own_keys(value)
    if t is list:
        return [str(index) for index in range(len(value))]
    if t is str:
        return [str(index) for index in range(utf16_length(value))]
    _require_object_coercible(value, "Object.keys")
    return []


def object_values(meter: Meter, *args: Any) -> list[Any]:
    """``Object.values(value)``."""
    value = argument(args, 0)
    t = type(value)
    if t is dict:
        return [value[key] for key in own_keys(value)]
    if t is list:
        return list(value)
    if t is str:
        return list(to_units(value))
    _require_object_coercible(value, "Object.values")
    return []


def object_entries(meter: Meter, *args: Any) -> list[Any]:
    """``Object.entries(value)``: ``[key, value]`` pairs."""
    value = argument(args, 0)
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
            f"{function} cannot convert {type_name(value)} to an object", path=None
        )
    if type(value) not in JSON_SCALARS:
        raise unsupported(value)


def math_abs(meter: Meter, *args: Any) -> float | int:
    return abs(to_number(argument(args, 0), meter))


def math_floor(meter: Meter, *args: Any) -> float:
    x = to_double(argument(args, 0), meter)
    if x != x or x in (INF, -INF) or x == 0:
        return x
    return float(math.floor(x))


def math_ceil(meter: Meter, *args: Any) -> float:
    x = to_double(argument(args, 0), meter)
    if x != x or x in (INF, -INF) or x == 0:
        return x
    result = float(math.ceil(x))
    return -0.0 if result == 0 else result


def math_round(meter: Meter, *args: Any) -> float:
    x = to_double(argument(args, 0), meter)
    if x != x or x in (INF, -INF) or x == 0:
        return x
    if -0.5 <= x < 0:
        return -0.0
    floor = math.floor(x)
    return float(floor + 1 if x - floor >= 0.5 else floor)


def math_max(meter: Meter, *args: Any) -> float | int:
    numbers = [to_number(arg, meter) for arg in args]
    result: float | int = -INF
    for number in numbers:
        if number != number:
            return NAN
        if number > result or (number == 0 and result == 0 and math.copysign(1.0, result) < 0):
            result = number
    return result


def math_min(meter: Meter, *args: Any) -> float | int:
    numbers = [to_number(arg, meter) for arg in args]
    result: float | int = INF
    for number in numbers:
        if number != number:
            return NAN
        if number < result or (number == 0 and result == 0 and math.copysign(1.0, number) < 0):
            result = number
    return result


def number_is_integer(meter: Meter, *args: Any) -> bool:
    x = argument(args, 0)
    t = type(x)
    if t is int:
        return True
    return t is float and x == x and x not in (INF, -INF) and x == math.trunc(x)


def global_number(meter: Meter, *args: Any) -> int | float:
    return to_number(args[0], meter) if args else 0


def global_string(meter: Meter, *args: Any) -> str:
    return to_string(args[0], meter) if args else ""


def global_boolean(meter: Meter, *args: Any) -> bool:
    return to_boolean(args[0]) if args else False


def global_is_nan(meter: Meter, *args: Any) -> bool:
    x = to_number(argument(args, 0), meter)
    return x != x


def array_is_array(meter: Meter, *args: Any) -> bool:
    return type(argument(args, 0)) is list


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
