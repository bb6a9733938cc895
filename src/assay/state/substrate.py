"""``Substrate``: an application's state as assay sees it — store, probes and confidence.

It owns a ``StateStore`` fed by pushed reports and by probes (each successful probe read
becomes a ``set`` of the keys that probe owns, and removes the keys it owned and no longer
answers), and answers ``state()`` with the
``SubstrateState`` wire type: objects (redacted), version, capture time, confidence and its
parts, and every source with when it was last heard.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from assay.clock import SYSTEM_CLOCK, Clock
from assay.json.path import format_path, parse_path
from assay.redaction import REDACTED, Redaction
from assay.state.canonical import expand_report
from assay.state.confidence import Confidence, assess
from assay.state.fresh import FreshReads
from assay.state.patch import Replace, merge_into
from assay.state.probes import Poller, Probe
from assay.state.store import StateStore

DEFAULT_EXPECTED_INTERVAL = 5.0

Shared = TypeVar("Shared")


class SourceStatus(BaseModel):
    """One source of state: a reporter pushing to assay, or a probe assay polls."""

    model_config = ConfigDict(frozen=True)

    name: str
    kind: Literal["report", "probe"]
    last_seen_ms_ago: int | None = Field(description="null when never heard from")
    messages: int = Field(description="reports received or successful reads")
    health: float | None = Field(default=None, description="probes: recent read success ratio")
    last_error: str | None = Field(default=None, description="probes: the last failure")


class SubstrateState(BaseModel):
    """``GET /v1/state``: the objects map as of ``version``, and how far to trust it."""

    model_config = ConfigDict(frozen=True)

    objects: dict[str, Any]
    version: int
    captured_at: datetime
    confidence: Confidence
    sources: list[SourceStatus]


class Substrate:
    """The store, its probes and its confidence, for one application.

    ``expected_interval`` is how often the application is expected to be heard from (a
    report, a heartbeat or a probe read); it defaults to twice the slowest probe's interval,
    or 5 s without probes. ``declared_keys`` are the keys the graph's actions write, for
    coverage.
    """

    def __init__(
        self,
        store: StateStore | None = None,
        *,
        probes: Iterable[Probe] = (),
        declared_keys: Iterable[str] = (),
        expected_interval: float | None = None,
        redaction: Redaction | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.clock = clock
        self.store = store if store is not None else StateStore(clock=clock)
        self.probes = tuple(probes)
        self.poller = Poller(self.probes, self._sink, clock) if self.probes else None
        self._fresh = FreshReads(self.poller) if self.poller is not None else None
        self.declared = tuple(parse_path(key) for key in declared_keys)
        slowest = max((probe.interval for probe in self.probes), default=None)
        self.expected_interval = expected_interval or (
            slowest * 2 if slowest is not None else DEFAULT_EXPECTED_INTERVAL
        )
        self.redaction = redaction or Redaction.none()
        self._task: asyncio.Task[None] | None = None
        fastest = min((probe.interval for probe in self.probes), default=None)
        self._poll_interval_ms = None if fastest is None else round(fastest * 1000)
        self._shared: dict[type, object] = {}

    def shared(self, kind: type[Shared]) -> Shared:
        """The one ``kind()`` held for this application, made on first ask: what every user
        of the substrate shares (the layers above keep their per-application records here,
        as sessions on one substrate act on one application)."""
        held = self._shared.get(kind)
        if not isinstance(held, kind):
            held = self._shared[kind] = kind()
        return held

    @property
    def poll_interval_ms(self) -> int | None:
        """The fastest probe's interval, which is how often pulled state can change."""
        return self._poll_interval_ms

    @property
    def polled(self) -> bool:
        """Whether probes pull the state: what the store holds is then as old as the
        latest read, and only a fresh read tells what the application holds now."""
        return self._fresh is not None

    async def read_fresh(self) -> None:
        """Return once a read of every probe that started after this call has ended (at once
        when nothing is polled: pushed state is as fresh as the application made it).

        Concurrent callers share reads (``FreshReads``); a failed read is in the probes'
        health, never raised.
        """
        if self._fresh is not None:
            await self._fresh.read()

    def _sink(self, name: str, values: dict[str, Any], gone: frozenset[str]) -> None:
        if not gone:
            self.store.set(values, source=name)
            return
        # Keys the application no longer answers are removed, not set to null, in the same
        # version as the read's other values: the store's one operation that removes keys
        # and replaces others wholesale is a replacement of the whole substrate.
        objects = merge_into(self.store.current.objects, expand_report(dict.fromkeys(gone)), (), [])
        objects = merge_into(objects, expand_report(values, Replace), (), [])
        self.store.replace(
            {format_path((key,)): value for key, value in objects.items()}, source=name
        )

    async def start(self) -> None:
        """Start polling the probes (the first reads happen at once)."""
        if self.poller is not None and self._task is None:
            self._task = asyncio.create_task(self.poller.run(), name="assay substrate poller")
            await asyncio.sleep(0)

    async def stop(self) -> None:
        """Stop polling, end any fresh read under way, and close the probes."""
        if self._fresh is not None:
            await self._fresh.stop()
        if self.poller is not None:
            await self.poller.stop()
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def confidence(self) -> Confidence:
        """Freshness × coverage × health, now."""
        last = self.store.last_heartbeat
        age = None if last is None else self.clock.monotonic() - last
        ratios = (
            [health.ratio for health in self.poller.all_health().values() if health.known]
            if self.poller is not None
            else []
        )
        return assess(
            age=age,
            expected_interval=self.expected_interval,
            objects=self.store.current.objects,
            declared=self.declared,
            probe_ratios=ratios,
        )

    def state(self) -> SubstrateState:
        """The current objects (redacted), version, confidence and sources."""
        snapshot = self.store.current
        return SubstrateState(
            objects=redact(snapshot.objects, self.redaction),
            version=snapshot.version,
            captured_at=snapshot.captured_at,
            confidence=self.confidence(),
            sources=self.sources(),
        )

    def sources(self) -> list[SourceStatus]:
        """Every source heard from or polled: reporters first, then probes, by name."""
        now = self.clock.monotonic()
        health = self.poller.all_health() if self.poller is not None else {}
        seen = self.store.sources
        statuses = []
        for name in sorted(set(seen) - set(health)):
            statuses.append(
                SourceStatus(
                    name=name,
                    kind="report",
                    last_seen_ms_ago=round((now - seen[name].last_seen) * 1000),
                    messages=seen[name].messages,
                )
            )
        for name, probe in sorted(health.items()):
            heard = seen.get(name)
            statuses.append(
                SourceStatus(
                    name=name,
                    kind="probe",
                    last_seen_ms_ago=None
                    if heard is None
                    else round((now - heard.last_seen) * 1000),
                    messages=0 if heard is None else heard.messages,
                    health=probe.ratio if probe.known else None,
                    last_error=probe.last_error,
                )
            )
        return statuses


def redact(objects: dict[str, Any], redaction: Redaction, prefix: tuple[str, ...] = ()) -> Any:
    """A copy of ``objects`` with every covered value replaced by the redaction marker."""
    if not redaction.patterns:
        return objects
    result: dict[str, Any] = {}
    for key, value in objects.items():
        path = (*prefix, key)
        if redaction.covers(path):
            result[key] = REDACTED
        elif isinstance(value, dict):
            result[key] = redact(value, redaction, path)
        else:
            result[key] = value
    return result
