"""A ledger URL's password never reaches a message: neither the URL shown in it, nor what
libpq or psycopg said about the URL (libpq quotes the text it cannot parse)."""

from __future__ import annotations

import traceback

import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.errors import LedgerError
from assay.ledger import open_backend
from assay.ledger.backends.postgres import PostgresBackend
from assay.ledger.credentials import _STOPS, hide_password, password_texts, shows_password

ACCEPTED = (
    "the accepted forms are sqlite:///relative/path.db, sqlite:////absolute/path.db, "
    "sqlite: (for ./assay.db), postgresql://user:password@host:5432/database[?schema=name], "
    "memory:"
)
WITHHELD = (
    "the driver's reason is withheld, as it shows the password or a part of it; check the "
    "URL's user and password, each percent-encoded (% as %25, @ as %40, / as %2F, ? as %3F, "
    "# as %23, : in the user as %3A, a space as %20)"
)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:hunter2@h:5432/db", "postgresql://u:***@h:5432/db"),
        ("postgresql://u:hunter2%ZZ@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:hun@ter2@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:hun/ter2@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:hun?ter2@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:hun#ter2@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:hun ter2@h/db", "postgresql://u:***@h/db"),
        ("postgres://u:hunter2@[::1:5432/db", "postgres://u:***@[::1:5432/db"),
        ("postgresql://u:p@h/db?user=a@b&password=hunter2", "postgresql://u:***@h/db?user=a@b&password=***"),
        ("postgresql://h/db?pass%77ord=hunter2&schema=s", "postgresql://h/db?pass%77ord=***&schema=s"),
        ("postgresql://h:5432/db?user=a@b", "postgresql://h:5432/db?user=a@b"),
        ("postgresql://hunter@h/db", "postgresql://hunter@h/db"),
        # A password holding both / and ? as they are: the userinfo was taken to end at the last
        # @ before the first ?, so there was none, and the URL was shown as written.
        ("postgresql://u:hun/ter?two@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:hun?ter/two@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:1234/ter?two@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:hun@ter/two?x@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u:hun/ter?two@h/db?sslmode=require", "postgresql://u:***@h/db?sslmode=require"),
        ("postgresql://u:hun/ter?two@h/db?user=a@b&password=x", "postgresql://u:***@b&password=***"),
        # An @ in a query parameter after a host (and port) is no userinfo's end.
        ("postgresql://u:pw@h/db?sslmode=require", "postgresql://u:***@h/db?sslmode=require"),
        ("postgresql://h/db?options=a@b", "postgresql://h/db?options=a@b"),
        ("postgresql://[::1]:5432/db?user=a@b", "postgresql://[::1]:5432/db?user=a@b"),
        ("postgresql://h1:5432,h2:5433/db?user=admin@srv&password=x",
         "postgresql://h1:5432,h2:5433/db?user=admin@srv&password=***"),
        ("host=h password=hunter2 dbname=d", "host=h password=*** dbname=d"),
        ("host=h password = 'hun ter2\\' x' port=1", "host=h password = *** port=1"),
        ("host=h PASSWORD=hun\\ ter2", "host=h PASSWORD=***"),
        ("host=h password='hunter2", "host=h password=***"),
        ("sqlite:////srv/a:b@c.db", "sqlite:////srv/a:b@c.db"),
        ("sqlite:", "sqlite:"),
        ("memory:", "memory:"),
    ],
)  # fmt: skip
def test_hide_password_hides_every_password_a_url_or_connection_string_holds(
    url: str, shown: str
) -> None:
    assert hide_password(url) == shown


PASSWORDS = st.text("ab19:/?@#&[], %", min_size=1)
"""Passwords written as they are, any of a URL's delimiters among them, but no ``=``: with
one, ``u:5432/db?x=y@host`` reads as a host, a port and a query, which it may be."""


@given(PASSWORDS, st.sampled_from(["h/db", "h:5432/db?sslmode=require", "[::1]/db?user=a@b"]))
def test_no_part_of_a_password_written_as_it_is_is_shown(password: str, address: str) -> None:
    """All of it is hidden, and at most what follows it is shown: where an @ in the query
    could end the userinfo too (``u:/?@h/db?user=a@b``), all up to that @ is hidden."""
    url = f"postgresql://u:{password}@{address}"
    shown = hide_password(url)
    assert shown.startswith("postgresql://u:***@")
    assert address.endswith(shown.removeprefix("postgresql://u:***@"))
    texts = password_texts(url)
    if "@" not in address:
        assert shown == f"postgresql://u:***@{address}"
        assert password in texts
    assert {piece for piece in _STOPS.split(password) if piece} <= texts


HOSTS = st.from_regex(r"[a-z][a-z0-9.-]{0,10}(:[0-9]{1,5})?|\[::1\](:5432)?", fullmatch=True)
PARAMETERS = st.lists(
    st.tuples(
        st.from_regex(r"[a-z_]{1,10}", fullmatch=True).filter(lambda key: key != "password"),
        st.text("ab@:/.-", max_size=8),
    ),
    max_size=3,
)


@given(st.lists(HOSTS, min_size=1, max_size=2), PARAMETERS, st.booleans())
def test_an_ordinary_url_stays_readable(
    hosts: list[str], parameters: list[tuple[str, str]], user: bool
) -> None:
    """Only its password is hidden, whatever its query holds (``?options=a@b``)."""
    query = "&".join(f"{key}={value}" for key, value in parameters)
    address = f"{','.join(hosts)}/db{'?' if query else ''}{query}"
    url = f"postgresql://{'u:hunter2@' if user else ''}{address}"
    assert hide_password(url) == f"postgresql://{'u:***@' if user else ''}{address}"
    assert password_texts(url) == ({"hunter2"} if user else set())


def test_the_texts_a_message_could_show_of_a_password() -> None:
    """As written, decoded, encoded again, and each piece where a parser may stop."""
    assert password_texts("postgresql://u:hun@ter2%21@h/db") >= {
        "hun@ter2%21",
        "hun@ter2!",
        "hun%40ter2%21",
        "hun",
        "ter2%21",
    }
    assert password_texts("postgresql://u@h/db?password=a%2Bb+c") >= {
        "a+b c",
        "a+b+c",
        "a%2Bb%20c",
        "a%2Bb%2Bc",
    }
    assert password_texts("host=h password='it\\'s'") >= {"'it\\'s'", "it's"}
    assert password_texts("postgresql://u@h/db") == frozenset()
    assert shows_password('failed to resolve host "TER2%21@h"', "postgresql://u:hun@ter2%21@h")
    assert not shows_password("connection refused", "postgresql://u:hunter2@h/db")


def _said(error: BaseException) -> str:
    """What a traceback of ``error`` would print of it and the exceptions chained to it."""
    said: list[str] = []
    shown: BaseException | None = error
    while shown is not None:
        said.append("".join(traceback.format_exception_only(shown)))
        if shown.__cause__ is not None or shown.__suppress_context__:
            shown = shown.__cause__
        else:
            shown = shown.__context__
    return "".join(said)


# Each holds a password some of whose text libpq or psycopg would have quoted, and the
# pieces of it that no message may hold.
MALFORMED = [
    ("postgresql://u:hunter2%ZZ@127.0.0.1:1/x", ["hunter2"]),
    ("postgresql://u:hunter2%00@127.0.0.1:1/x", ["hunter2"]),
    ("postgresql://u:hunter2 x@127.0.0.1:1/x", ["hunter2"]),
    ("postgresql://u:hun@ter2@127.0.0.1:1/x", ["ter2"]),
    ("postgresql://u:hun?ter2@127.0.0.1:1/x", ["ter2"]),
    ("postgresql://u:hun/ter2@127.0.0.1:1/x", ["ter2"]),
    ("postgresql://u:hun#ter2@127.0.0.1:1/x", ["ter2"]),
    ("postgresql://u:qqhun/zzter?xxtwo@127.0.0.1:1/x", ["qqhun", "zzter", "xxtwo"]),
    ("postgresql://u@127.0.0.1:1/x?password=hunter2%00", ["hunter2"]),
    ("postgresql://u:pw@127.0.0.1:1/x?password=hunter2&connect_timeout=x", ["hunter2"]),
]


@pytest.mark.parametrize(("url", "secrets"), MALFORMED)
def test_a_malformed_postgresql_url_is_refused_without_its_password(
    url: str, secrets: list[str]
) -> None:
    """libpq's 'invalid percent-encoded token: "hunter2%ZZ"' was shown as it was, and a
    password read apart showed its pieces as a host or in the URL."""
    for opened in (lambda: open_backend(url), lambda: PostgresBackend(url)):
        with pytest.raises(LedgerError) as caught:
            opened()
        for secret in secrets:
            assert secret not in _said(caught.value)
            assert secret not in str(caught.value.url)


def test_a_percent_sign_in_a_password_says_how_to_write_it() -> None:
    with pytest.raises(LedgerError) as caught:
        open_backend("postgresql://u:hunter2%ZZ@127.0.0.1:1/x")
    assert str(caught.value) == (
        "cannot open a ledger at 'postgresql://u:***@127.0.0.1:1/x': its user or password "
        "holds a % that does not begin a percent-encoded byte (two hex digits); write % "
        f"itself as %25; {ACCEPTED}"
    )
    with pytest.raises(LedgerError) as caught:
        PostgresBackend("postgresql://u:hunter2%ZZ@127.0.0.1:1/x")
    assert str(caught.value) == (
        f"cannot connect to the PostgreSQL ledger postgresql://u:***@127.0.0.1:1/x: {WITHHELD}"
    )
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        (
            "postgresql://u:hun@ter2@127.0.0.1:1/x",
            "its user or password holds an @, /, ? or # as it is, which parsers read apart; "
            "percent-encode each (@ as %40, / as %2F, ? as %3F, # as %23)",
        ),
        ("postgresql://u:hunter2 x@h/x", "its user or password holds a space; write it as %20"),
        (
            "postgresql://u:hunter2%00@h/x",
            "its user or password holds %00, a zero byte, which libpq refuses",
        ),
    ],
)
def test_a_password_parsers_would_read_apart_is_refused_saying_what_to_encode(
    url: str, reason: str
) -> None:
    with pytest.raises(LedgerError) as caught:
        open_backend(url)
    assert (
        str(caught.value) == f"cannot open a ledger at {hide_password(url)!r}: {reason}; {ACCEPTED}"
    )


def test_a_connection_string_keeps_its_password_out_of_messages() -> None:
    with pytest.raises(LedgerError) as caught:
        PostgresBackend("host=127.0.0.1 port=1 password='hunter2 x' connect_timeout=2 bogus=1")
    assert str(caught.value) == (
        "cannot connect to the PostgreSQL ledger host=127.0.0.1 port=1 password=*** "
        'connect_timeout=2 bogus=1: invalid connection option "bogus"'
    )
    assert "hunter2" not in _said(caught.value)


def test_a_message_without_the_password_is_shown_with_its_cause() -> None:
    with pytest.raises(LedgerError) as caught:
        PostgresBackend("postgresql://u:hunter2@127.0.0.1:1/x?connect_timeout=2")
    assert str(caught.value).startswith(
        "cannot connect to the PostgreSQL ledger postgresql://u:***@127.0.0.1:1/x"
        "?connect_timeout=2: connection failed: "
    )
    assert caught.value.__cause__ is not None
    assert "hunter2" not in _said(caught.value)
