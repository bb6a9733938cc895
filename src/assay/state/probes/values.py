"""Python values read by probes, turned into JSON values (SQL rows, callable results).

No value is invented or silently changed in meaning: ``None``, booleans, strings, integers and
finite floats stay as they are; ``Decimal`` becomes an integer when integral, else a float;
dates and times become ISO 8601 strings, ``timedelta`` seconds, ``UUID`` and IP addresses
their canonical strings; mappings with string keys, lists and tuples are converted item by
item. Bytes, NaN, infinities and any other type are refused, naming the type.
docs/verification.md, "A database", has the rules.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import math
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from assay.errors import ProbeError

_TEXT_TYPES = (
    uuid.UUID,
    ipaddress.IPv4Address,
    ipaddress.IPv6Address,
    ipaddress.IPv4Network,
    ipaddress.IPv6Network,
    ipaddress.IPv4Interface,
    ipaddress.IPv6Interface,
)


def to_json(value: Any, where: str) -> Any:
    """``value`` as a JSON value, or ``ProbeError`` saying why ``where`` has none."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ProbeError(f"{where} is {value}, which JSON cannot represent", source=where)
        return value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ProbeError(f"{where} is {value}, which JSON cannot represent", source=where)
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, _TEXT_TYPES):
        return str(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ProbeError(
                    f"{where} has the key {key!r}, a {type(key).__name__}; JSON object keys "
                    "are strings",
                    source=where,
                )
            out[key] = to_json(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, list | tuple):
        return [to_json(item, f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, bytes | bytearray | memoryview):
        raise ProbeError(
            f"{where} holds binary data ({len(value)} bytes), which has no JSON form; encode "
            "it in the query, e.g. encode(col, 'base64') in PostgreSQL or hex(col) in SQLite",
            source=where,
        )
    raise ProbeError(
        f"{where} holds a {type(value).__module__}.{type(value).__qualname__}, which has no "
        "JSON form; cast it to text in the query or return a JSON value",
        source=where,
    )
