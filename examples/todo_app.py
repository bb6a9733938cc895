"""A minimal application of your own for ``assay serve --app todo_app:APPLICATION``.

Run from this directory (a module in the working directory is found), then fire through the
daemon::

    assay serve --app todo_app:APPLICATION
    curl -s localhost:8765/v1/actions -H 'content-type: application/json' \\
        -d '{"action": "list.add", "args": {"id": "milk"}, "wait_ms": 2000}'

The application lives in the daemon's process; its handler reports the change it made, and
the action's ``verify`` contract is what assay checks the state against.
"""

from __future__ import annotations

from typing import Any

from assay.graph import build_navigation_graph
from assay.graph.session import Handler
from assay.host import Application
from assay.state.store import StateStore

GRAPH = build_navigation_graph(
    "todo",
    pages={
        "list": {
            "actions": {
                "add": {
                    "does": "Add an item to the list",
                    "input": {
                        "type": "object",
                        "properties": {"id": {"type": "string"}},
                        "required": ["id"],
                    },
                    "writes": ["items.{id}"],
                    "verify": {"items.{id}": {"exists": True}},
                }
            }
        }
    },
)


def handlers(store: StateStore) -> dict[str, Handler]:
    """The handlers, acting on the application's state and reporting what they changed."""

    def add(args: dict[str, Any]) -> None:
        store.report({f"items.{args['id']}": {"done": False}})

    return {"list.add": add}


APPLICATION = Application.in_process(GRAPH, start="list", state={"items": {}}, handlers=handlers)
