"""JavaScript strings are sequences of UTF-16 code units; Python strings are code points.

assay keeps strings in one canonical Python form: an astral character is one Python character
and only an unpaired surrogate appears as a surrogate code point. Operations that index, slice
or measure work on "unit strings", where every code unit is one Python character; for the
common case (no astral characters) a string is its own unit string and nothing is copied.
"""

from __future__ import annotations

import re
from typing import Final

_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_BMP_LIMIT: Final = "\uffff"

# WhiteSpace and LineTerminator of ECMA-262: what trim() removes and Number() skips.
JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def _split_pair(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def to_units(text: str) -> str:
    """The unit string of ``text``: astral characters split into their surrogate pairs."""
    if text.isascii() or max(text) <= _BMP_LIMIT:
        return text
    return _ASTRAL.sub(_split_pair, text)


def canonical(text: str) -> str:
    """Join adjacent surrogate code points that form a pair back into one character."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def utf16_length(text: str) -> int:
    """``text.length``."""
    if text.isascii():
        return len(text)
    return len(text) + len(_ASTRAL.findall(text))


def utf16_less(a: str, b: str) -> bool:
    """``a < b`` by UTF-16 code units, which differs from code point order past U+E000."""
    if a.isascii() or b.isascii():
        return a < b
    return a.encode("utf-16-be", "surrogatepass") < b.encode("utf-16-be", "surrogatepass")
