"""Bearer tokens with scopes: who may read, act, report, or administer the daemon.

A token is ``NAME:SECRET:SCOPE[,SCOPE...]``. The name identifies a caller (it scopes
idempotency keys and appears in logs); the secret is never logged, answered or recorded,
and is compared in constant time. ``admin`` includes every other scope. With no tokens at
all the daemon is open, which ``ServerConfig.check`` allows on a loopback address only.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Final

from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from assay.server.tokens import Scope, Token, check_distinct


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
        check_distinct(self.tokens)
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
        # The bearer scheme is declared for the OpenAPI document; the route class has
        # already read the same header (``authenticate``).
        return authorize(request, scope)

    return principal


_PRINCIPAL: Final = "assay.principal"
"""Where ``authenticate`` leaves the request's principal in its ASGI scope."""


def authenticate(request: Request) -> Principal:
    """The request's principal from its bearer token: 401 without a known token. Every
    ``/v1`` route asks this first, before it reads the query or the body, so that a caller
    without a token learns nothing else about the request."""
    found = request.scope.get(_PRINCIPAL)
    if isinstance(found, Principal):
        return found
    authenticator: Authenticator = request.app.state.authenticator
    secret = None
    if authenticator.enabled:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        secret = given.strip() if scheme.lower() == "bearer" and given.strip() else None
    who = authenticator.authenticate(secret)
    request.scope[_PRINCIPAL] = who
    return who


def authorize(request: Request, scope: Scope, secret: str | None = None) -> Principal:
    """The request's principal, which must hold ``scope``: 401 without a known token, 403
    without the scope. ``secret`` is the bearer token, read from the request when absent."""
    if secret is None:
        who = authenticate(request)
    else:
        who = request.app.state.authenticator.authenticate(secret)
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
