"""Passwords in a ledger's URL, kept out of everything shown: the URL, and what a database
driver says about it.

``hide_password`` writes a PostgreSQL URL's password (in its userinfo or a ``password`` query
parameter) or a libpq connection string's ``password`` as ``***``; the userinfo is taken to
end at the latest ``@`` any parser could end it at (``userinfo_end``), so a password written
unencoded is hidden whole. ``shows_password`` says whether a message holds any text that could
be the password or a part of it; such a message is not shown at all, and ``withheld_reason``
says why instead, since hiding only the matches would show what they were.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import quote, quote_plus, unquote, unquote_plus

_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_CONNINFO_PASSWORD: Final = re.compile(r"(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'?|(?:\\.|\S)*)")
"""libpq's ``password = value`` in a connection string; the value may be quoted, with
backslash escapes, and is hidden up to its end even when its closing quote is missing."""
_ESCAPE: Final = re.compile(r"\\(.)")
_STOPS: Final = re.compile(r"[@/?#\s'\"\\]+")
"""Where a parser may stop inside a password written in a URL's userinfo, quotes included:
what lies between can reach a message as a host, a port or a quoted token."""
HIDDEN: Final = "***"
_PARAMETER: Final = re.compile(r"([?&])")
"""What begins a query parameter after a URL's userinfo: a ``?``, or an ``&``, also when the
``?`` was taken into a password that holds one (``u:a/b?c@h/db?user=x@y&password=...``)."""


def hide_password(url: str) -> str:
    """``url`` with any password, in its userinfo, a ``password`` query parameter or a
    connection string's ``password=``, as ``***``."""
    scheme = _SCHEME.match(url)
    if scheme is None:
        return _CONNINFO_PASSWORD.sub(rf"\g<1>{HIDDEN}", url)
    rest = url[scheme.end() :]
    end = userinfo_end(rest)
    userinfo = rest[: end + 1]
    user, colon, _ = userinfo.partition(":")
    if colon:
        userinfo = f"{user}:{HIDDEN}@"
    address, *parameters = _PARAMETER.split(rest[end + 1 :])
    for at in range(1, len(parameters), 2):
        key, equals, _ = parameters[at].partition("=")
        if equals and _is_password(key):
            parameters[at] = f"{key}={HIDDEN}"
    return url[: scheme.end()] + userinfo + address + "".join(parameters)


def userinfo_end(rest: str) -> int:
    """Where the userinfo of a URL ends in ``rest``, what follows its ``//``: the ``@`` libpq
    ends it at (the first, unless a ``/`` comes before it) or, if later, the last ``@`` before
    the first ``?``, or the last after it that ends a password holding ``/`` and ``?``
    (``_ends_userinfo``); -1 when there is no userinfo."""
    if rest.startswith("/"):
        return -1  # no authority: sqlite:///path, postgresql:///db
    first = rest.find("@")
    libpq = first if first != -1 and "/" not in rest[:first] else -1
    query = rest.find("?")
    if query == -1:
        return max(libpq, rest.rfind("@"))
    earlier = max(libpq, rest.rfind("@", 0, query))
    at = len(rest)
    while (at := rest.rfind("@", query, at)) != -1:
        if _ends_userinfo(rest, query, at, earlier):
            return at
    return earlier


_HOST: Final = r"(?:\[[^\]]*\]|[^:\[\],]*)(?::[0-9]+)?"
_HOSTS: Final = re.compile(rf"{_HOST}(?:,{_HOST})*")
"""What a URL's authority is when it holds no userinfo: hosts (names, or IPv6 in brackets),
each with its port or none, separated by commas."""
_AUTHORITY_END: Final = re.compile(r"[/?#]")


def _ends_userinfo(rest: str, query: int, at: int, earlier: int) -> bool:
    """Whether the ``@`` at ``at``, after the first ``?`` (at ``query``), could end a userinfo
    whose password holds a ``/`` and a ``?`` as they are (``u:a/b?c@host/db``), when it would
    otherwise end at ``earlier`` (-1 for none): a ``:`` comes before it, and either the ``@``
    is in no ``key=value`` of the query (``u:1/b?c@host``), or no userinfo ends earlier and
    what comes before the first ``/``, ``?`` or ``#`` is no host and port (``u:a/b?x=c@h``).
    So ``?user=a@b`` after a host and port, or after a userinfo, keeps its ``@``."""
    if ":" not in rest[:at]:
        return False  # no password before it to hide
    if "=" not in rest[query + 1 : at].rpartition("&")[2]:
        return True
    authority = _AUTHORITY_END.split(rest, maxsplit=1)[0]
    return earlier == -1 and _HOSTS.fullmatch(authority) is None


def password_texts(conninfo: str) -> frozenset[str]:
    """Every text a driver's message about ``conninfo`` (a URL or a connection string) could
    show of a password it holds: each as written, decoded, encoded again (as ``open_backend``
    re-encodes a query), unescaped, and each piece of one in a URL's userinfo between the
    characters a parser may stop at."""
    written: list[str] = []
    pieces: list[str] = []
    scheme = _SCHEME.match(conninfo)
    if scheme is None:
        for found in _CONNINFO_PASSWORD.finditer(conninfo):
            value = found[2]
            written += [value, _ESCAPE.sub(r"\1", value.strip("'"))]
    else:
        rest = conninfo[scheme.end() :]
        end = userinfo_end(rest)
        if end != -1:
            _, colon, password = rest[:end].partition(":")
            if colon:
                written.append(password)
                pieces += _STOPS.split(password)
        _, *parameters = _PARAMETER.split(rest[end + 1 :])
        for key, _, value in (piece.partition("=") for piece in parameters[1::2]):
            if _is_password(key):
                written.append(value)
    texts = {*pieces, *written}
    for decoded in {*map(unquote, written), *map(unquote_plus, written)}:
        texts |= {decoded, quote(decoded, safe=""), quote_plus(decoded)}
    texts.discard("")
    return frozenset(texts)


def shows_password(message: str, conninfo: str) -> bool:
    """Whether ``message`` holds any of ``password_texts(conninfo)``, in any case."""
    folded = message.casefold()
    return any(text.casefold() in folded for text in password_texts(conninfo))


def withheld_reason(conninfo: str) -> str:
    """What to say instead of a driver's message about ``conninfo`` that shows its password."""
    said = "the driver's reason is withheld, as it shows the password or a part of it; "
    if _SCHEME.match(conninfo) is None:
        return said + (
            "check the connection string's password (in single quotes if it holds a space, "
            "a quote written \\' and a backslash \\\\)"
        )
    return said + (
        "check the URL's user and password, each percent-encoded (% as %25, @ as %40, / as "
        "%2F, ? as %3F, # as %23, : in the user as %3A, a space as %20)"
    )


def _is_password(key: str) -> bool:
    return unquote_plus(key).strip().casefold() == "password"
