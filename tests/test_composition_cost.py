"""What composing a fire's changes costs: the changes it reports, not every change meanwhile.

``StoreStatistics.paths_visited`` counts the leaf paths the store looks at to answer
``changes_between`` and ``changes_under``; these tests count it, never time it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from assay.clock import VirtualClock
from assay.graph import build_navigation_graph
from assay.state import StateStore

GRAPH = build_navigation_graph(
    "mail",
    pages={
        "inbox": {
            "actions": {
                "send": {
                    "does": "Send a message; it lands later",
                    "writes": ["sent.{message_id}"],
                    "verify": {"sent.{message_id}.status": {"eq": "sent"}},
                    "verify_timeout_ms": 5000,
                },
            }
        }
    },
)


def _visited(store: StateStore) -> int:
    return store.statistics().paths_visited


def test_changes_between_visits_each_changed_path_once_however_often_it_changed() -> None:
    store = StateStore({"count": 0, "other": {"a": 1}})
    first = store.current
    for count in range(1, 1001):
        store.report({"count": count})
    start = _visited(store)
    changes = store.changes_between(first, store.current)
    assert [(c.key, c.before, c.after) for c in changes] == [("count", 0, 1000)]
    assert _visited(store) - start == 1


def test_changes_between_two_early_versions_visit_nothing_changed_after_them() -> None:
    # An outcome taken on the state its contract first held on, soon after its fire, while
    # 500 other changes landed before its answer was composed.
    store = StateStore({"sent": {"m0": {"status": "sent"}}, "others": {}})
    first = store.current
    store.report({"sent.m1": {"status": "sent"}})
    held = store.current
    for number in range(500):
        store.report({f"others.k{number}": number})
    start = _visited(store)
    changes = store.changes_between(first, held)
    assert [(c.key, c.after, c.kind) for c in changes] == [("sent.m1.status", "sent", "added")]
    assert _visited(store) - start == 1


def test_changes_under_keys_visit_nothing_of_other_keys() -> None:
    store = StateStore({"sent": {}, "others": {}})
    first = store.current
    for number in range(500):
        store.report({f"others.k{number}": number})
    store.report({"sent.m1": {"status": "sent"}})
    start = _visited(store)
    changes = store.changes_under(first, store.current, [("sent", "m1")])
    assert [(c.key, c.after, c.kind) for c in changes] == [("sent.m1.status", "sent", "added")]
    assert _visited(store) - start == 1


def test_a_fires_commit_and_claim_do_not_walk_other_sessions_changes() -> None:
    """Other sessions' sends land while this fire is pending: its outcome lists them (its
    changed_fields are every leaf that changed), once each; its commit and its claim are
    composed along its own keys, visiting its own change only."""

    async def main(clock: VirtualClock) -> tuple[Any, Any, int]:
        mine = GRAPH.create_session(node="inbox", state={"sent": {}}, clock=clock)
        mine.register_actions("inbox", handlers={"send": lambda args: None})
        store = mine.store
        others = [GRAPH.create_session(node="inbox", substrate=mine.substrate, clock=clock)
                  for _ in range(3)]  # fmt: skip
        fired = mine.fire("inbox.send", {"message_id": "m0"})
        for number in range(300):
            store.report({f"sent.o{number}": {"status": "sent", "to": "ops"}})
        start = _visited(store)
        store.report({"sent.m0": {"status": "sent", "to": "ops"}})
        await clock.advance(0)
        spent = _visited(store) - start
        transition = mine.transitions[fired.transition_id or ""]
        for other in [mine, *others]:
            await other.close()
        return mine.did_it_work(transition.id), transition, spent

    answer, transition, spent = asyncio.run(main(VirtualClock()))
    assert answer.answer == "worked"
    reported = transition.outcome.changed_fields
    assert len(reported) == 301 * 2  # every message's two leaves, the others' included
    assert [c.key for c in transition.commit] == ["sent.m0.status", "sent.m0.to"]
    # The outcome visits each path changed since the fire once: every message's leaves and
    # ``sent``, the empty object the first send filled. The commit visits the fire's own two
    # leaves, its claim the one key its contract reads: nothing of the others' 600 changes.
    assert spent == (len(reported) + 1) + len(transition.commit) + 1
