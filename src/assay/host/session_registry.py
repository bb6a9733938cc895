"""``SessionRegistry``: a host's open sessions by id, in the order they were opened, with when
each was last named (for idle expiry) and the latest closed ones remembered, so that a request
naming one is told it closed or expired rather than that there never was one."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Iterator, Mapping

from assay.clock import Clock
from assay.errors import NotFoundError, WrongTypeError
from assay.graph.session import Session

DEFAULT_SESSION = "default"
"""The name that means the host's default session, whatever its id."""
CLOSED_REMEMBERED = 10_000
"""How many closed sessions' ids the host remembers, to say a session was closed rather than
that there never was one."""


class SessionRegistry(Mapping[str, Session]):
    """The open sessions by id, in the order they were opened (a mapping of them), on
    ``clock``; ``default`` is the default session's id, which never expires."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.default = DEFAULT_SESSION
        self._sessions: dict[str, Session] = {}
        # When each opened session (the default one aside) was last named, oldest first.
        self.used: OrderedDict[str, float] = OrderedDict()
        # The latest closed sessions' ids, each with why it is gone.
        self.closed: OrderedDict[str, str] = OrderedDict()
        # Each open or remembered closed session's place in the order sessions were opened,
        # so that a page of sessions can go on after one closed since it was listed.
        self.opened: dict[str, int] = {}
        self._openings = itertools.count(1)

    def __getitem__(self, session_id: str) -> Session:
        return self._sessions[session_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sessions)

    def __len__(self) -> int:
        return len(self._sessions)

    def add(self, session: Session, *, expires: bool = True) -> None:
        """Hold ``session``, opened now (last in the order, a reopened id too); unless
        ``expires`` is false, it expires once idle."""
        self._sessions.pop(session.id, None)  # a reopened id goes last, as it was opened last
        self._sessions[session.id] = session
        self.opened[session.id] = next(self._openings)
        if expires:
            self.used[session.id] = self.clock.monotonic()
        self.closed.pop(session.id, None)

    def find(self, session_id: str | None) -> Session:
        """The session called ``session_id`` (the default session for ``None`` or
        ``DEFAULT_SESSION``), named now; ``NotFoundError`` saying whether it closed or
        never was."""
        key = session_id or DEFAULT_SESSION
        session = self._sessions.get(self.default if key == DEFAULT_SESSION else key)
        if session is None:
            if key in self.closed:
                raise NotFoundError(
                    f"the session {key!r} {self.closed[key]}; what it fired and how each "
                    f"settled is in the ledger (GET /v1/ledger/entries?session={key})",
                    kind="session",
                    id=key,
                )
            raise NotFoundError(
                f"no session is called {key!r}; open one with POST /v1/sessions "
                f"(the default session is {DEFAULT_SESSION!r})",
                kind="session",
                id=key,
            )
        if session.id in self.used:
            self.used[session.id] = self.clock.monotonic()
            self.used.move_to_end(session.id)
        return session

    def page(self, after: str | None, limit: int | None) -> list[Session]:
        """The open sessions opened after session ``after`` (all when ``None``), at most
        ``limit`` of them; ``NotFoundError`` if ``after`` names no session opened and
        remembered."""
        if limit is not None and (type(limit) is not int or limit < 0):
            raise WrongTypeError(
                f"limit must be a whole number ≥ 0, not {limit!r}", parameter="limit"
            )
        start = 0
        if after is not None:
            found = self.opened.get(self.default if after == DEFAULT_SESSION else after)
            if found is None:
                raise NotFoundError(
                    f"after: no session is called {after!r}; page on with the id of the last "
                    "session received, or leave after out to start from the first",
                    kind="session",
                    id=after,
                )
            start = found
        later = (s for s in self._sessions.values() if self.opened[s.id] > start)
        return list(later if limit is None else itertools.islice(later, limit))

    def forget(self, session: Session, why: str) -> None:
        """Let go of ``session``, remembering ``why`` it is gone (the latest
        ``CLOSED_REMEMBERED`` only)."""
        del self._sessions[session.id]
        self.used.pop(session.id, None)
        self.closed[session.id] = why
        if len(self.closed) > CLOSED_REMEMBERED:
            forgotten, _ = self.closed.popitem(last=False)
            self.opened.pop(forgotten, None)

    def idle(self, idle_s: float) -> Iterator[Session]:
        """The sessions no request had named for ``idle_s`` or longer as this began, oldest
        first, each looked at only once the caller is done with the one before (closing it
        takes time, during which a later one may be named or fire). A busy one
        (``SessionStatistics.busy``) is not idle, and counts as named then."""
        now = self.clock.monotonic()
        for session_id, used in list(self.used.items()):
            if now - used < idle_s:
                break  # oldest first: every later one was named more recently
            session = self._sessions.get(session_id)
            if session is None:  # closed meanwhile
                continue
            if session.statistics().busy:
                self.used[session_id] = now  # looked at again later
                self.used.move_to_end(session_id)
                continue
            yield session

    def drain(self) -> list[Session]:
        """Let go of every open session, answering them (the host is stopping)."""
        sessions = list(self._sessions.values())
        self._sessions.clear()
        return sessions
