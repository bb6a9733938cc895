"""Benchmark assay's verification loop and substrate against polling and copying, in one run.

    .venv/bin/python bench/verify.py [--quick] [--json PATH] [--db PATH]

1. Pushed change → verdict: ``verify`` on a store that a pushed report makes true, against a
   500 ms poller and Playwright-style pollers, with the same random change times.
2. 10,000 pending verifications in one process: memory per waiter, evaluations while nothing
   changes, and what an unrelated report costs with all of them parked.
3. Snapshot + changed fields on the τ² retail database (~3 MB): one report of 9 changes and
   ``changes_between``, against ``copy.deepcopy`` + DeepDiff.

Targets (SPEC §11) are printed PASS/MISS. Informational: the exit status is 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import json
import linecache
import math
import os
import platform
import random
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from deepdiff import DeepDiff

from _timing import gc_paused, ratio
from assay import Check, Predicate, compile_expression
from assay.clock import SYSTEM_CLOCK
from assay.json.path import format_path
from assay.state import Snapshot, StateStore, changed_fields
from assay.verify.loop import VerifyOptions, verify

T = TypeVar("T")
Segments = tuple[str, ...]

SEED = 20260101
# The shared data folder sits beside the repository (../shared).
TAU2_RETAIL_DB = Path(__file__).resolve().parents[2] / "shared/data/tau2/retail/db.json"


@dataclass(frozen=True)
class Settings:
    quick: bool
    trials: int  # change times in part 1, for assay and for each poller
    warmup_trials: int
    max_delay_ms: float
    poller_stagger_ms: float
    waiters: int
    released: int  # of the waiters, by one report each; the others are cancelled
    idle_s: float
    report_rounds: int
    reports_per_round: int
    diff_repeats: int
    peer_repeats: int

    @classmethod
    def choose(cls, quick: bool) -> Settings:
        return cls(
            quick=quick,
            trials=100 if quick else 1000,
            warmup_trials=10 if quick else 50,
            max_delay_ms=50.0,
            poller_stagger_ms=1.0 if quick else 0.5,
            waiters=10_000,
            released=100,
            idle_s=0.2 if quick else 1.0,
            report_rounds=3 if quick else 7,
            reports_per_round=500 if quick else 2000,
            diff_repeats=50 if quick else 500,
            peer_repeats=1 if quick else 5,
        )


@dataclass(frozen=True)
class Spread:
    """Order statistics of a sample, in the sample's unit (nearest-rank percentiles)."""

    n: int
    median: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        ordered = sorted(values)

        def rank(p: float) -> float:
            return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]

        return cls(len(ordered), statistics.median(ordered), rank(90), rank(99), ordered[-1])

    def scaled(self, factor: float) -> Spread:
        return Spread(
            self.n,
            self.median * factor,
            self.p90 * factor,
            self.p99 * factor,
            self.max * factor,
        )


@dataclass(frozen=True)
class Target:
    """A SPEC §11 figure: ``measured`` against ``goal``, a floor unless ``ceiling``."""

    text: str
    measured: float | None
    goal: float
    shown: str
    ceiling: bool = False

    @property
    def status(self) -> str:
        if self.measured is None:
            return "N/A"
        met = self.measured <= self.goal if self.ceiling else self.measured >= self.goal
        return "PASS" if met else "MISS"


def ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


async def stamped(awaitable: Awaitable[T]) -> tuple[T, int]:
    """The awaitable's result and the ``perf_counter_ns`` at which it was returned."""
    result = await awaitable
    return result, time.perf_counter_ns()


EXPRESSION = "inbox.sent_count == 15"
INITIAL = {
    "inbox": {"sent_count": 14, "unread": 3, "folders": ["inbox", "sent", "archive"]},
    "drone": {"mode": "LOITER", "battery": 87.5},
}
FALSE_AGAIN = {"inbox.sent_count": 14}
CHANGE = {"inbox.sent_count": 15}
TIMEOUT_MS = 5000


@dataclass(frozen=True)
class Poller:
    """A polling peer: check at once, then after each wait of ``waits`` (seconds)."""

    name: str
    waits: tuple[float, ...]  # the last one repeats
    fixed: bool

    def schedule(self) -> Iterator[float]:
        return itertools.chain(self.waits[:-1], itertools.repeat(self.waits[-1]))

    def next_tick(self, after: float) -> float:
        """When, counted from its first check, this poller first checks after ``after``."""
        tick = 0.0
        for wait in self.schedule():
            tick += wait
            if tick >= after:
                return tick
        raise AssertionError("unreachable: the schedule repeats forever")


SEEDS_POLLER = Poller("500 ms poller (seeds)", (0.5,), fixed=True)
POLLERS = (
    SEEDS_POLLER,
    *(Poller(f"playwright fixed {m} ms", (m / 1000,), fixed=True) for m in (100, 250, 500, 1000)),
    Poller("playwright default 100/250/500/1000", (0.1, 0.25, 0.5, 1.0), fixed=False),
)


async def poll(predicate: Predicate, store: StateStore, poller: Poller) -> bool:
    """The peer design: re-read the state and evaluate, sleeping between checks."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT_MS / 1000
    for wait in poller.schedule():
        if predicate.check(store.current.objects).result is True:
            return True
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(wait)
    return False


class Trial(NamedTuple):
    """One change: nanoseconds from the report call to the verdict, and in the call itself."""

    latency: int
    report: int


async def changed_after(
    delay: float, store: StateStore, waiting: Awaitable[tuple[bool, int]]
) -> Trial:
    """Report ``CHANGE`` ``delay`` seconds from now, and time the waiter's answer to it."""
    loop = asyncio.get_running_loop()
    reported_at = report_returned_at = 0

    def change() -> None:
        nonlocal reported_at, report_returned_at
        reported_at = time.perf_counter_ns()
        store.report(CHANGE)
        report_returned_at = time.perf_counter_ns()

    task = asyncio.ensure_future(waiting)
    await asyncio.sleep(0)  # the waiter checks once (false) and parks
    loop.call_later(delay, change)
    passed, returned_at = await task
    if not passed or reported_at == 0:
        raise SystemExit("abort: a verification did not pass on the pushed change")
    return Trial(returned_at - reported_at, report_returned_at - reported_at)


async def assay_latencies(warmups: Sequence[float], delays: Sequence[float]) -> list[Trial]:
    """One verification at a time on one store, so nothing else runs on the loop."""
    store = StateStore(INITIAL, clock=SYSTEM_CLOCK)
    expression = compile_expression(EXPRESSION)
    options = VerifyOptions(timeout_ms=TIMEOUT_MS)

    async def passed() -> bool:
        outcome = await verify(expression, store, options=options, clock=SYSTEM_CLOCK)
        return outcome.passed and outcome.poll_cycles == 2

    trials = []
    for i, delay in enumerate([*warmups, *delays]):
        store.report(FALSE_AGAIN)
        trial = await changed_after(delay, store, stamped(passed()))
        if i >= len(warmups):
            trials.append(trial)
    return trials


async def poller_latencies(delays: Sequence[float], stagger: float) -> dict[str, list[int]]:
    """Every poller on every change time, for real; trials start ``stagger`` seconds apart.

    Each trial has its own store. Trials overlap in time, which costs a poller at most the
    few microseconds another trial's check takes, far below its millisecond ticks.
    """
    expression = compile_expression(EXPRESSION)

    async def trial(start: float, poller: Poller, delay: float) -> int:
        await asyncio.sleep(start)
        store = StateStore(INITIAL, clock=SYSTEM_CLOCK)
        waiting = stamped(poll(expression, store, poller))
        return (await changed_after(delay, store, waiting)).latency

    starts = (i * stagger for i in itertools.count())
    trials = {
        poller.name: [trial(next(starts), poller, delay) for delay in delays] for poller in POLLERS
    }
    results = await asyncio.gather(*(coro for coros in trials.values() for coro in coros))
    return {name: results[i * len(delays) : (i + 1) * len(delays)] for i, name in enumerate(trials)}


def random_phase(poller: Poller, delays: Sequence[float], rng: random.Random) -> list[float]:
    """Latency in seconds to a free-running fixed poller's next tick at a random phase."""
    interval = poller.waits[0]
    return [(rng.uniform(0, interval) - delay) % interval for delay in delays]


def part_latency(settings: Settings, rng: random.Random) -> tuple[dict[str, Any], list[Target]]:
    delays = [rng.uniform(0, settings.max_delay_ms / 1000) for _ in range(settings.trials)]
    warmups = [rng.uniform(0, settings.max_delay_ms / 1000) for _ in range(settings.warmup_trials)]
    print(
        f"\n1. Pushed change → verdict latency  ({EXPRESSION}, one event loop, SYSTEM_CLOCK, "
        f"GC on)\n"
        f"   {settings.trials:,} change times uniform in 0–{settings.max_delay_ms:.0f} ms after "
        f"the waiter parks (seed {SEED}); latency = perf_counter_ns from the report\n"
        "   call to the return of the waiting coroutine (assay: with its whole "
        "VerificationOutcome built).\n"
        "   assay: one verification at a time, run for real. Pollers, 'real': run for real on "
        "the same change times, each starting\n"
        "   with its verification (check at once, then after each wait), all trials "
        f"concurrently with starts {settings.poller_stagger_ms} ms apart, each\n"
        "   on its own store, returning a bare bool. Pollers, 'random phase': computed, the "
        "time from each change to the next tick\n"
        "   of a free-running poller of uniform random phase (median = interval / 2, the "
        "generous case for pollers)."
    )

    async def run_all() -> tuple[list[Trial], list[Trial], dict[str, list[int]]]:
        pushed = await assay_latencies(warmups, delays)
        at_once = await assay_latencies([0.0] * len(warmups), [0.0] * len(delays))
        return pushed, at_once, await poller_latencies(delays, settings.poller_stagger_ms / 1000)

    pushed, at_once, real = asyncio.run(run_all())

    assay = Spread.of([trial.latency for trial in pushed])
    rows: dict[str, Spread] = {"assay verify (pushed)": assay}
    deviations: list[float] = []
    for poller in POLLERS:
        rows[f"{poller.name}, real"] = Spread.of(real[poller.name])
        deviations += [
            abs(got - (poller.next_tick(delay) - delay) * 1e9)
            for got, delay in zip(real[poller.name], delays, strict=True)
        ]
    for poller in POLLERS:
        if poller.fixed:
            phased = random_phase(poller, delays, rng)
            rows[f"{poller.name}, random phase"] = Spread.of(phased).scaled(1e9)
    notes = {
        "assay: of which the report() call": Spread.of([trial.report for trial in pushed]),
        "assay, change due at once (loop never idles)": Spread.of(
            [trial.latency for trial in at_once]
        ),
    }

    print(f"\n   {'waiter':<46}{'median':>13}{'p90':>13}{'p99':>13}{'max':>13}  median vs assay")
    for name, spread in rows.items():
        versus = "-" if spread is assay else f"{ratio(spread.median / assay.median)} slower"
        print(
            f"   {name:<46}{ms(spread.median):>13}{ms(spread.p90):>13}{ms(spread.p99):>13}"
            f"{ms(spread.max):>13}  {versus}"
        )
    print("   informational:")
    for name, spread in notes.items():
        print(
            f"   {name:<46}{ms(spread.median):>13}{ms(spread.p90):>13}{ms(spread.p99):>13}"
            f"{ms(spread.max):>13}"
        )
    drift = Spread.of(deviations)
    print(
        "   real pollers vs their tick model (latency = next tick after the change time - the "
        f"change time): |difference| median {ms(drift.median)}, p99 {ms(drift.p99)}, "
        f"max {ms(drift.max)}"
    )

    seeds = min(
        rows[f"{SEEDS_POLLER.name}, real"].median, rows[f"{SEEDS_POLLER.name}, random phase"].median
    )
    targets = [
        Target(
            "assay pushed change → verdict p99 < 1 ms", assay.p99 / 1e6, 1.0, ms(assay.p99), True
        ),
        Target(
            "assay ≥ 100x the 500 ms poller at the median (its lower median)",
            seeds / assay.median,
            100.0,
            ratio(seeds / assay.median),
        ),
    ]
    figures = {
        "expression": EXPRESSION,
        "trials": settings.trials,
        "max_delay_ms": settings.max_delay_ms,
        "latency_ns": {name: asdict(spread) for name, spread in {**rows, **notes}.items()},
        "poller_model_abs_difference_ns": asdict(drift),
    }
    return figures, targets


HOUR_MS = 3_600_000


@dataclass(slots=True)
class Tally:
    evaluations: int = 0


class CountingPredicate:
    """A predicate that counts its evaluations and otherwise is the one it wraps."""

    __slots__ = ("_inner", "_tally")

    def __init__(self, inner: Predicate, tally: Tally) -> None:
        self._inner = inner
        self._tally = tally

    @property
    def source(self) -> str:
        return self._inner.source

    @property
    def keys(self) -> tuple[str, ...]:
        return self._inner.keys

    def check(self, state: Mapping[str, Any]) -> Check:
        self._tally.evaluations += 1
        return self._inner.check(state)


def rss_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGESIZE")


def waiting_state(n: int) -> dict[str, Any]:
    return {f"k{i}": {"done": False} for i in range(n)}


async def park(
    predicates: Sequence[Predicate], store: StateStore, tally: Tally
) -> list[asyncio.Task[Any]]:
    """Start one verification per predicate and return once each has evaluated and parked."""
    options = VerifyOptions(timeout_ms=HOUR_MS)
    first = tally.evaluations
    tasks = [
        asyncio.create_task(verify(p, store, options=options, clock=SYSTEM_CLOCK))
        for p in predicates
    ]
    for _ in range(100):
        await asyncio.sleep(0)
        if tally.evaluations - first == len(predicates) and not any(t.done() for t in tasks):
            return tasks
    raise SystemExit(f"abort: {tally.evaluations - first} of {len(predicates)} waiters parked")


def time_reports(store: StateStore, count: int, first: int) -> float:
    """Mean nanoseconds per ``report({"unrelated": i})``, each one a real change."""
    with gc_paused():
        start = time.perf_counter_ns()
        for i in range(first, first + count):
            store.report({"unrelated": i})
        return (time.perf_counter_ns() - start) / count


def allocation_sites(
    before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, n: int
) -> list[tuple[str, float, float]]:
    """The biggest allocation sites between two snapshots: (site, bytes, blocks) per waiter."""
    sites = []
    for stat in after.compare_to(before, "lineno")[:8]:
        frame = stat.traceback[0]
        parts = Path(frame.filename).parts
        line = linecache.getline(frame.filename, frame.lineno).strip()
        where = "/".join(parts[-2:]) + f":{frame.lineno}  {line[:60]}"
        sites.append((where, stat.size_diff / n, stat.count_diff / n))
    return sites


async def pending(settings: Settings) -> dict[str, Any]:
    n = settings.waiters
    tally = Tally()
    predicates = [
        CountingPredicate(compile_expression(f"k{i}.done === true"), tally) for i in range(n)
    ]
    parked = StateStore(waiting_state(n), clock=SYSTEM_CLOCK)
    bare = StateStore(waiting_state(n), clock=SYSTEM_CLOCK)  # the same state, nobody waiting

    rss_before = rss_bytes()
    tasks = await park(predicates, parked, tally)
    rss_growth = rss_bytes() - rss_before
    initial_evaluations = tally.evaluations

    tally.evaluations = 0
    await asyncio.sleep(settings.idle_s)
    idle_evaluations = tally.evaluations

    with_waiters: list[float] = []
    without: list[float] = []
    count = settings.reports_per_round
    time_reports(parked, count, -count)  # warm-up
    time_reports(bare, count, -count)
    for r in range(settings.report_rounds):
        with_waiters.append(time_reports(parked, count, r * count))
        without.append(time_reports(bare, count, r * count))
    report_evaluations = tally.evaluations - idle_evaluations

    # Release some by one report each, one at a time; an outcome lists every change to the
    # store since its verification began, so releasing all at once would cost n² fields.
    tally.evaluations = 0
    release_ns: list[int] = []
    fields: list[int] = []
    released = 0
    for i in range(settings.released):
        start = time.perf_counter_ns()
        parked.report({f"k{i}.done": True})
        outcome = await tasks[i]
        release_ns.append(time.perf_counter_ns() - start)
        released += outcome.passed
        fields.append(len(outcome.changed_fields))
    release_evaluations = tally.evaluations
    for task in tasks[settings.released :]:
        task.cancel()
    ends = await asyncio.gather(*tasks[settings.released :], return_exceptions=True)

    # Memory by tracemalloc in a round of its own: tracing slows and inflates the first.
    traced_store = StateStore(waiting_state(n), clock=SYSTEM_CLOCK)
    tracemalloc.start()
    traced_before = tracemalloc.take_snapshot()
    bytes_before = tracemalloc.get_traced_memory()[0]
    traced_tasks = await park(predicates, traced_store, tally)
    traced_bytes = tracemalloc.get_traced_memory()[0] - bytes_before
    sites = allocation_sites(traced_before, tracemalloc.take_snapshot(), n)
    tracemalloc.stop()
    for task in traced_tasks:
        task.cancel()
    traced_ends = await asyncio.gather(*traced_tasks, return_exceptions=True)

    return {
        "waiters": n,
        "initial_evaluations": initial_evaluations,
        "traced_bytes_per_waiter": traced_bytes / n,
        "rss_growth_bytes_per_waiter": rss_growth / n,
        "allocation_sites_per_waiter": sites,
        "idle_s": settings.idle_s,
        "idle_evaluations": idle_evaluations,
        "unrelated_report_ns": {"with_waiters": with_waiters, "without": without},
        "unrelated_report_evaluations": report_evaluations,
        "released": settings.released,
        "released_passed": released,
        "release_ns": release_ns,
        "release_changed_fields": fields,
        "release_evaluations": release_evaluations,
        "cancelled": sum(isinstance(end, asyncio.CancelledError) for end in ends),
        "finished": sum(task.done() for task in tasks),
        "waiting_after": parked.waiting,
        "versions": parked.version,
        "traced_cancelled": sum(isinstance(end, asyncio.CancelledError) for end in traced_ends),
        "traced_waiting_after": traced_store.waiting,
    }


def part_pending(settings: Settings) -> tuple[dict[str, Any], list[Target]]:
    n = settings.waiters
    print(
        f"\n2. {n:,} pending verifications in one process  (k{{i}}.done === true, one key each, "
        f"timeout 1 h, SYSTEM_CLOCK)"
    )
    found = asyncio.run(pending(settings))
    with_waiters = statistics.median(found["unrelated_report_ns"]["with_waiters"])
    without = statistics.median(found["unrelated_report_ns"]["without"])
    per_waiter = found["traced_bytes_per_waiter"]
    release = Spread.of(found["release_ns"])
    fields = found["release_changed_fields"]
    print(
        f"   parked: {found['initial_evaluations']:,} evaluations (one each)\n"
        f"   memory per waiter: {per_waiter:,.0f} bytes traced (tracemalloc: net bytes "
        "allocated by creating and parking them, in a round of\n"
        f"   its own); {found['rss_growth_bytes_per_waiter']:,.0f} bytes RSS growth "
        "(/proc/self/statm, untraced round); compiled expressions not counted.\n"
        "   largest allocation sites, per waiter:"
    )
    for where, size, blocks in found["allocation_sites_per_waiter"]:
        print(f"     {size:>8,.0f} bytes {blocks:>5.2f} blocks  {where}")
    print(
        f"   evaluations while idle for {found['idle_s']} s: {found['idle_evaluations']}; "
        f"during the unrelated reports: {found['unrelated_report_evaluations']}\n"
        f"   report({{'unrelated': i}}), mean of {settings.reports_per_round:,} per round, median "
        f"of {settings.report_rounds} rounds (GC paused), on stores of {n:,} top-level keys:\n"
        f"   {with_waiters / 1000:.2f} µs with {n:,} waiters parked, {without / 1000:.2f} µs "
        f"with none: {ratio(with_waiters / without)}\n"
        f"   released {found['released']} by one report each, one at a time: "
        f"{found['released_passed']} passed, {found['release_evaluations']} evaluations, "
        f"report → outcome median {ms(release.median)}, max {ms(release.max)};\n"
        f"   their changed_fields held {fields[0]} to {fields[-1]} entries (every change since "
        f"each began; the store was at version {found['versions']:,}); cancelled the other "
        f"{found['cancelled']:,}:\n"
        f"   {found['finished']:,}/{n:,} finished, {found['waiting_after']} subscriptions left "
        f"(traced round: {found['traced_cancelled']:,} cancelled, "
        f"{found['traced_waiting_after']} left)"
    )
    targets = [
        Target(
            "≤ 4 KB per pending verification (traced)",
            per_waiter,
            4096.0,
            f"{per_waiter:,.0f} bytes",
            True,
        ),
        Target(
            "zero evaluations while nothing changes",
            float(found["idle_evaluations"] + found["unrelated_report_evaluations"]),
            0.0,
            f"{found['idle_evaluations'] + found['unrelated_report_evaluations']} evaluations",
            True,
        ),
        Target(
            "unrelated report ≤ 2x its cost with no waiters",
            with_waiters / without,
            2.0,
            ratio(with_waiters / without),
            True,
        ),
    ]
    return found, targets


def nine_changes(db: Mapping[str, Any]) -> dict[Segments, Any]:
    """Nine real leaves, picked by sorted id, and a new value for each, of the same type.

    Three orders' statuses, one user's address, two product variants; all inside objects, so
    assay's leaves (arrays are whole) and DeepDiff's are the same paths.
    """
    changes: dict[Segments, Any] = {}
    for order_id in sorted(db["orders"])[:3]:
        status = db["orders"][order_id]["status"]
        changes["orders", order_id, "status"] = "cancelled" if status != "cancelled" else "pending"
    user_id = sorted(db["users"])[0]
    for field, value in (
        ("address1", "1 Benchmark Way"),
        ("city", "Springfield"),
        ("zip", "99999"),
    ):
        changes["users", user_id, "address", field] = value
    product_id = sorted(db["products"])[0]
    first, second = sorted(db["products"][product_id]["variants"])[:2]
    variants = db["products"][product_id]["variants"]
    changes["products", product_id, "variants", first, "available"] = not variants[first][
        "available"
    ]
    changes["products", product_id, "variants", first, "price"] = round(
        variants[first]["price"] + 1.25, 2
    )
    changes["products", product_id, "variants", second, "available"] = not variants[second][
        "available"
    ]
    for path, value in changes.items():
        if read(db, path) == value:
            raise SystemExit(f"abort: {format_path(path)} already holds {value!r}")
    return changes


def read(tree: Mapping[str, Any], path: Segments) -> Any:
    node: Any = tree
    for segment in path:
        node = node[segment]
    return node


def write(tree: dict[str, Any], path: Segments, value: Any) -> None:
    read(tree, path[:-1])[path[-1]] = value


def as_report(changes: Mapping[Segments, Any]) -> dict[str, Any]:
    """The changes as one report with dotted keys, the way an application pushes them."""
    return {format_path(path): value for path, value in changes.items()}


def median_ns(samples: Sequence[int]) -> float:
    return statistics.median(samples)


Changes = dict[Segments, tuple[Any, Any]]
"""Changed leaves by path, with their values before and after."""


def deepdiff_changes(diff: DeepDiff) -> Changes:
    return {
        tuple(str(s) for s in level.path(output_format="list")): (level.t1, level.t2)
        for levels in diff.tree.values()
        for level in levels
    }


def part_database(settings: Settings, db_path: Path) -> tuple[dict[str, Any], list[Target]]:
    text = db_path.read_text()
    db = json.loads(text)
    forward = nine_changes(db)
    backward = {path: read(db, path) for path in forward}
    expected = set(forward)
    print(
        f"\n3. Snapshot + changed fields on the τ² retail database  ({db_path}, "
        f"{len(text) / 1e6:.1f} MB JSON: {len(db['orders'])} orders, {len(db['users'])} users, "
        f"{len(db['products'])} products)\n"
        f"   9 leaf changes as one report, alternately applied and undone, so each repeat is 9 "
        f"real changes:\n"
        + "".join(f"     {format_path(path)}\n" for path in sorted(expected))
        + "   timed with the GC paused (as timeit does), medians of repeats"
    )

    start = time.perf_counter_ns()
    store = StateStore(db, clock=SYSTEM_CLOCK)
    ingest_ns = time.perf_counter_ns() - start

    report_ns: list[int] = []
    between_ns: list[int] = []
    fields_ns: list[int] = []
    reports = itertools.cycle([as_report(forward), as_report(backward)])
    warmup = 10
    seen: list[Changes] = []  # by assay, on the first two repeats: forward and back
    for i in range(warmup + settings.diff_repeats):
        before = store.current
        with gc_paused():
            t0 = time.perf_counter_ns()
            after = store.report(next(reports))
            t1 = time.perf_counter_ns()
            assert isinstance(after, Snapshot)
            assay_changes = store.changes_between(before, after)
            t2 = time.perf_counter_ns()
            general = changed_fields(before.objects, after.objects)
            t3 = time.perf_counter_ns()
        if {c.path for c in assay_changes} != expected or {c.path for c in general} != expected:
            raise SystemExit("abort: assay did not find exactly the 9 changed paths")
        if i < 2:
            seen.append({c.path: (c.before, c.after) for c in assay_changes})
        if i >= warmup:
            report_ns.append(t1 - t0)
            between_ns.append(t2 - t1)
            fields_ns.append(t3 - t2)

    live = copy.deepcopy(db)
    copy_ns: list[int] = []
    apply_ns: list[int] = []
    diff_ns: list[int] = []
    values = itertools.cycle([forward, backward])
    for _ in range(settings.peer_repeats):
        with gc_paused():
            t0 = time.perf_counter_ns()
            snapshot = copy.deepcopy(live)
            t1 = time.perf_counter_ns()
            for path, value in next(values).items():
                write(live, path, value)
            t2 = time.perf_counter_ns()
            diff = DeepDiff(snapshot, live)
            t3 = time.perf_counter_ns()
        found = deepdiff_changes(diff)
        if found != seen[len(copy_ns) % 2] or set(diff.tree) != {"values_changed"}:
            raise SystemExit(f"abort: DeepDiff found {found}, not the 9 changes assay found")
        copy_ns.append(t1 - t0)
        apply_ns.append(t2 - t1)
        diff_ns.append(t3 - t2)

    assay_total = median_ns([a + b for a, b in zip(report_ns, between_ns, strict=True)])
    general_total = median_ns([a + b for a, b in zip(report_ns, fields_ns, strict=True)])
    peer_total = median_ns([sum(t) for t in zip(copy_ns, apply_ns, diff_ns, strict=True)])
    rows = (
        ("assay report (the snapshot) + changes_between", assay_total, settings.diff_repeats),
        ("  of which report", median_ns(report_ns), settings.diff_repeats),
        ("  of which changes_between (change log)", median_ns(between_ns), settings.diff_repeats),
        ("assay report + changed_fields(before, after)", general_total, settings.diff_repeats),
        (
            "  of which changed_fields (structural diff)",
            median_ns(fields_ns),
            settings.diff_repeats,
        ),
        ("deepcopy + apply 9 + DeepDiff", peer_total, settings.peer_repeats),
        ("  of which copy.deepcopy (the snapshot)", median_ns(copy_ns), settings.peer_repeats),
        ("  of which applying the 9 changes in place", median_ns(apply_ns), settings.peer_repeats),
        ("  of which DeepDiff(before, after)", median_ns(diff_ns), settings.peer_repeats),
    )
    print(f"\n   {'step':<50}{'median':>16}{'repeats':>9}  peer vs this")
    for name, value, repeats in rows:
        versus = "" if name.startswith(" ") or value == peer_total else ratio(peer_total / value)
        print(f"   {name:<50}{ms(value):>16}{repeats:>9}  {versus}")
    print(
        "   both found the same 9 paths with the same values before and after (assay: "
        "FieldChange; DeepDiff: values_changed).\n"
        f"   Once, not timed above: StateStore(db) ingest {ms(ingest_ns)} (it copies the db)"
    )
    targets = [
        Target(
            "report + changes_between < 1 ms on ~3 MB, 9 changes",
            assay_total / 1e6,
            1.0,
            ms(assay_total),
            True,
        ),
        Target(
            "≥ 1,000x deepcopy + DeepDiff",
            peer_total / assay_total,
            1000.0,
            ratio(peer_total / assay_total),
        ),
    ]
    figures = {
        "db": str(db_path),
        "db_json_bytes": len(text),
        "paths": sorted(format_path(path) for path in expected),
        "ingest_ns": ingest_ns,
        "median_ns": {name.strip(): value for name, value, _ in rows},
        "repeats": {"assay": settings.diff_repeats, "peer": settings.peer_repeats},
    }
    return figures, targets


def print_targets(found: Sequence[Target]) -> None:
    print("\nTargets (SPEC §11, informational)")
    for target in found:
        print(f"  {target.status:<5} {target.text:<66} measured {target.shown}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials and repeats (smoke run)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures here")
    parser.add_argument("--db", type=Path, default=TAU2_RETAIL_DB, help="the τ² retail db.json")
    args = parser.parse_args(argv)
    settings = Settings.choose(args.quick)
    rng = random.Random(SEED)
    print(
        f"assay verification benchmark: Python {platform.python_version()} "
        f"({platform.machine()}){', quick run' if args.quick else ''}"
    )

    parts: dict[str, Any] = {}
    found: list[Target] = []
    sections: tuple[tuple[str, Callable[[], tuple[dict[str, Any], list[Target]]]], ...] = (
        ("latency", lambda: part_latency(settings, rng)),
        ("pending", lambda: part_pending(settings)),
        ("database", lambda: part_database(settings, args.db)),
    )
    for name, run in sections:
        parts[name], targets = run()
        found += targets

    print_targets(found)
    if args.json is not None:
        report = {
            "settings": {"python": platform.python_version(), "seed": SEED, **asdict(settings)},
            **parts,
            "targets": [
                {"target": t.text, "goal": t.goal, "measured": t.measured, "status": t.status}
                for t in found
            ],
        }
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
