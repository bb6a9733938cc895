"""JavaScript values in Python, and the abstract operations of ECMA-262 that the language uses.

The mapping: ``undefined`` is ``UNDEFINED``, ``null`` is ``None``, booleans are ``bool``,
numbers are ``int`` or ``float`` (JavaScript doubles; arithmetic produces floats), strings are
``str`` (UTF-16 semantics, see ``strings.py``), arrays are ``list`` and objects are ``dict``.
Types are tested with ``type(x) is ...``, never ``isinstance``: ``bool`` subclasses ``int``.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final, final

from assay.errors import ExpressionEvaluationError, ExpressionLimitError
from assay.json.meter import Meter, MeterNeededError, steps_exceeded
from assay.json.strings import JS_WHITESPACE, canonical, utf16_less

__all__ = [
    "UNDEFINED",
    "Undefined",
    "loose_equal",
    "number_to_string",
    "own_keys",
    "same_value_zero",
    "strict_equal",
    "to_boolean",
    "to_integer",
    "to_number",
    "to_primitive",
    "to_property_key",
    "to_string",
    "type_name",
    "type_of",
]


@final
class Undefined:
    """The type of ``UNDEFINED``, JavaScript's ``undefined``: falsy, equal only to itself."""

    _instance: Undefined | None = None

    def __new__(cls) -> Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = Undefined()

NAN: Final = math.nan
INF: Final = math.inf
JSON_SCALARS: Final = (int, float, bool)

_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)\Z", re.ASCII)
_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)\Z", re.ASCII)
_MAX_SAFE: Final = 2**53
_ARRAY_INDEX_LIMIT: Final = 2**32 - 1


def type_of(value: Any) -> str:
    """``typeof value``."""
    t = type(value)
    if t is str:
        return "string"
    if t is int or t is float:
        return "number"
    if t is bool:
        return "boolean"
    if value is UNDEFINED:
        return "undefined"
    return "object"


def type_name(value: Any) -> str:
    """A value's type with its article (``a string``, ``an array``, ``null``), for messages.

    Error messages name paths and types, never values: they reach narratives, the ledger and
    answers, where the redaction of state values cannot follow them.
    """
    t = type(value)
    if t is str:
        return "a string"
    if t is int or t is float:
        return "a number"
    if t is bool:
        return "a boolean"
    if t is list:
        return "an array"
    if t is dict:
        return "an object"
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    return f"a {t.__name__}, which is not a JSON value"


def to_boolean(value: Any) -> bool:
    """``Boolean(value)``: JavaScript truthiness (``[]`` and ``{}`` are truthy, NaN is not)."""
    t = type(value)
    if t is bool:
        return bool(value)
    if t is str:
        return len(value) > 0
    if t is int:
        return bool(value != 0)
    if t is float:
        return not (value == 0.0 or value != value)
    if value is None or value is UNDEFINED:
        return False
    return True


def _string_to_number(text: str) -> int | float:
    text = text.strip(JS_WHITESPACE)
    if not text:
        return 0
    if _DECIMAL.match(text):
        return float(text.replace("Infinity", "inf"))
    if _RADIX.match(text):
        try:
            return float(int(text, 0))
        except OverflowError:
            return INF
    return NAN


def to_number(value: Any, meter: Meter) -> int | float:
    """``Number(value)``: ToNumber. Integers from the state stay ``int``.

    ``meter`` (here and below) bounds the string an array is converted to on the way, and is
    charged the work of converting it (see ``join``).
    """
    t = type(value)
    if t is int or t is float:
        return value  # type: ignore[no-any-return]
    if t is bool:
        return 1 if value else 0
    if t is str:
        return _string_to_number(value)
    if value is None:
        return 0
    if value is UNDEFINED:
        return NAN
    if t is list or t is dict:
        return to_number(to_primitive(value, meter), meter)
    raise unsupported(value)


def to_double(value: Any, meter: Meter) -> float:
    """ToNumber as a Python float (integers beyond the float range become infinities)."""
    number = to_number(value, meter)
    try:
        return float(number)
    except OverflowError:
        return INF if number > 0 else -INF


def to_integer(value: Any, meter: Meter) -> int | float:
    """ToIntegerOrInfinity: NaN becomes 0, infinities stay, everything else truncates."""
    number = to_number(value, meter)
    if type(number) is int:
        return number
    if number != number:
        return 0
    if number in (INF, -INF):
        return number
    return int(number)


def number_to_string(number: int | float) -> str:
    """Number::toString(10): the shortest round-trip digits in JavaScript's layout."""
    if type(number) is int and -_MAX_SAFE <= number <= _MAX_SAFE:
        return str(number)
    try:
        x = float(number)
    except OverflowError:
        return "Infinity" if number > 0 else "-Infinity"
    if x != x:
        return "NaN"
    if x == 0:
        return "0"
    if x < 0:
        return "-" + number_to_string(-x)
    if x == INF:
        return "Infinity"
    mantissa, _, exponent_text = repr(x).partition("e")
    integral, _, fraction = mantissa.partition(".")
    digits = integral + fraction
    n = len(integral) + (int(exponent_text) if exponent_text else 0)
    stripped = digits.lstrip("0")
    n -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    e = n - 1
    sign = "+" if e >= 0 else "-"
    head = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{head}e{sign}{abs(e)}"


def to_string(value: Any, meter: Meter) -> str:
    """``String(value)``: ToString, arrays joined with commas (see ``join`` for the bounds)."""
    t = type(value)
    if t is str:
        return value  # type: ignore[no-any-return]
    if t is int or t is float:
        return number_to_string(value)
    if t is bool:
        return "true" if value else "false"
    if value is None:
        return "null"
    if value is UNDEFINED:
        return "undefined"
    if t is list:
        return join(value, ",", meter)
    if t is dict:
        return "[object Object]"
    raise unsupported(value)


_MAX_JOIN_DEPTH: Final = 256


def join(items: list[Any], separator: str, meter: Meter) -> str:
    """``items.join(separator)``: null and undefined elements become empty strings.

    Nested arrays are joined with commas. Arrays built by callbacks can share elements, so an
    array's text can be far larger than the array: the conversion stops with
    ``ExpressionLimitError`` as soon as it would produce more than ``meter.max_string``
    characters, or visit more than as many elements. A nested array met again is converted
    once. The work is charged to the meter: a step for every element visited and one for every
    16 characters produced; the conversion stops as soon as the elements alone would spend
    more steps than the evaluation has left.
    """
    if not items:
        return ""
    steps = meter.steps
    if steps is None:
        raise MeterNeededError
    conversion = _Conversion(meter, steps)
    text = _join(items, separator, conversion, 0)
    meter.charge(conversion.spent())
    return canonical(text)


class _Conversion:
    """What one conversion may still produce and visit, and the nested arrays it has met."""

    __slots__ = ("characters", "elements", "meter", "seen", "visits")

    def __init__(self, meter: Meter, steps: int) -> None:
        self.meter = meter
        self.characters = meter.max_string
        self.visits = min(meter.max_string, steps)
        self.elements = self.visits
        self.seen: dict[int, str] = {}

    def too_many_elements(self) -> ExpressionLimitError:
        if self.visits < self.meter.max_string:
            return steps_exceeded(self.meter.max_steps)
        return conversion_too_long(self.meter.max_string)

    def spent(self) -> int:
        """The steps of the work done: elements visited, and characters produced by 16."""
        return self.visits - self.elements + ((self.meter.max_string - self.characters) >> 4)


def _join(items: list[Any], separator: str, budget: _Conversion, depth: int) -> str:
    if depth > _MAX_JOIN_DEPTH:
        raise ExpressionLimitError(
            f"arrays nested deeper than {_MAX_JOIN_DEPTH} cannot be converted to a string",
            limit="max_depth",
            bound=_MAX_JOIN_DEPTH,
        )
    count = len(items)
    budget.elements -= count
    if budget.elements < 0:
        raise budget.too_many_elements()
    if count > 1:
        budget.characters -= len(separator) * (count - 1)
    if budget.characters < 0:
        raise conversion_too_long(budget.meter.max_string)
    seen = budget.seen
    parts: list[str] = []
    for item in items:
        t = type(item)
        if t is str:
            part = item
        elif t is int and -_MAX_SAFE <= item <= _MAX_SAFE:
            part = str(item)
        elif item is None or item is UNDEFINED:
            parts.append("")
            continue
        elif t is list:
            key = id(item)
            if key in seen:
                part = seen[key]
            else:
                # The ids stay valid: every array converted is held by ``items``.
                part = _join(item, ",", budget, depth + 1)
                seen[key] = part
                parts.append(part)
                continue  # its characters are counted already
        else:
            part = to_string(item, budget.meter)  # not an array: nothing is walked
        budget.characters -= len(part)
        if budget.characters < 0:
            raise conversion_too_long(budget.meter.max_string)
        parts.append(part)
    return separator.join(parts)


def to_primitive(value: Any, meter: Meter) -> Any:
    """ToPrimitive: arrays become their joined string, objects ``"[object Object]"``."""
    t = type(value)
    if t is list:
        return join(value, ",", meter)
    if t is dict:
        return "[object Object]"
    return value


def to_property_key(value: Any, meter: Meter) -> str:
    """ToPropertyKey: the string a value names when used as a property key."""
    if type(value) is str:
        return value
    return to_string(value, meter)


def array_index(key: str) -> int | None:
    """The array index a property key names (canonical decimal below 2**32 - 1), if any."""
    if not key or not key.isdigit() or not key.isascii() or (key[0] == "0" and len(key) > 1):
        return None
    index = int(key)
    return index if index < _ARRAY_INDEX_LIMIT else None


def own_keys(obj: dict[str, Any]) -> list[str]:
    """An object's own keys in JavaScript order: array indices ascending, then the rest."""
    indices = [key for key in obj if "0" <= key[:1] <= "9" and array_index(key) is not None]
    if not indices:
        return list(obj)
    indices.sort(key=int)
    return indices + [key for key in obj if array_index(key) is None]


def strict_equal(x: Any, y: Any) -> bool:
    """``x === y``: same type and value; arrays and objects by identity; NaN unequal."""
    tx = type(x)
    ty = type(y)
    if tx is list or tx is dict or ty is list or ty is dict:
        return x is y
    if tx is str or ty is str:
        return tx is ty and x == y
    if tx is bool or ty is bool:
        return tx is ty and x == y
    if (tx is int or tx is float) and (ty is int or ty is float):
        return x == y  # type: ignore[no-any-return]
    return x is y


def same_value_zero(x: Any, y: Any) -> bool:
    """SameValueZero (``includes``): strict equality, except NaN equals NaN."""
    if type(x) is float and x != x:
        return type(y) is float and y != y
    return strict_equal(x, y)


def _kind(value: Any) -> str:
    t = type(value)
    if t is int or t is float:
        return "number"
    if t is list or t is dict:
        return "object"
    if value is None or value is UNDEFINED:
        return "nullish"
    return "string" if t is str else "boolean"


def loose_equal(x: Any, y: Any, meter: Meter) -> bool:
    """``x == y``: IsLooselyEqual, with its conversions between types."""
    kx = _kind(x)
    ky = _kind(y)
    if kx == ky:
        if kx == "nullish":
            return True
        return strict_equal(x, y)
    if kx == "nullish" or ky == "nullish":
        return False
    if kx == "boolean":
        return loose_equal(to_number(x, meter), y, meter)
    if ky == "boolean":
        return loose_equal(x, to_number(y, meter), meter)
    if kx == "object":
        return loose_equal(to_primitive(x, meter), y, meter)
    if ky == "object":
        return loose_equal(x, to_primitive(y, meter), meter)
    # One number and one string remain.
    return to_number(x, meter) == to_number(y, meter)


def less_than(x: Any, y: Any, meter: Meter) -> bool | None:
    """IsLessThan: ``None`` stands for JavaScript's undefined result (a NaN was involved)."""
    px = to_primitive(x, meter)
    py = to_primitive(y, meter)
    if type(px) is str and type(py) is str:
        return utf16_less(px, py)
    nx = to_number(px, meter)
    ny = to_number(py, meter)
    if nx != nx or ny != ny:
        return None
    return nx < ny


def string_too_long(length: int, max_string: int) -> ExpressionLimitError:
    """The error for producing a string longer than ``max_string_length``."""
    return ExpressionLimitError(
        f"a string of {length} characters exceeds the limit of {max_string} (max_string_length)",
        limit="max_string_length",
        bound=max_string,
    )


def conversion_too_long(max_string: int) -> ExpressionLimitError:
    """The error for converting an array to a string that would pass ``max_string_length``."""
    return ExpressionLimitError(
        f"converting an array to a string would produce more than {max_string} characters "
        "or visit more than as many elements (max_string_length)",
        limit="max_string_length",
        bound=max_string,
    )


def unsupported(value: Any) -> ExpressionEvaluationError:
    """The error for a non-JSON Python value met during evaluation; it is never looked into."""
    return ExpressionEvaluationError(
        f"the state holds a {type(value).__name__}, which is not a JSON value; "
        "states must contain only dicts, lists, strings, numbers, booleans and None"
    )
