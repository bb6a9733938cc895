"""Bearer tokens with scopes: who may read, act, report, or administer the daemon.

A token is ``NAME:SECRET:SCOPE[,SCOPE...]``. The name identifies a caller (it scopes
idempotency keys and appears in logs); the secret is never logged, answered or recorded,
and is compared in constant time. ``admin`` includes every other scope. With no tokens at
all the daemon is open, which ``ServerConfig.check`` allows on a loopback address only.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

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


@dataclass(frozen=True)
class Principal:
    """Who made a request: a token's name and scopes (anonymous with every scope when the
    daemon runs without tokens)."""

    name: str
    scopes: frozenset[Scope]


ANONYMOUS: Final = Principal("", frozenset(Scope))

_bearer = HTTPBearer(auto_error=False, description="a token given to `assay serve --token`")


class Authenticator:
    """Checks bearer tokens against the configured ones in constant time."""

    def __init__(self, tokens: Iterable[Token]) -> None:
        self.tokens = tuple(tokens)
        names = [t.name for t in self.tokens]
        duplicated = sorted({n for n in names if names.count(n) > 1})
        if duplicated:
            raise RequestError(
                f"token names must differ; {', '.join(duplicated)} is given twice", field="token"
            )
        self._digests = [(_digest(t.secret), t) for t in self.tokens]

    @property
    def enabled(self) -> bool:
        """Requests need a token (some are configured)."""
        return bool(self.tokens)

    def authenticate(self, secret: str | None) -> Principal:
        """The principal whose secret this is; 401 ``HTTPException`` when none is."""
        if not self.enabled:
            return ANONYMOUS
        if secret is None:
            raise HTTPException(
                401,
                "this route needs a bearer token: send 'Authorization: Bearer <secret>'",
                headers={"WWW-Authenticate": 'Bearer realm="assay"'},
            )
        given = _digest(secret)
        found: Token | None = None
        for digest, token in self._digests:  # no early exit: time does not say which matched
            if hmac.compare_digest(digest, given):
                found = token
        if found is None:
            raise HTTPException(
                401,
                "the bearer token is not one this daemon knows; check the secret you send",
                headers={"WWW-Authenticate": 'Bearer realm="assay", error="invalid_token"'},
            )
        return Principal(found.name, found.scopes)


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).digest()


def require(scope: Scope) -> Callable[..., Coroutine[Any, Any, Principal]]:
    """A FastAPI dependency: the request's principal, which must hold ``scope`` (403)."""

    async def principal(
        request: Request,
        credentials: HTTPAuthorizationCredentials | None = Security(_bearer),  # noqa: B008
    ) -> Principal:
        secret = credentials.credentials if credentials is not None else None
        return authorize(request, scope, secret)

    return principal


def authorize(request: Request, scope: Scope, secret: str | None = None) -> Principal:
    """The request's principal, which must hold ``scope``: 401 without a known token, 403
    without the scope. ``secret`` is the bearer token, read from the request when absent."""
    authenticator: Authenticator = request.app.state.authenticator
    if secret is None and authenticator.enabled:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        secret = given.strip() if scheme.lower() == "bearer" and given.strip() else None
    who = authenticator.authenticate(secret)
    if scope in who.scopes or Scope.ADMIN in who.scopes:
        return who
    held = ", ".join(sorted(s.value for s in who.scopes))
    raise HTTPException(
        403,
        f"token {who.name!r} lacks the {scope.value!r} scope that {request.method} "
        f"{request.url.path} needs (it has {held}); use a token with {scope.value!r} or admin",
        headers={
            "WWW-Authenticate": f'Bearer realm="assay", error="insufficient_scope", '
            f'scope="{scope.value}"'
        },
    )
