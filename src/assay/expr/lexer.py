"""Tokens of the expression language, read with JavaScript's lexical rules.

The lexer recognises every JavaScript punctuator, so that the parser can name a construct
the language leaves out (``=``, ``++``, ``&``) instead of reporting a stray character.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from assay.errors import ExpressionSyntaxError
from assay.json.strings import JS_WHITESPACE, canonical

# Longest first, so that ``!==`` is not read as ``!=`` then ``=``.
_PUNCTUATORS: Final = sorted(
    """>>>= ... === !== **= <<= >>= >>> ?? ?. => == != <= >= && || ++ -- += -= *= /= %= &= |=
    ^= << >> ** ( ) [ ] { } . ; , < > + - * / % & | ^ ! ~ ? : = @ #""".split(),
    key=len,
    reverse=True,
)
_LINE_TERMINATORS: Final = "\n\r\u2028\u2029"
_WHITESPACE: Final = "".join(c for c in JS_WHITESPACE if c not in _LINE_TERMINATORS)
_NUMBER: Final = re.compile(
    r"""
    0[xX](?P<hex>[0-9a-fA-F](?:_?[0-9a-fA-F])*)
  | 0[oO](?P<oct>[0-7](?:_?[0-7])*)
  | 0[bB](?P<bin>[01](?:_?[01])*)
  | (?P<dec>(?:(?:0|[1-9](?:_?[0-9])*)(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)
       (?:[eE][+-]?[0-9](?:_?[0-9])*)?)
    """,
    re.VERBOSE | re.ASCII,
)
_SIMPLE_ESCAPES: Final = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "b": "\b",
    "f": "\f",
    "v": "\v",
}
_MAX_SAFE: Final = 2**53


@dataclass(frozen=True, slots=True)
class Token:
    """One token: ``kind`` is ``number``, ``string``, ``name``, ``punct`` or ``end``."""

    kind: str
    text: str
    value: object
    start: int
    end: int
    newline_before: bool = False


def _is_id_start(char: str) -> bool:
    return char in "$_" or char.isidentifier()


def _is_id_part(char: str) -> bool:
    return char in "$_\u200c\u200d" or ("a" + char).isidentifier()


class Lexer:
    """Turns source text into tokens; every error carries the offending position."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.position = 0

    def error(self, reason: str, position: int) -> ExpressionSyntaxError:
        return ExpressionSyntaxError(reason, self.source, position)

    def next_token(self) -> Token:
        """The next token; at the end of the source, an ``end`` token every time."""
        newline = self._skip_space()
        return self._next(newline)

    def _skip_space(self) -> bool:
        source = self.source
        newline = False
        while self.position < len(source):
            char = source[self.position]
            if char in _LINE_TERMINATORS:
                newline = True
                self.position += 1
            elif char in _WHITESPACE:
                self.position += 1
            elif source.startswith("//", self.position):
                end = len(source)
                for terminator in _LINE_TERMINATORS:
                    found = source.find(terminator, self.position)
                    if found != -1:
                        end = min(end, found)
                self.position = end
            elif source.startswith("/*", self.position):
                end = source.find("*/", self.position + 2)
                if end == -1:
                    raise self.error("unterminated comment", self.position)
                if any(t in source[self.position : end] for t in _LINE_TERMINATORS):
                    newline = True
                self.position = end + 2
            else:
                break
        return newline

    def _next(self, newline: bool) -> Token:
        source = self.source
        start = self.position
        if start >= len(source):
            return Token("end", "", None, start, start, newline)
        char = source[start]
        if (char.isdigit() and char.isascii()) or (
            char == "." and source[start + 1 : start + 2].isdigit()
        ):
            return self._number(start, newline)
        if char in "'\"":
            return self._string(start, newline)
        if char == "`":
            raise self.error(
                "template literals are not supported; use a quoted string and +", start
            )
        if char == "\\":
            raise self.error("escape sequences are not allowed in names", start)
        if _is_id_start(char):
            end = start + 1
            while end < len(source) and _is_id_part(source[end]):
                end += 1
            if source[end : end + 1] == "\\":
                raise self.error("escape sequences are not allowed in names", end)
            self.position = end
            text = source[start:end]
            return Token("name", text, text, start, end, newline)
        for punctuator in _PUNCTUATORS:
            if source.startswith(punctuator, start):
                # `a?.5:b` is a conditional, not an optional chain (ECMA-262 12.8).
                if punctuator == "?." and source[start + 2 : start + 3].isdigit():
                    continue
                self.position = start + len(punctuator)
                return Token("punct", punctuator, punctuator, start, self.position, newline)
        raise self.error(f"unexpected character {char!r}", start)

    def _number(self, start: int, newline: bool) -> Token:
        source = self.source
        match = _NUMBER.match(source, start)
        if match is None:  # pragma: no cover - the caller saw a digit or ".digit"
            raise self.error("malformed number", start)
        end = match.end()
        text = match.group()
        if match.group("dec") is not None:
            if text == "0" and source[end : end + 1].isdigit():
                raise self.error(
                    "numbers may not start with 0 (legacy octal); write 0o17 for octal", start
                )
            value: int | float = float(text.replace("_", ""))
        else:
            digits = match.group("hex") or match.group("oct") or match.group("bin") or ""
            base = 16 if match.group("hex") else 8 if match.group("oct") else 2
            big = int(digits.replace("_", ""), base)
            try:
                value = float(big)
            except OverflowError:
                value = float("inf")
        if end < len(source) and (_is_id_start(source[end]) or source[end].isdigit()):
            if source[end] == "n":
                raise self.error("BigInt literals are not supported", end)
            raise self.error("a number must not be followed directly by a name or digit", end)
        if isinstance(value, float) and value.is_integer() and abs(value) < _MAX_SAFE:
            value = int(value)
        self.position = end
        return Token("number", text, value, start, end, newline)

    def _string(self, start: int, newline: bool) -> Token:
        source = self.source
        quote = source[start]
        position = start + 1
        parts: list[str] = []
        while True:
            if position >= len(source):
                raise self.error("unterminated string", start)
            char = source[position]
            if char == quote:
                break
            if char in "\n\r":
                raise self.error("unterminated string (a line break inside quotes)", position)
            if char != "\\":
                run_end = position + 1
                while run_end < len(source) and source[run_end] not in f"{quote}\\\n\r":
                    run_end += 1
                parts.append(source[position:run_end])
                position = run_end
                continue
            escape, position = self._escape(position)
            parts.append(escape)
        self.position = position + 1
        value = "".join(parts)
        return Token("string", source[start : position + 1], canonical(value), start, position + 1)

    def _escape(self, backslash: int) -> tuple[str, int]:
        source = self.source
        position = backslash + 1
        if position >= len(source):
            raise self.error("unterminated string", backslash)
        char = source[position]
        if char in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[char], position + 1
        if char == "0" and not source[position + 1 : position + 2].isdigit():
            return "\0", position + 1
        if char.isdigit():
            raise self.error(
                "octal escapes are not allowed; use \\x or \\u escapes instead", backslash
            )
        if char == "x":
            digits = source[position + 1 : position + 3]
            if len(digits) != 2 or not _is_hex(digits):
                raise self.error("\\x must be followed by two hex digits", backslash)
            return chr(int(digits, 16)), position + 3
        if char == "u":
            if source[position + 1 : position + 2] == "{":
                close = source.find("}", position + 2)
                digits = source[position + 2 : close] if close != -1 else ""
                if not digits or not _is_hex(digits) or int(digits, 16) > 0x10FFFF:
                    raise self.error("\\u{...} must hold a code point up to 10FFFF", backslash)
                return chr(int(digits, 16)), close + 1
            digits = source[position + 1 : position + 5]
            if len(digits) != 4 or not _is_hex(digits):
                raise self.error("\\u must be followed by four hex digits", backslash)
            return chr(int(digits, 16)), position + 5
        if char == "\r":
            end = position + 2 if source[position + 1 : position + 2] == "\n" else position + 1
            return "", end
        if char in _LINE_TERMINATORS:
            return "", position + 1
        return char, position + 1


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)


class TokenStream:
    """Tokens read on demand, so that a rejection early in a long source costs little."""

    def __init__(self, source: str) -> None:
        self._lexer = Lexer(source)
        self._tokens: list[Token] = []

    def __getitem__(self, index: int) -> Token:
        tokens = self._tokens
        while len(tokens) <= index:
            if tokens and tokens[-1].kind == "end":
                return tokens[-1]
            tokens.append(self._lexer.next_token())
        return tokens[index]
