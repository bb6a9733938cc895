"""Opening a ledger by URL: ``sqlite:///path.db``, ``postgresql://...`` or ``memory:``."""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from assay.clock import SYSTEM_CLOCK, Clock
from assay.defaults import DEFAULT_LEDGER_URL
from assay.errors import LedgerError
from assay.ledger.backends.protocol import LedgerBackend
from assay.ledger.credentials import hide_password, userinfo_end
from assay.ledger.ledger import Ledger
from assay.redaction import Redaction

DEFAULT_URL: Final = DEFAULT_LEDGER_URL
"""The embedded default: ``assay.db`` in the working directory."""

ACCEPTED: Final = (
    "sqlite:///relative/path.db",
    "sqlite:////absolute/path.db",
    "sqlite: (for ./assay.db)",
    "postgresql://user:password@host:5432/database[?schema=name]",
    "memory:",
)


def open_backend(url: str = DEFAULT_URL, *, create: bool = True) -> LedgerBackend:
    """The backend ``url`` names; ``LedgerError`` listing the accepted forms otherwise.

    A SQLite file or PostgreSQL schema without a ledger gets one, unless ``create`` is false
    (for reading): then it is refused with a ``LedgerError`` and left as it was.
    """
    scheme, _, rest = url.partition(":")
    scheme = scheme.lower()
    if scheme == "memory" and rest in ("", "//"):
        from assay.ledger.backends.memory import MemoryBackend

        return MemoryBackend()
    if scheme == "sqlite":
        return _sqlite(url, rest, create)
    if scheme in ("postgresql", "postgres") and rest.startswith("//"):
        return _postgres(url, create)
    raise _unaccepted(url, "unknown kind of ledger")


def open_ledger(
    url: str = DEFAULT_URL,
    *,
    redaction: Redaction | None = None,
    clock: Clock = SYSTEM_CLOCK,
    create: bool = True,
) -> Ledger:
    """A ``Ledger`` on the backend ``url`` names (see ``open_backend``)."""
    return Ledger(open_backend(url, create=create), redaction=redaction, clock=clock)


def _sqlite(url: str, rest: str, create: bool) -> LedgerBackend:
    from assay.ledger.backends.sqlite import SQLiteBackend

    if rest in ("", "//", "///"):
        return SQLiteBackend("assay.db", create=create)
    if not rest.startswith("///") or "?" in rest or "#" in rest:
        raise _unaccepted(url, "a SQLite URL is sqlite:/// followed by the file's path")
    return SQLiteBackend(rest[3:], create=create)


def _postgres(url: str, create: bool) -> LedgerBackend:
    from assay.ledger.backends.postgres import PostgresBackend

    rest = url.partition("://")[2]
    problem = _userinfo_problem(rest[: max(userinfo_end(rest), 0)])
    if problem is not None:
        raise _unaccepted(url, problem)
    try:
        parts = urlsplit(url)
    except ValueError as error:  # an unclosed IPv6 bracket, say
        raise _unaccepted(url, f"it cannot be read as a URL ({error})") from None
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [value for key, value in pairs if key == "schema"]
    if len(schemas) > 1 or (schemas and not schemas[0]):
        raise _unaccepted(url, "give at most one non-empty schema parameter")
    others = urlencode([(key, value) for key, value in pairs if key != "schema"])
    conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, others, parts.fragment))
    return PostgresBackend(conninfo, schema=schemas[0] if schemas else "public", create=create)


_NOT_A_BYTE: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _userinfo_problem(userinfo: str) -> str | None:
    """What in a URL's ``userinfo`` libpq would refuse, quoting it, or read apart from how
    the URL reads; said without quoting any of it, as it holds the password."""
    if any(stop in userinfo for stop in "@/?#"):
        return (
            "its user or password holds an @, /, ? or # as it is, which parsers read apart; "
            "percent-encode each (@ as %40, / as %2F, ? as %3F, # as %23)"
        )
    if any(character.isspace() for character in userinfo):
        return "its user or password holds a space; write it as %20"
    if _NOT_A_BYTE.search(userinfo):
        return (
            "its user or password holds a % that does not begin a percent-encoded byte "
            "(two hex digits); write % itself as %25"
        )
    if "%00" in userinfo:
        return "its user or password holds %00, a zero byte, which libpq refuses"
    return None


def _unaccepted(url: str, reason: str) -> LedgerError:
    shown = hide_password(url)
    return LedgerError(
        f"cannot open a ledger at {shown!r}: {reason}; the accepted forms are "
        + ", ".join(ACCEPTED),
        url=shown,
    )
