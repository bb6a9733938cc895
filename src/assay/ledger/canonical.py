"""RFC 8785 canonical JSON, fast for the JSON a ledger holds.

Plain JSON (exactly dict with string keys, list, str, int within ±(2**53 - 1), finite
float, bool and None) is written in one pass by ``_canonical``, a small C module, which also
builds the plain copy the text reads back as. Anything else (a subclass, a tuple, a
non-string key, a big integer, NaN, a lone surrogate), and everything where the C module
was not built (``compiled``), goes to the ``rfc8785`` package, which writes what it can and
words every refusal. ``tests/test_canonical.py`` checks the two agree on generated JSON,
byte for byte, refusals included.
"""

from __future__ import annotations

import json
from typing import Any, Final

import rfc8785

from assay.ledger import compiled

_SAFE: Final = 2**53 - 1


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
    text = compiled.canonical(value)
    if text is not None:
        return text
    return rfc8785.dumps(value)


def canonical_copy(value: Any) -> tuple[bytes, Any]:
    """The RFC 8785 canonical JSON of ``value``, and a plain copy of ``value`` read back from it.

    Raise as ``rfc8785.dumps`` does when ``value`` is not JSON it can write.
    """
    found = compiled.canonical_copy(value)
    if found is not None:
        return found
    canonical = rfc8785.dumps(value)
    return canonical, loads(canonical)
