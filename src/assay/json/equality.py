"""JSON deep equality, shared by the declarative form's ``eq`` and the state's comparisons."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.json.path import MISSING


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
