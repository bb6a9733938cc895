"""``CallableProbe``: a Python function, plain or ``async``, answers the state it owns."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from assay.errors import ProbeError
from assay.json.path import parse_path
from assay.state.probes.probe import (
    DEFAULT_INTERVAL,
    DEFAULT_TIMEOUT,
    check_interval,
    check_timeout,
)
from assay.state.probes.values import to_json

ProbeFunction = Callable[[], Mapping[str, Any] | Awaitable[Mapping[str, Any]]]
"""A zero-argument function answering ``{dotted_key: value}``, or an awaitable of it."""


class CallableProbe:
    """Calls ``fn`` for each read; values are converted to JSON as for SQL rows.

    A plain function runs on the event loop, so it must return quickly: nothing can stop it,
    and the poller cannot even count it late while it blocks the loop. One that blocks (file
    or network I/O) should be ``async`` and hand its work to ``asyncio.to_thread``. An async
    function still running after ``timeout`` seconds is cancelled and its read counts as
    failed; work it handed to a thread cannot be stopped and runs on to its end, unseen.
    """

    def __init__(
        self,
        fn: ProbeFunction,
        *,
        name: str | None = None,
        interval: float = DEFAULT_INTERVAL,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.fn = fn
        self.name = name if name is not None else _name_of(fn)
        self.interval = check_interval(interval)
        self.timeout = check_timeout(timeout)

    def __repr__(self) -> str:
        return f"CallableProbe({self.fn!r}, name={self.name!r})"

    async def read(self) -> dict[str, Any]:
        """Call the function and check that it answered a mapping of state keys to JSON."""
        result = self.fn()
        if inspect.isawaitable(result):
            result = await result
        if not isinstance(result, Mapping):
            raise ProbeError(
                f"probe function {self.name!r} returned {type(result).__name__}; it must "
                "return a mapping of state keys to JSON values",
                source=self.name,
            )
        values: dict[str, Any] = {}
        for key, value in result.items():
            if not isinstance(key, str):
                raise ProbeError(
                    f"probe function {self.name!r} returned the key {key!r}; state keys are "
                    "dotted path strings",
                    source=self.name,
                )
            parse_path(key)
            values[key] = to_json(value, f"the value of {key!r}")
        return values


def _name_of(fn: Callable[..., Any]) -> str:
    qualname = getattr(fn, "__qualname__", None)
    module = getattr(fn, "__module__", None)
    if qualname is None:
        return repr(fn)
    return f"{module}.{qualname}" if module else qualname
