"""Applications: what ``--app MODULE:ATTR`` names, and how assay connects to one.

An ``Application`` is a navigation graph, the page sessions start on, and ``connect``: a
coroutine that reaches the running application and answers a ``Connection`` — the
``Substrate`` assay observes it through (pushed reports, probes or both) and the handlers
that act on it. The daemon and the MCP server host any application the same way; the
built-in example (``assay.examples.outpost``) is one like any other.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.clock import Clock
from assay.defaults import DEFAULT_APPLICATION
from assay.errors import ApplicationError, describe_raised
from assay.graph.graph import NavigationGraph
from assay.graph.session import Handler
from assay.redaction import Redaction
from assay.state.store import StateStore
from assay.state.substrate import Substrate


@dataclass
class Connection:
    """A live connection to an application: its observed state and its action handlers.

    ``handlers`` maps ``page.action`` to a plain or async callable taking the fire's args.
    ``close`` is awaited when the host stops.
    """

    substrate: Substrate
    handlers: Mapping[str, Handler]
    close: Callable[[], Awaitable[None]] | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    async def aclose(self) -> None:
        """Stop observing the application and release what ``connect`` opened."""
        await self.substrate.stop()
        if self.close is not None:
            await self.close()


Connect = Callable[["ConnectContext"], Awaitable[Connection]]


@dataclass(frozen=True)
class ConnectContext:
    """What ``connect`` is given: the host's clock and redaction, for the substrate it builds."""

    clock: Clock
    redaction: Redaction


@dataclass(frozen=True)
class Application:
    """A graph, the page sessions start on, and how to connect to the running application."""

    graph: NavigationGraph
    start: str
    connect: Connect
    description: str = ""
    redaction: tuple[str, ...] = ()
    thresholds: Mapping[str, float] = field(default_factory=dict)
    """The confidence each reversibility tier needs here, over the defaults (0.5, 0.8, 0.95);
    the daemon's own ``--threshold`` settings go over these."""

    def __post_init__(self) -> None:
        if self.start not in self.graph.pages:
            raise ApplicationError(
                f"{self.graph.app}: start: no page is called {self.start!r}; pages are "
                f"{', '.join(self.graph.pages)}"
            )

    @classmethod
    def in_process(
        cls,
        graph: NavigationGraph,
        *,
        start: str,
        state: Mapping[str, Any] | None = None,
        handlers: Mapping[str, Handler] | Callable[[StateStore], Mapping[str, Handler]],
        expected_interval: float = 30.0,
        description: str = "",
        redaction: Iterable[str] = (),
        thresholds: Mapping[str, float] | None = None,
    ) -> Application:
        """An application living in this process: its state starts as ``state`` and its
        handlers (or a factory given the store, to report through) act on it."""

        async def connect(context: ConnectContext) -> Connection:
            store = StateStore(state, clock=context.clock)
            substrate = Substrate(
                store,
                declared_keys=graph.declared_writes(),
                expected_interval=expected_interval,
                redaction=context.redaction,
                clock=context.clock,
            )
            store.heartbeat(graph.app)
            wired = handlers(store) if callable(handlers) else handlers
            return Connection(substrate=substrate, handlers=dict(wired))

        return cls(graph, start, connect, description, tuple(redaction), dict(thresholds or {}))


def load_application(target: str) -> Application:
    """Import ``MODULE:ATTR`` and answer the ``Application`` it names (or a zero-argument
    callable returning one); ``ApplicationError`` says what was wrong and what to do.

    A module in the working directory is found, as ``python -m`` and uvicorn find one: the
    working directory goes first on ``sys.path`` if it is not on it yet.
    """
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise ApplicationError(
            f"--app takes MODULE:ATTR (e.g. {DEFAULT_APPLICATION}), got {target!r}"
        )
    here = os.getcwd()
    if not any(os.path.abspath(entry or os.curdir) == here for entry in sys.path):
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ApplicationError(
            f"--app {target}: cannot import {module_name!r} ({error}); check the module "
            "name and that it is importable from the working directory or PYTHONPATH"
        ) from None
    except Exception as error:  # the application's own code failed: its author's to fix
        raise ApplicationError(
            f"--app {target}: importing {module_name!r} failed: {describe_raised(error)}"
        ) from error
    try:
        value = getattr(module, attribute)
    except AttributeError:
        raise ApplicationError(
            f"--app {target}: module {module_name!r} has no attribute {attribute!r}"
        ) from None
    if callable(value) and not isinstance(value, Application):
        try:
            value = value()
        except Exception as error:
            raise ApplicationError(
                f"--app {target}: calling {attribute} to make the application failed: "
                f"{describe_raised(error)}"
            ) from error
    if not isinstance(value, Application):
        raise ApplicationError(
            f"--app {target}: expected an assay.host.Application, got {type(value).__name__}"
        )
    return value
