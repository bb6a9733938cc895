"""RFC 8785 canonical JSON, fast for the JSON a ledger mostly holds.

For JSON without floats, with integers within ±(2**53 - 1) and without characters beyond
U+FFFF (where code-point order, which ``sort_keys`` uses, departs from RFC 8785's UTF-16
order), ``json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`` in C writes
exactly the bytes ``rfc8785.dumps`` writes in Python, several times faster. ``canonical_copy``
takes that path when it can prove the value is such JSON, by reading the text back (which a
ledger needs anyway, for a plain copy) and comparing; anything else goes to ``rfc8785``, which
also words every refusal. ``tests/test_canonical.py`` checks the two agree on generated JSON.
"""

from __future__ import annotations

import json
import json.encoder
import json.scanner
import re
from typing import Any, Final

import rfc8785

_SAFE: Final = 2**53 - 1
_BEYOND_BMP: Final = re.compile("[\U00010000-\U0010ffff]")


def _unsupported(value: object) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")


# json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
# without its per-call set-up: the C encoder, made once (no circularity check: a cycle ends
# in RecursionError, and rfc8785 then says so).
_ENCODE: Final = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
    None, _unsupported, json.encoder.encode_basestring, None, ":", ",", True, False, False
)
_QUOTE: Final = json.encoder.encode_basestring


class _NotPlainError(Exception):
    """The text holds a float or an integer beyond ±(2**53 - 1): ``rfc8785`` must write it."""


def _plain_int(text: str) -> int:
    value = int(text)
    if not -_SAFE <= value <= _SAFE:
        raise _NotPlainError
    return value


def _no_float(text: str) -> Any:
    raise _NotPlainError


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_SCAN_PLAIN: Final = json.scanner.c_make_scanner(  # type: ignore[attr-defined]
    json.JSONDecoder(parse_int=_plain_int, parse_float=_no_float, parse_constant=_not_json)
)


def loads(text: bytes | str) -> Any:
    """Parse RFC 8785 JSON so that encoding the value again gives the same text.

    Every JSON number is an IEEE double there, so an integer literal beyond ±(2**53 - 1)
    (how ``1e20`` is written) is read as the float it is; ``NaN`` and ``Infinity`` are
    refused, as JSON has no such literals.
    """
    return json.loads(text, parse_int=_number, parse_constant=_not_json)


def _number(text: str) -> int | float:
    value = int(text)
    return value if -_SAFE <= value <= _SAFE else float(text)


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical JSON of ``value``; ``ValueError``/``TypeError`` if it has none."""
    if value is None:
        return b"null"
    if type(value) is str:
        # A string is written alike by both (key order is not in question); rfc8785 words
        # the refusal of a lone surrogate.
        text: str = _QUOTE(value)
        try:
            return text.encode()
        except UnicodeEncodeError:
            return rfc8785.dumps(value)
    return canonical_copy(value)[0]


def canonical_copy(value: Any) -> tuple[bytes, Any]:
    """The RFC 8785 canonical JSON of ``value``, and a plain copy of ``value`` read back from it.

    Raise as ``rfc8785.dumps`` does when ``value`` is not JSON it can write.
    """
    try:
        text = "".join(_ENCODE(value, 0))
        if text.isascii() or not _BEYOND_BMP.search(text):
            # The read-back finds floats and large integers; the comparison finds what
            # json.dumps writes but RFC 8785 refuses or writes otherwise (non-string keys,
            # tuples, subclasses that compare unequal to what they wrote).
            copy, end = _SCAN_PLAIN(text, 0)
            if end == len(text) and type(copy) is type(value) and copy == value:
                return text.encode(), copy  # a lone surrogate fails here, as in rfc8785
    except (_NotPlainError, ValueError, TypeError, RecursionError, StopIteration):
        pass
    canonical = rfc8785.dumps(value)
    return canonical, loads(canonical)
