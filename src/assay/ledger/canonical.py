"""RFC 8785 canonical JSON, fast for the JSON a ledger mostly holds.

For JSON without floats, with integers within ±(2**53 - 1) and without characters beyond
U+FFFF (where code-point order, which orjson's ``OPT_SORT_KEYS`` uses, departs from RFC 8785's
UTF-16 order), ``orjson.dumps`` writes exactly the bytes ``rfc8785.dumps`` writes, tens of
times faster: the same escapes (``\\uXXXX`` in lower case for other controls, everything else
literal) and sorted keys. ``canonical_copy`` takes that path when it can prove the value is
such JSON: orjson refuses integers beyond the range, subclasses, non-string keys and lone
surrogates; the text is searched for a number token with a fraction or an exponent, and for
a four-byte UTF-8 sequence; and the text read back (which a ledger needs anyway, for a plain
copy) must equal the value, which catches tuples, enums and ``NaN`` (written as ``null``).
Anything else goes to ``rfc8785``, which also words every refusal. ``tests/test_canonical.py``
and ``tests/test_ledger_canonical.py`` check the two agree on generated JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import orjson
import rfc8785

_SAFE: Final = 2**53 - 1
_OPTIONS: Final = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_STRICT_INTEGER
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
)
_BEYOND_BMP: Final = re.compile(rb"[\xf0-\xf4]")
# In compact JSON a number follows ":", "," or "[", and a float has a "." or an exponent
# after its first digits (1.0, -0.5, 1e-7, 1.5e+300). With the digits and minus signs
# deleted and those characters folded (",", "[" to ":"; "e", "E" to "."), every float leaves
# ":.": text without it has no float. Text inside strings may leave it too; ``_has_float``
# then looks closer. One ``bytes.translate`` costs half a regular expression's search.
_FOLD: Final = bytes.maketrans(b",[eE", b"::..")
_DELETED: Final = b"0123456789-"


def _unwritable(value: object) -> Any:
    raise TypeError(f"{type(value).__name__} is not plain JSON")


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(text: bytes | str) -> Any:
    """Parse RFC 8785 JSON so that encoding the value again gives the same text.

    Every JSON number is an IEEE double there, so an integer literal beyond ±(2**53 - 1)
    (how ``1e20`` is written) is read as the float it is; ``NaN`` and ``Infinity`` are
    refused, as JSON has no such literals.
    """
    if not isinstance(text, str):
        text = text.decode()  # UTF-8 only, as RFC 8785 text is
    return _DECODER.decode(text)


def _number(text: str) -> int | float:
    value = int(text)
    return value if -_SAFE <= value <= _SAFE else float(text)


_DECODER: Final = json.JSONDecoder(parse_int=_number, parse_constant=_not_json)
"""One decoder for every ``loads``: ``json.loads`` with options builds one per call."""


def canonical_json(value: Any) -> bytes:
    """The RFC 8785 canonical JSON of ``value``; ``ValueError``/``TypeError`` if it has none."""
    if type(value) is str:
        # A string is escaped alike by both; rfc8785 words the refusal of a lone surrogate.
        try:
            return orjson.dumps(value)
        except TypeError:
            return rfc8785.dumps(value)
    if value is None:
        return b"null"
    return canonical_copy(value)[0]


def canonical_copy(value: Any) -> tuple[bytes, Any]:
    """The RFC 8785 canonical JSON of ``value``, and a plain copy of ``value`` read back from it.

    Raise as ``rfc8785.dumps`` does when ``value`` is not JSON it can write.
    """
    kind = type(value)
    if kind is dict or kind is list or kind is str or value is None:
        try:
            text = orjson.dumps(value, default=_unwritable, option=_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is one
            pass
        else:
            if (text.isascii() or _BEYOND_BMP.search(text) is None) and not _has_float(text):
                copy = orjson.loads(text)
                if copy == value:
                    return text, copy
    canonical = rfc8785.dumps(value)
    return canonical, loads(canonical)


def _has_float(text: bytes) -> bool:
    """Whether orjson's ``text`` of an object, array or string holds a float token."""
    if b":." not in text.translate(_FOLD, _DELETED):
        return False  # every float token orjson writes would leave it, so there is none
    if b"\\" in text:
        # Escapes occur only inside strings. Dropping each escaped backslash, then each
        # escaped quote (left to right, as a parser pairs them), leaves every quote opening
        # or closing a string; the numbers outside strings are untouched.
        text = text.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Every quote now opens or closes a string: what lies between the strings is
    # punctuation, literals and numbers, and a float is a "." or an "e+"/"e-" there.
    between = b"".join(text.split(b'"')[::2])
    return b"." in between or b"e+" in between or b"e-" in between
