"""Ledger reads and proofs: entries, one entry, inclusion and consistency proofs, the tree
head, and a full re-verification (admin).

The handlers are plain functions, so FastAPI runs them in its thread pool: a backend read
(SQLite, PostgreSQL) never holds up the event loop that fires and verifies.
"""

from __future__ import annotations

from typing import Annotated, Any, Final

from fastapi import APIRouter, Depends, Path, Query

from assay.errors import NotFoundError, ProofError
from assay.host import Host
from assay.host.wire import EntryView
from assay.ledger.entry import DRAFTED_KINDS, Entry
from assay.ledger.proof import ConsistencyProof, InclusionProof, TreeHead
from assay.ledger.verification import LedgerReport
from assay.server.auth import Principal, require
from assay.server.declared import RFC3339, errors
from assay.server.json_body import JSONRoute
from assay.server.query import known_query, named, whole
from assay.server.state import host_of
from assay.server.tokens import Scope

router = APIRouter(
    prefix="/v1/ledger", tags=["ledger"], dependencies=[Depends(known_query)], route_class=JSONRoute
)

HostDependency = Annotated[Host, Depends(host_of)]
Reader = Annotated[Principal, Depends(require(Scope.READ))]
MAX_LIMIT: Final = 1000
EVERY: Final = "leave {name} out for the entries of every {name}"
TIME: Final[dict[str, Any]] = {"format": "date-time", "pattern": RFC3339}


@router.get(
    "/entries",
    response_model=list[EntryView],
    responses=errors(reads_entries=True),
    summary="Entries in seq order, after a seq, filtered by kind, session, transition, run, time",
)
def entries(
    *,
    host: HostDependency,
    who: Reader,
    after: Annotated[
        int, whole("after", 0), Query(ge=0, description="only entries with a greater seq")
    ] = 0,
    limit: Annotated[int, whole("limit", 1, MAX_LIMIT), Query(ge=1, le=MAX_LIMIT)] = 100,
    kind: Annotated[
        str | None,
        Query(
            max_length=40,
            description="fire, refusal, settlement, verdict, ...",
            json_schema_extra={"enum": sorted(DRAFTED_KINDS)},
        ),
    ] = None,
    session: Annotated[
        str | None,
        named("session", EVERY.format(name="session")),
        Query(min_length=1, max_length=200),
    ] = None,
    transition: Annotated[
        str | None,
        named("transition", EVERY.format(name="transition")),
        Query(min_length=1, max_length=200),
    ] = None,
    run: Annotated[
        str | None,
        named("run", "leave run out for the entries of every run, and those of none"),
        Query(min_length=1, max_length=200),
    ] = None,
    since: Annotated[
        str | None,
        Query(
            max_length=40,
            description="only entries at or after this RFC 3339 time",
            json_schema_extra=TIME,
        ),
    ] = None,
    until: Annotated[
        str | None,
        Query(
            max_length=40,
            description="only entries before this RFC 3339 time",
            json_schema_extra=TIME,
        ),
    ] = None,
) -> list[EntryView]:
    """Page on with ``after`` = the last seq received. Times carry a zone
    (``2026-01-01T00:00:00Z``); ``since`` is inclusive, ``until`` exclusive."""
    found = host.ledger.query(
        after=after,
        limit=limit,
        kind=kind,
        session=session,
        transition=transition,
        run=run,
        since=since,
        until=until,
    )
    return [_view(entry) for entry in found]


@router.get(
    "/entries/{seq}",
    response_model=EntryView,
    responses=errors(404, reads_entries=True),
    summary="One entry",
)
def entry(
    seq: Annotated[int, whole("seq", 1), Path(ge=1)], host: HostDependency, who: Reader
) -> EntryView:
    """Entry ``seq`` as stored."""
    found = host.ledger.entry(seq)
    if found is None:
        raise _no_entry(seq, host.ledger.tree_head().size)
    return _view(found)


@router.get(
    "/proofs/inclusion/{seq}",
    response_model=InclusionProof,
    responses=errors(404, reads_entries=True),
    summary="Proof that entry seq is in the tree of size entries (the current tree)",
)
def inclusion(
    seq: Annotated[int, whole("seq", 1), Path(ge=1)],
    host: HostDependency,
    who: Reader,
    size: Annotated[
        int | None, whole("size", 1), Query(ge=1, description="the tree size; now if absent")
    ] = None,
) -> InclusionProof:
    """An RFC 9162 audit path for the entry's leaf."""
    head = host.ledger.tree_head()
    if seq > head.size:
        raise _no_entry(seq, head.size)
    if size is not None and not seq <= size <= head.size:
        raise ProofError(
            f"size must be between {seq} (the entry's seq: a smaller tree does not hold it) and "
            f"the tree's size ({head.size}), not {size}; leave size out for the current tree",
            parameter="size",
        )
    return host.ledger.prove(seq, size)


@router.get(
    "/proofs/consistency",
    response_model=ConsistencyProof,
    responses=errors(reads_entries=True),
    summary="Proof that the tree of old entries is a prefix of the tree of new entries",
)
def consistency(
    host: HostDependency,
    who: Reader,
    old: Annotated[int, whole("old", 1), Query(ge=1, description="the older tree size")],
    new: Annotated[
        int | None, whole("new", 1), Query(ge=1, description="the newer size; now if absent")
    ] = None,
) -> ConsistencyProof:
    """An RFC 9162 consistency proof between two tree sizes."""
    size = host.ledger.tree_head().size
    if size == 0:
        raise ProofError(
            "the ledger is empty, so there is no tree to prove consistent yet; ask again once "
            "it holds an entry",
            parameter="old",
        )
    if new is not None and not old <= new <= size:
        low = f"old ({old})" if old <= size else "old"
        raise ProofError(
            f"new must be between {low} and the tree's size ({size}), not {new}; leave new out "
            "for the current tree",
            parameter="new",
        )
    top, what = (size, "the tree's size") if new is None else (new, "new")
    if old > top:
        raise ProofError(f"old must be between 1 and {what} ({top}), not {old}", parameter="old")
    return host.ledger.consistency(old, new)


@router.get(
    "/head",
    response_model=TreeHead,
    responses=errors(reads_entries=True),
    summary="Size and Merkle root",
)
def head(host: HostDependency, who: Reader) -> TreeHead:
    """The tree head, after taking in what other daemons stored."""
    return host.ledger.tree_head()


@router.get(
    "/verify",
    response_model=LedgerReport,
    responses=errors(),
    summary="Re-check every entry's hash chain, the Merkle tree and checkpoints (admin)",
)
def verify(
    host: HostDependency, who: Annotated[Principal, Depends(require(Scope.ADMIN))]
) -> LedgerReport:
    """Reads the whole ledger: ``problem`` names the first bad entry, if any."""
    return host.ledger.verify()


def _view(entry: Entry) -> EntryView:
    return EntryView(**entry.to_dict())


def _no_entry(seq: int, size: int) -> NotFoundError:
    held = f"it holds entries 1 to {size}" if size else "it is empty"
    return NotFoundError(f"the ledger has no entry {seq}; {held}", kind="entry", id=str(seq))
