"""Bearer tokens and their scopes, as configured: parsed and checked, no HTTP involved."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

from assay.errors import RequestError

MIN_SECRET_LENGTH: Final = 16
_NAME: Final = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAKE_SECRET: Final = "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
TOKEN_FORM: Final = "NAME:SECRET:SCOPE[,SCOPE...] (scopes: read, act, report, admin)"


class Scope(StrEnum):
    """What a token may do. ``admin`` includes the other three."""

    READ = "read"
    ACT = "act"
    REPORT = "report"
    ADMIN = "admin"


@dataclass(frozen=True)
class Token:
    """A caller's bearer token: ``name``, the ``secret`` it presents, and its ``scopes``."""

    name: str
    secret: str = field(repr=False)
    scopes: frozenset[Scope]

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise RequestError(
                f"a token name is 1 to 64 letters, digits, '_', '.' or '-'; got {self.name!r}",
                field="token",
            )
        if (
            len(self.secret) < MIN_SECRET_LENGTH
            or not self.secret.isprintable()
            or any(c.isspace() for c in self.secret)
        ):
            raise RequestError(
                f"token {self.name!r}: the secret must be at least {MIN_SECRET_LENGTH} printable "
                f"characters without spaces; make one with {MAKE_SECRET}",
                field="token",
            )
        if not self.scopes:
            raise RequestError(
                f"token {self.name!r} has no scopes; give one or more of read, act, report, admin",
                field="token",
            )

    @classmethod
    def parse(cls, text: str, *, source: str = "--token") -> Token:
        """``NAME:SECRET:SCOPES`` (the secret may itself hold ``:``); the error never
        repeats the secret."""
        name, colon, rest = text.partition(":")
        secret, colon2, scopes = rest.rpartition(":")
        if not colon or not colon2 or not secret:
            raise RequestError(
                f"{source}: a token is {TOKEN_FORM}; got one with {text.count(':')} ':' "
                f"(name {name!r})",
                field="token",
            )
        return cls(name, secret, parse_scopes(scopes.split(","), name=name, source=source))

    def allows(self, scope: Scope) -> bool:
        """This token may do what ``scope`` covers."""
        return scope in self.scopes or Scope.ADMIN in self.scopes


def check_distinct(tokens: Iterable[Token]) -> None:
    """Refuse two tokens of one name, or of one secret (which would make the second token's
    scopes unreachable, or grant them to the first's holder); the error never shows a
    secret."""
    names: dict[str, Token] = {}
    secrets: dict[str, Token] = {}
    for token in tokens:
        if token.name in names:
            raise RequestError(
                f"token names must differ; {token.name} is given twice", field="tokens"
            )
        first = secrets.get(token.secret)
        if first is not None:
            raise RequestError(
                f"tokens {first.name!r} and {token.name!r} have the same secret; a secret names "
                f"one token, so give each its own (make one with {MAKE_SECRET})",
                field="tokens",
            )
        names[token.name] = secrets[token.secret] = token


def parse_scopes(names: Iterable[str], *, name: str, source: str) -> frozenset[Scope]:
    """Scope names as ``Scope``s; an unknown name is an error that lists the known ones."""
    scopes: set[Scope] = set()
    for given in names:
        text = given.strip()
        if not text:
            continue
        try:
            scopes.add(Scope(text))
        except ValueError:
            raise RequestError(
                f"{source}: token {name!r} has the unknown scope {text!r}; scopes are "
                f"{', '.join(s.value for s in Scope)}",
                field="token",
            ) from None
    return frozenset(scopes)
