"""The timeline's view model, read from the ledger alone.

Everything the page shows comes from stored entries: a transition is its ``fire`` (or
``refusal``) entry joined with its ``settlement`` entry; a verify answer is a ``verdict``
entry without a run; a workflow run is every entry carrying that run id. So what a person
reads on the page is what the ledger proves, and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.ledger.entry import Entry
from assay.ledger.ledger import Ledger
from assay.timeline.check import CheckStatus

DEFAULT_WINDOW = 1000
"""How many of the latest entries the page reads."""


@dataclass
class TransitionView:
    """One fire and how it settled, from its ledger entries."""

    session: str
    transition: str
    action: str
    source: str
    args: Any
    fired_at: str
    fire_seq: int
    status: str = "pending"
    settled_at: str | None = None
    settle_seq: int | None = None
    narrative: str | None = None
    changed_fields: list[dict[str, Any]] = field(default_factory=list)
    already_true: list[dict[str, Any]] | None = None
    error: str | None = None
    refusal: str | None = None
    contract: str | None = None


@dataclass
class SessionView:
    """A session's transitions in the order they were fired."""

    id: str
    transitions: list[TransitionView] = field(default_factory=list)


@dataclass
class VerdictView:
    """A verify answer or a workflow step's verdict."""

    seq: int
    timestamp: str
    session: str | None
    run: str | None
    kind: str
    passed: bool | None
    narrative: str | None
    step: str | None = None
    critique: str | None = None
    criteria: list[dict[str, Any]] = field(default_factory=list)
    changed_fields: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class RunView:
    """A workflow run: its verdicts, commits, escalations, parks and resumes, in order."""

    id: str
    events: list[VerdictView] = field(default_factory=list)


@dataclass
class Timeline:
    """What the page shows: sessions, verify verdicts, runs, and the ledger's status: whether
    it ``verified``, what that covers (``covered``: when, how many entries) and in more
    words (``verification``), as of the check that covered its first ``checked`` entries,
    started at ``checked_at`` (RFC 3339)."""

    size: int
    first_seq: int
    root: str
    verified: bool | None
    verification: str
    covered: str
    checked: int | None
    checked_at: str | None
    sessions: list[SessionView]
    verdicts: list[VerdictView]
    runs: list[RunView]


def build_timeline(
    ledger: Ledger,
    *,
    window: int = DEFAULT_WINDOW,
    check: CheckStatus | None = None,
) -> Timeline:
    """The timeline of the latest ``window`` entries, with ``check``, the ledger's last full
    check (none: not checked)."""
    head = ledger.tree_head()
    first = max(1, head.size - window + 1)
    entries = ledger.read(first, head.size + 1) if head.size else []
    sessions: dict[str, SessionView] = {}
    transitions: dict[tuple[str, str], TransitionView] = {}
    verdicts: list[VerdictView] = []
    runs: dict[str, RunView] = {}
    for entry in entries:
        if entry.run is not None:
            runs.setdefault(entry.run, RunView(entry.run)).events.append(_run_event(entry))
            continue
        if entry.kind in ("fire", "refusal") and entry.transition and entry.session:
            row = _fired(entry)
            transitions[(entry.session, entry.transition)] = row
            sessions.setdefault(entry.session, SessionView(entry.session)).transitions.append(row)
        elif entry.kind == "settlement" and entry.transition and entry.session:
            known = transitions.get((entry.session, entry.transition))
            if known is not None:
                _settle(known, entry)
        elif entry.kind == "verdict":
            verdicts.append(_verdict(entry))
    return Timeline(
        size=head.size,
        first_seq=first,
        root=head.root,
        verified=check.ok if check is not None else None,
        verification=_described(check),
        covered=check.covered if check is not None else "",
        checked=check.size if check is not None else None,
        checked_at=check.started if check is not None else None,
        sessions=list(sessions.values()),
        verdicts=verdicts,
        runs=list(runs.values()),
    )


def _fired(entry: Entry) -> TransitionView:
    body = entry.body if isinstance(entry.body, dict) else {}
    refused = entry.kind == "refusal"
    return TransitionView(
        session=entry.session or "",
        transition=entry.transition or "",
        action=str(body.get("action", "")),
        source=str(body.get("source", "")),
        args=body.get("args", {}),
        fired_at=entry.timestamp,
        fire_seq=entry.seq,
        status="refused" if refused else "pending",
        already_true=body.get("already_true"),
        error=body.get("error") if refused else None,
        refusal=body.get("refusal"),
        contract=body.get("contract"),
        settle_seq=entry.seq if refused else None,
    )


def _settle(row: TransitionView, entry: Entry) -> None:
    body = entry.body if isinstance(entry.body, dict) else {}
    outcome = body.get("outcome") or {}
    row.status = str(body.get("answer", "settled"))
    row.settled_at = entry.timestamp
    row.settle_seq = entry.seq
    row.narrative = outcome.get("narrative")
    row.changed_fields = list(outcome.get("changed_fields") or body.get("commit") or [])
    row.error = body.get("error")


def _verdict(entry: Entry) -> VerdictView:
    body = entry.body if isinstance(entry.body, dict) else {}
    outcome = body.get("outcome")
    if not isinstance(outcome, dict):
        outcome = {}
    return VerdictView(
        seq=entry.seq,
        timestamp=entry.timestamp,
        session=entry.session,
        run=entry.run,
        kind=entry.kind,
        passed=outcome.get("passed", body.get("passed")),
        narrative=outcome.get("narrative", body.get("narrative")),
        changed_fields=list(outcome.get("changed_fields") or []),
    )


def _run_event(entry: Entry) -> VerdictView:
    body = entry.body if isinstance(entry.body, dict) else {}
    nested = body.get("verdict")
    verdict: dict[str, Any] = nested if isinstance(nested, dict) else body
    criteria = verdict.get("criteria") or []
    passed = verdict.get("passed") if entry.kind == "verdict" else None
    where = [f"attempt {body['attempt']}"] if "attempt" in body else []
    where += [f"iteration {body['iteration']}"] if "iteration" in body else []
    return VerdictView(
        seq=entry.seq,
        timestamp=entry.timestamp,
        session=entry.session,
        run=entry.run,
        kind=entry.kind,
        passed=passed if isinstance(passed, bool) else None,
        narrative=_text(body.get("reason"))
        or (f"run {body['event']}" if body.get("event") not in (None, "commit") else None)
        or (", ".join(where) or None),
        step=_text(body.get("step")),
        critique=_text(verdict.get("critique")) or None,
        criteria=[c for c in criteria if isinstance(c, dict)] if isinstance(criteria, list) else [],
    )


def _described(check: CheckStatus | None) -> str:
    if check is None:
        return "not checked"
    return f"checked {check.when}: {check.text}" if check.at is not None else check.text


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
