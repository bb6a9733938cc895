"""The timeline page: transitions, verdicts, diffs and proof status, read from the ledger."""

from assay.timeline.check import CheckStatus, LedgerCheck
from assay.timeline.page import render_timeline, timeline_routes
from assay.timeline.view import Timeline, build_timeline

__all__ = [
    "CheckStatus",
    "LedgerCheck",
    "Timeline",
    "build_timeline",
    "render_timeline",
    "timeline_routes",
]
