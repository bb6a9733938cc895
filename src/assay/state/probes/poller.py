"""``Poller``: reads each probe at its interval and hands every successful read to a sink.

One task per probe reads it, hands ``(probe name, values)`` to the sink, records the
outcome in the probe's ``HealthWindow`` and sleeps on the injected clock until the next
read is due (reads start ``interval`` apart; one that overruns is followed at once). A
failed read, or a sink that raises, is recorded as a failure and never stops the polling.

The values handed to the sink are whole values for the keys the probe owns, to be set in
place of what the store holds. A key that the probe answered in its previous successful
read and no longer answers is handed over as ``None``: it is gone from the application.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

from assay.clock import SYSTEM_CLOCK, Clock
from assay.errors import NotFoundError, ProbeConfigError, ProbeError
from assay.state.health import DEFAULT_WINDOW, HealthWindow, ProbeHealth
from assay.state.probes.probe import ClosableProbe, Probe, check_interval

Sink: TypeAlias = Callable[[str, dict[str, Any]], None]
"""Receives ``(probe name, {dotted_key: value})`` after each successful read."""


def _message(exc: Exception) -> str:
    if isinstance(exc, ProbeError):
        return str(exc)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Poller:
    """Polls a set of probes, each under its unique name, on ``clock``."""

    def __init__(
        self,
        probes: Iterable[Probe],
        sink: Sink,
        clock: Clock = SYSTEM_CLOCK,
        *,
        window: int = DEFAULT_WINDOW,
    ) -> None:
        self._probes: dict[str, Probe] = {}
        for probe in probes:
            name = probe.name
            if name in self._probes:
                raise ProbeConfigError(
                    f"two probes are named {name!r}; give each probe its own name=",
                    parameter="probes",
                )
            check_interval(probe.interval)
            self._probes[name] = probe
        self._sink = sink
        self._clock = clock
        self._health = {name: HealthWindow(name, window) for name in self._probes}
        self._owned: dict[str, frozenset[str]] = dict.fromkeys(self._probes, frozenset())
        self._locks = {name: asyncio.Lock() for name in self._probes}
        self._tasks: list[asyncio.Task[None]] = []
        self._finished: asyncio.Event | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The probes' names, in the order they were given."""
        return tuple(self._probes)

    @property
    def running(self) -> bool:
        return self._finished is not None

    def health(self, name: str) -> ProbeHealth:
        """The health of the probe called ``name``."""
        try:
            window = self._health[name]
        except KeyError:
            raise NotFoundError(
                f"no probe named {name!r}; this poller polls {list(self._probes)}",
                kind="probe",
                id=name,
            ) from None
        return window.snapshot()

    def all_health(self) -> dict[str, ProbeHealth]:
        """The health of every probe, by name."""
        return {name: window.snapshot() for name, window in self._health.items()}

    async def read_once(self) -> None:
        """Read every probe once, concurrently; a probe being read already is read after."""
        await asyncio.gather(*(self._read(probe) for probe in self._probes.values()))

    async def run(self) -> None:
        """Poll every probe until ``stop()``; the first reads happen at once."""
        if self._finished is not None:
            raise ProbeError("this poller is already running; call stop() first")
        self._finished = asyncio.Event()
        try:
            async with asyncio.TaskGroup() as group:
                self._tasks = [
                    group.create_task(self._poll(probe), name=f"assay probe {name}")
                    for name, probe in self._probes.items()
                ]
        finally:
            self._tasks = []
            self._finished.set()
            self._finished = None

    async def stop(self) -> None:
        """End ``run()``, wait until it has returned, and close probes that hold resources."""
        finished = self._finished
        if finished is not None:
            for task in self._tasks:
                task.cancel()
            await finished.wait()
        for probe in self._probes.values():
            if isinstance(probe, ClosableProbe):
                await probe.aclose()

    async def _poll(self, probe: Probe) -> None:
        clock = self._clock
        interval = probe.interval
        while True:
            started = clock.monotonic()
            await self._read(probe)
            await clock.sleep(max(0.0, started + interval - clock.monotonic()))

    async def _read(self, probe: Probe) -> None:
        name = probe.name
        health = self._health[name]
        async with self._locks[name]:
            try:
                values = await probe.read()
            except Exception as exc:
                health.record_failure(self._clock.monotonic(), _message(exc))
                return
            report = dict(values)
            for key in sorted(self._owned[name] - report.keys()):
                report[key] = None
            try:
                self._sink(name, report)
            except Exception as exc:
                health.record_failure(
                    self._clock.monotonic(), f"the sink refused the values: {_message(exc)}"
                )
                return
            self._owned[name] = frozenset(values)
            health.record_success(self._clock.monotonic())
