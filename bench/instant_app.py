"""An inbox whose sends land as the handler returns, for ``bench/load.py``: ``APPLICATION``.

The outpost's graph (``inbox.send`` writes ``inbox.sent_count`` and
``inbox.sent.{message_id}``, its contract ``inbox.sent.{message_id}.status`` is ``sent``)
over an in-process state: the handler reports the delivered message and the new count at
once, and keeps the latest 100 messages as the outpost does. So a fire's cost is the
daemon's own (no delivery delay, no application behind a socket), while each outcome still
lists the other sessions' sends that landed between its fire and its check.

    assay serve --app instant_app:APPLICATION   (with bench/ on PYTHONPATH)
"""

from __future__ import annotations

from typing import Any

from assay.examples.outpost import GRAPH
from assay.examples.outpost.app import RECENT_SENT
from assay.host import Application
from assay.state.store import StateStore


def _handlers(store: StateStore) -> dict[str, Any]:
    sent: dict[str, None] = {}  # the messages the inbox shows, oldest first

    def send(args: dict[str, Any]) -> dict[str, Any]:
        message_id = args["message_id"]
        count = store.current.objects["inbox"]["sent_count"] + 1
        changes: dict[str, Any] = {
            "inbox.sent_count": count,
            f"inbox.sent.{message_id}": {
                "to": args["to"],
                "subject": args.get("subject", ""),
                "status": "sent",
            },
        }
        sent[message_id] = None
        while len(sent) > RECENT_SENT:
            oldest = next(iter(sent))
            del sent[oldest]
            changes[f"inbox.sent.{oldest}"] = None
        store.report(changes, source="inbox")
        return {"queued": message_id}

    def navigate(args: dict[str, Any]) -> None:
        return None

    return {"inbox.send": send, "inbox.open-drone": navigate, "drone.open-inbox": navigate}


APPLICATION = Application.in_process(
    GRAPH,
    start="inbox",
    state={
        "inbox": {"unread": 3, "sent_count": 14, "sent": {}},
        "drone": {"mode": "LOITER", "payload": "stowed", "battery": 87},
    },
    handlers=_handlers,
    description="An inbox whose sends land as the handler returns.",
)
