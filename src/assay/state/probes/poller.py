"""``Poller``: reads each probe at its interval and hands every successful read to a sink.

One task per probe reads it, hands the values to the sink, records the outcome in the probe's
``HealthWindow`` and sleeps on the injected clock until the next read is due. A failed read,
or a sink that raises, is recorded as a failure and never stops the polling. A read not
answered by its deadline (the probe's ``timeout`` plus ``grace``) is cancelled and counts as
failed. The sink gets whole values for the keys the probe owns, with the keys it no longer
answers, which are gone from the application.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

from assay.clock import SYSTEM_CLOCK, Clock
from assay.errors import ContractError, NotFoundError, ProbeConfigError, ProbeError
from assay.json.path import format_path, parse_path
from assay.state.health import DEFAULT_WINDOW, HealthWindow, ProbeHealth
from assay.state.probes.probe import (
    ClosableProbe,
    Probe,
    check_interval,
    grace,
    no_answer,
    read_timeout,
)

Sink: TypeAlias = Callable[[str, dict[str, Any], frozenset[str]], None]
"""Receives ``(probe name, {dotted_key: value}, keys gone)`` after each successful read."""


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
        self._timeouts: dict[str, float] = {}
        for probe in probes:
            name = probe.name
            if name in self._probes:
                raise ProbeConfigError(
                    f"two probes are named {name!r}; give each probe its own name=",
                    parameter="probes",
                )
            check_interval(probe.interval)
            self._timeouts[name] = read_timeout(probe)
            self._probes[name] = probe
        self._sink = sink
        self._clock = clock
        self._health = {name: HealthWindow(name, window) for name in self._probes}
        self._owned: dict[str, frozenset[str]] = dict.fromkeys(self._probes, frozenset())
        self._locks = {name: asyncio.Lock() for name in self._probes}
        self._abandoned: dict[str, asyncio.Future[dict[str, Any]]] = {}
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
        async with self._locks[name]:
            timeout = self._timeouts[name]
            expired = asyncio.get_running_loop().create_future()
            deadline = timeout + 2 * grace(timeout)  # after the probe's own bounds
            timer = self._clock.call_later(deadline, lambda: _set(expired))
            try:
                reading = await self._start(name, timeout, expired)
                if reading is None:
                    return
                try:
                    await asyncio.wait((reading, expired), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    if not reading.done():
                        reading.cancel()
                if not reading.done():
                    self._abandon(name, reading)
                    self._failed(name, no_answer(f"probe {name!r}", timeout))
                    return
            finally:
                timer.cancel()
                expired.cancel()
            self._finish(name, reading)

    async def _start(
        self, name: str, timeout: float, expired: asyncio.Future[None]
    ) -> asyncio.Future[dict[str, Any]] | None:
        """Start a read once an abandoned one has ended; ``None`` if it has not by ``expired``."""
        previous = self._abandoned.pop(name, None)
        if previous is not None and not previous.done():
            await asyncio.wait((previous, expired), return_when=asyncio.FIRST_COMPLETED)
            if not previous.done():
                self._abandoned[name] = previous
                self._failed(
                    name,
                    f"probe {name!r}: a read abandoned after {timeout:g} s has not ended (it did "
                    "not stop when cancelled); no new read starts until it does",
                )
                return None
        reading = asyncio.ensure_future(self._probes[name].read())
        # Retrieved however this read ends: one that fails as the poller is stopped (its
        # reader cancelled, so _finish never sees it) is not "never retrieved".
        reading.add_done_callback(_retrieve)
        return reading

    def _abandon(self, name: str, reading: asyncio.Future[dict[str, Any]]) -> None:
        self._abandoned[name] = reading  # its outcome no longer matters

    def _failed(self, name: str, message: str) -> None:
        self._health[name].record_failure(self._clock.monotonic(), message)

    def _finish(self, name: str, reading: asyncio.Future[dict[str, Any]]) -> None:
        """Hand a finished read's values to the sink and record how it went."""
        if reading.cancelled():
            self._failed(name, f"probe {name!r}: the read was cancelled")
            return
        error = reading.exception()
        if isinstance(error, Exception):
            self._failed(name, _message(error))
            return
        if error is not None:
            raise error
        values = reading.result()
        shared = self._shared_key(name, values.keys())
        if shared is not None:
            self._failed(name, shared)
            return
        gone = self._owned[name] - values.keys()
        try:
            self._sink(name, dict(values), gone)
        except Exception as exc:
            self._failed(name, f"the sink refused the values: {_message(exc)}")
            return
        self._owned[name] = frozenset(values)
        self._health[name].record_success(self._clock.monotonic())

    def _shared_key(self, name: str, keys: Iterable[str]) -> str | None:
        """Why probe ``name`` may not take ``keys``: another probe answers one of them, a key
        holding one, or a key inside one (their values would overwrite each other at every
        read); ``None`` if no other probe does. Only keys that ``name`` did not answer last
        time are looked at: the others were when it first answered them."""
        new = [key for key in keys if key not in self._owned[name]]
        if not new:
            return None
        # Every key the other probes answer, and every key holding one, with who answers it.
        answered = {
            path: (other, path)
            for other, owned in self._owned.items()
            if other != name
            for path in map(_segments, owned)
        }
        for path, holder in list(answered.items()):
            for depth in range(1, len(path)):
                answered.setdefault(path[:depth], holder)
        if not answered:
            return None
        for key in new:
            path = _segments(key)
            for depth in range(1, len(path) + 1):
                found = answered.get(path[:depth])
                if found is not None and (depth == len(path) or found[1] == path[:depth]):
                    other, theirs = found
                    return (
                        f"probe {name!r} answered {key!r}, and probe {other!r} answers "
                        f"{format_path(theirs)!r}: each key must come from one probe, so this "
                        "read was not taken; narrow one of them (its queries, pointer or "
                        "keys) so that they answer different keys"
                    )
        return None


def _segments(key: str) -> tuple[str, ...]:
    try:
        return parse_path(key)
    except ContractError:
        return (key,)  # the sink refuses it, naming what is wrong


def _set(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _retrieve(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()
