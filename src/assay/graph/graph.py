"""``build_navigation_graph``: pages, their actions, and where each action leads."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from assay.errors import GraphError
from assay.expr.specs import PLACEHOLDER
from assay.graph.declaration import ActionSpec, check_name, parse_action
from assay.json.path import format_path, parse_path

if TYPE_CHECKING:
    from assay.graph.session import Session


class NavigationGraph:
    """An application's pages and actions, validated; sessions fire actions on it."""

    def __init__(self, app: str, pages: Mapping[str, Mapping[str, ActionSpec]]) -> None:
        self.app = app
        self.pages = pages

    def action(self, action_id: str) -> ActionSpec | None:
        """The action named ``page.action``, if it exists."""
        page, _, name = action_id.partition(".")
        return self.pages.get(page, {}).get(name)

    def actions(self, page: str) -> list[ActionSpec]:
        """The actions available on ``page``, in declaration order."""
        return list(self.pages.get(page, {}).values())

    def likely_meant(self, action_id: str) -> list[str]:
        """The ``page.action`` ids ``action_id`` (which names none) may have meant: the actions
        of its name on any page, its case and separators aside (``send``, ``Inbox.send``,
        ``inbox.mark_all_read``, ``drone.setMode``). Nothing merely spelt alike is offered:
        ``arm`` is spelt much like ``disarm``, and an agent must not be led to the opposite."""
        given_page, _, given_name = action_id.rpartition(".")
        named = [
            (page, f"{page}.{name}")
            for page, actions in self.pages.items()
            for name in actions
            if _folded(name) == _folded(given_name)
        ]
        on_its_page = [found for page, found in named if _folded(page) == _folded(given_page)]
        return on_its_page or [found for _, found in named]

    def pages_with(self, name: str) -> list[str]:
        """The pages that declare an action called ``name``."""
        return [page for page, actions in self.pages.items() if name in actions]

    def declared_writes(self) -> list[str]:
        """Every key any action declares it writes (for coverage). A key with a placeholder
        counts by the part before it: ``orders.{order_id}.status`` by ``orders``, the
        collection that must be there for any order to be seen (one that starts with a
        placeholder names nothing fixed, and does not count)."""
        keys: list[str] = []
        for actions in self.pages.values():
            for spec in actions.values():
                for key in spec.writes:
                    fixed = _fixed_prefix(key)
                    if fixed is not None and fixed not in keys:
                        keys.append(fixed)
        return keys

    def create_session(
        self, *, node: str, state: Mapping[str, Any] | None = None, **options: Any
    ) -> Session:
        """A new session at page ``node`` whose state starts as ``state``."""
        from assay.graph.session import Session

        return Session(self, node=node, state=state, **options)

    def __repr__(self) -> str:
        return f"NavigationGraph({self.app!r}, pages={list(self.pages)})"


def build_navigation_graph(app: str, pages: Mapping[str, Any]) -> NavigationGraph:
    """Validate ``pages`` (``{page: {"actions": {name: declaration}}}``) into a graph."""
    if not isinstance(pages, Mapping) or not pages:
        raise GraphError(f"{app}: pages: expected a non-empty mapping of pages")
    parsed: dict[str, dict[str, ActionSpec]] = {}
    for page, body in pages.items():
        check_name("page", page, str(page))
        if not isinstance(body, Mapping) or set(body) - {"actions"}:
            raise GraphError(f"{page}: expected {{'actions': {{...}}}}, got {body!r}", page=page)
        actions = body.get("actions", {})
        if not isinstance(actions, Mapping):
            raise GraphError(f"{page}: actions: expected a mapping", page=page, field="actions")
        parsed[page] = {}
        for name, raw in actions.items():
            check_name("action", name, f"{page}.{name}")
            parsed[page][name] = parse_action(page, name, raw)
    for page, actions in parsed.items():
        for spec in actions.values():
            if spec.to is not None and spec.to not in parsed:
                raise GraphError(
                    f"{spec.id}: to: no page is called {spec.to!r}; pages are {', '.join(parsed)}",
                    page=page,
                    action=spec.name,
                    field="to",
                )
    return NavigationGraph(app, parsed)


def _folded(name: str) -> str:
    """An action name without case or separators (``mark-all-read`` as ``markallread``)."""
    return _SEPARATORS.sub("", name).casefold()


_SEPARATORS: Final = re.compile(r"[-_\s]")


def _fixed_prefix(key: str) -> str | None:
    """``key`` up to its first segment holding a placeholder; ``None`` if that is the first."""
    segments = parse_path(key)
    fixed: list[str] = []
    for segment in segments:
        if PLACEHOLDER.search(segment):
            break
        fixed.append(segment)
    return format_path(fixed) if fixed else None
