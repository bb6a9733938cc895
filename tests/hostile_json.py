"""A corpus of hostile JSON bodies, shared by the HTTP and MCP tests (issue 32, part 3): each
breaks one rule of reading JSON text (a number too long to convert, nesting too deep, a key
given twice, half a surrogate pair, non-JSON numbers, bytes that are not UTF-8, ...)."""

from __future__ import annotations

BIG = "9" * 5000
DEEP = "[" * 100_000 + "]" * 100_000

CORPUS: dict[str, bytes] = {
    "integer of 5,000 digits in args": b'{"action": "inbox.send", "args": {"n": %s}}'
    % BIG.encode(),
    "negative integer of 5,000 digits at the top": b'{"timeout_ms": -%s}' % BIG.encode(),
    "integer of 5,000 digits in an array": b'{"values": {"a": [1, %s]}}' % BIG.encode(),
    "integer of 5,000 digits after a byte order mark": b"\xef\xbb\xbf"
    + b'{"values": {"a": %s}}' % BIG.encode(),
    "nesting 100,000 levels deep": b'{"values": {"a": ' + DEEP.encode() + b"}}",
    "a key given twice": b'{"values": {"a": 1, "a": 2}, "values": {}}',
    "half a surrogate pair": b'{"action": "\\ud800", "values": {"a": "\\udfff"}}',
    "NaN": b'{"values": {"a": NaN}, "args": {"a": NaN}}',
    "Infinity": b'{"values": {"a": -Infinity}, "args": {"a": Infinity}}',
    "a float beyond a double": b'{"values": {"a": 1e400}, "args": {"a": 1e400}}',
    "bytes that are not UTF-8": b'{"values": {"a": "\xff\xfe"}}',
    "truncated": b'{"values": {"a": ',
    "not an object": b"[1, 2, 3]",
}
