"""The timeline's view model, read from the ledger alone.

Everything the page shows comes from stored entries: a transition is its ``fire`` (or
``refusal``) entry joined with its ``settlement`` entry; a verify answer is a ``verdict``
entry without a run; a workflow run is every entry carrying that run id. So what a person
reads on the page is what the ledger proves, and nothing else. A stored entry that cannot be
read as one (altered or damaged where it is stored) is named as the ledger's fault, and the
page shows the rest; a field of an unexpected shape is shown as absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.errors import LedgerIntegrityError
from assay.ledger.entry import Entry, entry_from_canonical
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
    started at ``checked_at`` (RFC 3339). ``faults`` name the entries that could not be
    read for the page (the ledger does not verify, whatever the last check found); ``root``
    is ``None`` when the tree could not be built."""

    size: int
    first_seq: int
    root: str | None
    verified: bool | None
    verification: str
    covered: str
    checked: int | None
    checked_at: str | None
    sessions: list[SessionView]
    verdicts: list[VerdictView]
    runs: list[RunView]
    faults: list[str] = field(default_factory=list)


def build_timeline(
    ledger: Ledger,
    *,
    window: int = DEFAULT_WINDOW,
    check: CheckStatus | None = None,
) -> Timeline:
    """The timeline of the latest ``window`` entries, with ``check``, the ledger's last full
    check (none: not checked)."""
    faults: list[LedgerIntegrityError] = []
    unbuilt: LedgerIntegrityError | None = None
    try:
        head = ledger.tree_head()
        size, root = head.size, head.root
    except LedgerIntegrityError as fault:  # a stored entry is missing: no tree to build
        size, root, unbuilt = ledger.backend.size(), None, fault
    first = max(1, size - window + 1)
    entries = _read(ledger, first, size + 1, faults) if size else []
    if unbuilt is not None and all(fault.seq != unbuilt.seq for fault in faults):
        faults.insert(0, unbuilt)  # missing before the entries shown
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
    said = list(dict.fromkeys(str(fault) for fault in faults))
    return Timeline(
        size=size,
        first_seq=first,
        root=root,
        verified=False if faults else check.ok if check is not None else None,
        verification=_described(check),
        covered=_covered(faults, check),
        checked=check.size if check is not None else None,
        checked_at=check.started if check is not None else None,
        sessions=list(sessions.values()),
        verdicts=verdicts,
        runs=list(runs.values()),
        faults=said,
    )


def _read(ledger: Ledger, start: int, stop: int, faults: list[LedgerIntegrityError]) -> list[Entry]:
    """The entries from ``start`` to before ``stop`` that can be read; each that cannot, or is
    missing, is added to ``faults``."""
    entries: list[Entry] = []
    expected = start
    for seq, text in ledger.backend.read_canonical(start, stop):
        if seq != expected:
            faults.append(_missing(ledger, expected))
        expected = seq + 1
        try:
            entries.append(entry_from_canonical(text, seq))
        except LedgerIntegrityError as fault:
            faults.append(fault)
    if expected < stop:
        faults.append(_missing(ledger, expected))
    return entries


def _missing(ledger: Ledger, seq: int) -> LedgerIntegrityError:
    return LedgerIntegrityError(
        f"entry {seq} is missing from {ledger.url}; verify the ledger (assay ledger verify) to "
        "find what else is wrong",
        seq=seq,
        reason="missing",
        field="seq",
    )


def _covered(faults: list[LedgerIntegrityError], check: CheckStatus | None) -> str:
    if faults:
        seqs = sorted({fault.seq for fault in faults if fault.seq is not None})
        named = ", ".join(str(seq) for seq in seqs[:3]) + (", …" if len(seqs) > 3 else "")
        return f"(entr{'y' if len(seqs) == 1 else 'ies'} {named} cannot be read)"
    return check.covered if check is not None else ""


def _fired(entry: Entry) -> TransitionView:
    body = _object(entry.body)
    refused = entry.kind == "refusal"
    already_true = body.get("already_true")
    return TransitionView(
        session=entry.session or "",
        transition=entry.transition or "",
        action=str(body.get("action", "")),
        source=str(body.get("source", "")),
        args=body.get("args", {}),
        fired_at=entry.timestamp,
        fire_seq=entry.seq,
        status="refused" if refused else "pending",
        already_true=_conditions(already_true) if already_true is not None else None,
        error=_text(body.get("error")) if refused else None,
        refusal=_text(body.get("refusal")),
        contract=_text(body.get("contract")),
        settle_seq=entry.seq if refused else None,
    )


def _settle(row: TransitionView, entry: Entry) -> None:
    body = _object(entry.body)
    outcome = _object(body.get("outcome"))
    row.status = str(body.get("answer", "settled"))
    row.settled_at = entry.timestamp
    row.settle_seq = entry.seq
    row.narrative = _text(outcome.get("narrative"))
    row.changed_fields = _changes(outcome.get("changed_fields") or body.get("commit"))
    row.error = _text(body.get("error"))


def _verdict(entry: Entry) -> VerdictView:
    body = _object(entry.body)
    outcome = _object(body.get("outcome"))
    passed = outcome.get("passed", body.get("passed"))
    return VerdictView(
        seq=entry.seq,
        timestamp=entry.timestamp,
        session=entry.session,
        run=entry.run,
        kind=entry.kind,
        passed=passed if isinstance(passed, bool) else None,
        narrative=_text(outcome.get("narrative", body.get("narrative"))),
        changed_fields=_changes(outcome.get("changed_fields")),
    )


def _run_event(entry: Entry) -> VerdictView:
    body = _object(entry.body)
    nested = body.get("verdict")
    verdict: dict[str, Any] = nested if isinstance(nested, dict) else body
    criteria = verdict.get("criteria")
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
        criteria=_objects(criteria),
    )


def _object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one: a field of another shape (in an
    entry altered where it is stored) is shown as absent."""
    return value if isinstance(value, dict) else {}


def _objects(value: Any) -> list[dict[str, Any]]:
    """The JSON objects in ``value`` if it is an array, else none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _changes(value: Any) -> list[dict[str, Any]]:
    """Changed fields as the page shows them: a key, a kind, a value before and after."""
    return [
        {
            "key": _text(change.get("key")) or "",
            "kind": _text(change.get("kind")) or "",
            "before": change.get("before"),
            "after": change.get("after"),
        }
        for change in _objects(value)
    ]


def _conditions(value: Any) -> list[dict[str, Any]]:
    """Conditions already true at fire time: a key, an operator, a threshold, what was seen."""
    return [
        {
            "key": _text(condition.get("key")) or "",
            "op": _text(condition.get("op")) or "",
            "threshold": condition.get("threshold"),
            "actual_summary": _text(condition.get("actual_summary")),
        }
        for condition in _objects(value)
    ]


def _described(check: CheckStatus | None) -> str:
    if check is None:
        return "not checked"
    return f"checked {check.when}: {check.text}" if check.at is not None else check.text


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
