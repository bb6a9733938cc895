"""RFC 6901 JSON pointers: ``/orders/0/status`` selects a value inside a JSON document.

A pointer is parsed once (``JsonPointer("/a/b")``, which rejects malformed text) and then
resolved against many documents; a pointer that does not resolve says which token failed
and what was there instead.
"""

from __future__ import annotations

import re
from typing import Any

from assay.errors import ProbeConfigError
from assay.json.path import json_type_name

_INDEX = re.compile(r"0|[1-9][0-9]*")
_BAD_ESCAPE = re.compile(r"~(?![01])")


class JsonPointer:
    """A parsed JSON pointer; ``resolve(document)`` returns the value it selects."""

    __slots__ = ("text", "tokens")

    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise ProbeConfigError(
                f"a JSON pointer must be a string, got {type(text).__name__}", parameter="pointer"
            )
        if text and not text.startswith("/"):
            raise ProbeConfigError(
                f"invalid JSON pointer {text!r}: it must be empty or start with '/' "
                f"(write '/{text}' to select the key {text!r})",
                parameter="pointer",
            )
        if bad := _BAD_ESCAPE.search(text):
            raise ProbeConfigError(
                f"invalid JSON pointer {text!r} at position {bad.start()}: '~' must be "
                "followed by 0 or 1 (write ~0 for '~' and ~1 for '/')",
                parameter="pointer",
            )
        self.text = text
        self.tokens: tuple[str, ...] = tuple(
            token.replace("~1", "/").replace("~0", "~") for token in text.split("/")[1:]
        )

    def __repr__(self) -> str:
        return f"JsonPointer({self.text!r})"

    def resolve(self, document: Any) -> Any:
        """The value the pointer selects; ``LookupError`` names the token that failed."""
        value = document
        for depth, token in enumerate(self.tokens):
            if isinstance(value, dict):
                if token not in value:
                    raise LookupError(f"{self._at(depth)} has no key {token!r}")
                value = value[token]
            elif isinstance(value, list):
                if not _INDEX.fullmatch(token):
                    raise LookupError(
                        f"{self._at(depth)} is an array, and {token!r} is not an array index"
                    )
                index = int(token)
                if index >= len(value):
                    count = len(value)
                    raise LookupError(
                        f"{self._at(depth)} has {count} element{'' if count == 1 else 's'}, "
                        f"so there is no index {index}"
                    )
                value = value[index]
            else:
                raise LookupError(
                    f"{self._at(depth)} is {json_type_name(value)}, so it has no {token!r}"
                )
        return value

    def _at(self, depth: int) -> str:
        """The pointer text of the first ``depth`` tokens, as a person would name the place."""
        if depth == 0:
            return "the document"
        prefix = "".join(
            "/" + token.replace("~", "~0").replace("/", "~1") for token in self.tokens[:depth]
        )
        return repr(prefix)
