"""Benchmark assay's expression language against peers, all in one run.

Every engine evaluates the same three predicates on a pool of distinct ~50-key states, cycled so
that nothing can be cached across calls. Rounds are interleaved engine by engine so all engines
share the machine's noise; the best round is the headline figure, the median is shown beside it.

    .venv/bin/python bench/expressions.py [--quick] [--json PATH]

Targets (SPEC §11): assay ≥ 0.5x a hand-written Python lambda on simple predicates, ≥ 0.3x with
array callbacks, and two orders of magnitude beyond an embedded JS engine. Informational: the exit
status is 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import celpy
import celpy.adapter
import celpy.celparser
import celpy.celtypes
import quickjs
import simpleeval

import assay
from _timing import gc_paused, ratio

State = dict[str, Any]
Evaluate = Callable[[State], object]

POOL_SIZE = 256
ITEM_COUNT = 25
DONE_ITEM_IDS = frozenset({3, 11, 19})
TOP_LEVEL_KEYS = 50


@dataclass(frozen=True)
class Predicate:
    """One predicate, spelled in each engine's own syntax; every spelling must be true."""

    name: str
    source: str
    roots: tuple[str, ...]
    python: Callable[[State], bool]
    simpleeval: str
    cel: str
    lambda_target: float


PREDICATES = (
    Predicate(
        name="P1",
        source='inbox.sent_count == 15 && drone.mode == "GUIDED"',
        roots=("inbox", "drone"),
        python=lambda s: s["inbox"]["sent_count"] == 15 and s["drone"]["mode"] == "GUIDED",
        simpleeval='inbox["sent_count"] == 15 and drone["mode"] == "GUIDED"',
        cel='inbox.sent_count == 15 && drone.mode == "GUIDED"',
        lambda_target=0.5,
    ),
    Predicate(
        name="P2",
        source='inbox.folders.includes("archive") && items.length >= 20',
        roots=("inbox", "items"),
        python=lambda s: "archive" in s["inbox"]["folders"] and len(s["items"]) >= 20,
        simpleeval='"archive" in inbox["folders"] and len(items) >= 20',
        cel='"archive" in inbox.folders && size(items) >= 20',
        lambda_target=0.5,
    ),
    Predicate(
        name="P3",
        source="items.filter(i => i.done).length >= 1",
        roots=("items",),
        python=lambda s: len([i for i in s["items"] if i["done"]]) >= 1,
        simpleeval='len([i for i in items if i["done"]]) >= 1',
        cel="size(items.filter(i, i.done)) >= 1",
        lambda_target=0.3,
    ),
)

JS_ENGINE = "quickjs-ng"
JS_ENGINE_FACTOR = 100.0


class EngineUnavailableError(Exception):
    """An engine cannot run a predicate; the reason is shown in its row instead of figures."""


def js_truthy(value: object) -> bool:
    """JavaScript's `Boolean(value)` for the Python values a JS evaluation returns."""
    if value is None or value is False or isinstance(value, assay.Undefined):
        return False
    if isinstance(value, int | float):
        return value != 0 and not math.isnan(value)
    if isinstance(value, str):
        return value != ""
    return True


def prepare_lambda(predicate: Predicate) -> Evaluate:
    return predicate.python


def prepare_assay(predicate: Predicate) -> Evaluate:
    try:
        expression = assay.compile_expression(predicate.source)
    except Exception as error:  # the compiler is still being written; show why, time the rest
        raise EngineUnavailableError(f"{type(error).__name__}: {error}") from error
    return expression.evaluate


def prepare_quickjs(predicate: Predicate) -> Evaluate:
    # quickjs.Context directly, on this thread: quickjs.Function would add a thread-pool hop and a
    # full GC to every call. The state can only cross as JSON text, so dumps is part of the call.
    context = quickjs.Context()
    context.eval(
        f"function predicate(text) {{\n"
        f"  const {{{', '.join(predicate.roots)}}} = JSON.parse(text);\n"
        f"  return {predicate.source};\n"
        f"}}"
    )
    function = context.get("predicate")
    dumps = json.dumps

    def evaluate(state: State) -> object:
        return function(dumps(state))

    return evaluate


def prepare_simpleeval(predicate: Predicate) -> Evaluate:
    evaluator = simpleeval.EvalWithCompoundTypes(
        functions={**simpleeval.DEFAULT_FUNCTIONS, "len": len}
    )
    source = predicate.simpleeval
    parsed = evaluator.parse(source)

    def evaluate(state: State) -> object:
        evaluator.names = state
        return evaluator.eval(source, previously_parsed=parsed)

    return evaluate


def cel_preparer(runner_class: type[celpy.Runner]) -> Callable[[Predicate], Evaluate]:
    def prepare(predicate: Predicate) -> Evaluate:
        # celpy caches one Lark parser per process, built with the tree class of the first
        # Environment; CompiledRunner needs its own tree class, so start each from a clean slate.
        celpy.celparser.CELParser.CEL_PARSER = None
        environment = celpy.Environment(runner_class=runner_class)
        program = environment.program(environment.compile(predicate.cel))
        json_to_cel = celpy.adapter.json_to_cel

        def evaluate(state: State) -> object:
            return program.evaluate(json_to_cel(state))  # type: ignore[arg-type]

        return evaluate

    return prepare


def cel_verdict(value: object) -> bool:
    return isinstance(value, celpy.celtypes.BoolType) and bool(value)


@dataclass(frozen=True)
class Engine:
    name: str
    prepare: Callable[[Predicate], Evaluate]
    verdict: Callable[[object], bool]


LAMBDA = Engine("python lambda", prepare_lambda, bool)
ASSAY = Engine("assay", prepare_assay, js_truthy)
ENGINES = (
    LAMBDA,
    ASSAY,
    Engine(JS_ENGINE, prepare_quickjs, lambda value: value is True),
    Engine("simpleeval", prepare_simpleeval, lambda value: value is True),
    Engine("cel-python", cel_preparer(celpy.InterpretedRunner), cel_verdict),
    Engine("cel-python compiled", cel_preparer(celpy.CompiledRunner), cel_verdict),
)


def build_state() -> State:
    """A deterministic ~50-key nested state on which every predicate is true."""
    state: State = {
        "inbox": {
            "sent_count": 15,
            "unread": 4,
            "folders": ["inbox", "sent", "drafts", "archive", "spam", "trash"],
            "last_sent": {"to": "ops@example.com", "subject": "Status", "at": 1_717_171_717},
        },
        "drone": {
            "mode": "GUIDED",
            "armed": True,
            "battery": 87.5,
            "position": {"lat": 47.3977, "lon": 8.5456, "alt": 120.0},
        },
        "items": [
            {"id": i, "name": f"item-{i:02d}", "done": i in DONE_ITEM_IDS}
            for i in range(ITEM_COUNT)
        ],
    }
    shapes: tuple[Callable[[int], object], ...] = (
        lambda k: k * 37 % 101,
        lambda k: f"value-{k}",
        lambda k: {"enabled": k % 2 == 0, "count": k, "label": f"section {k}"},
        lambda k: [k, k + 1, k + 2, f"tag-{k}"],
        lambda k: {"meta": {"version": k, "owner": f"user{k}"}, "ratio": k / 8},
    )
    for k in range(TOP_LEVEL_KEYS - len(state)):
        state[f"section_{k:02d}"] = shapes[k % len(shapes)](k)
    return state


def build_pool(state: State, size: int) -> list[State]:
    """Distinct deep copies, so that no engine can recognise a state it has already seen."""
    text = json.dumps(state)
    return [json.loads(text) for _ in range(size)]


@dataclass
class Run:
    """One engine on one predicate: its evaluator, then its timed rounds."""

    engine: Engine
    evaluate: Evaluate | None
    unavailable: str = ""
    calls: int = 0
    rates: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return max(self.rates)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)


def check_agreement(predicate: Predicate, runs: Sequence[Run], pool: Sequence[State]) -> None:
    """Abort unless every engine finds the predicate true on the states it will be timed on."""
    for run in runs:
        if run.evaluate is None:
            continue
        for state in pool[:8]:
            try:
                verdict = run.engine.verdict(run.evaluate(state))
            except Exception as error:
                sys.exit(
                    f"abort: {run.engine.name} could not evaluate {predicate.name} "
                    f"({predicate.source}): {type(error).__name__}: {error}"
                )
            if not verdict:
                sys.exit(
                    f"abort: the engines disagree on {predicate.name} ({predicate.source}): "
                    f"{run.engine.name} says false where the Python lambda says true; "
                    f"fix that engine's spelling of the predicate before timing it"
                )


def cycled(pool: Sequence[State], calls: int) -> list[State]:
    full, rest = divmod(calls, len(pool))
    return [*pool] * full + [*pool[:rest]]


def time_calls(evaluate: Evaluate, states: Sequence[State]) -> int:
    """Nanoseconds for one call per state, with the cyclic GC paused as timeit does."""
    with gc_paused():
        start = time.perf_counter_ns()
        for state in states:
            evaluate(state)
        return time.perf_counter_ns() - start


def calibrate(evaluate: Evaluate, pool: Sequence[State], round_seconds: float) -> int:
    """How many calls fill one round of about round_seconds."""
    calls = 1
    while True:
        elapsed = time_calls(evaluate, cycled(pool, calls))
        if elapsed >= round_seconds * 1e9 / 10 or calls >= 10_000_000:
            return max(1, round(calls * round_seconds * 1e9 / max(elapsed, 1)))
        calls *= 4


def measure(runs: Sequence[Run], pool: Sequence[State], rounds: int, round_seconds: float) -> None:
    timed = [run for run in runs if run.evaluate is not None]
    for run in timed:
        assert run.evaluate is not None
        run.calls = calibrate(run.evaluate, pool, round_seconds)
    for _ in range(rounds):
        for run in timed:
            assert run.evaluate is not None
            elapsed = time_calls(run.evaluate, cycled(pool, run.calls))
            run.rates.append(run.calls * 1e9 / elapsed)


def assay_rate(runs: Sequence[Run]) -> float | None:
    for run in runs:
        if run.engine is ASSAY and run.rates:
            return run.best
    return None


def print_table(predicate: Predicate, runs: Sequence[Run]) -> None:
    lambda_best = runs[0].best
    assay_best = assay_rate(runs)
    print(f"\n{predicate.name}  {predicate.source}")
    print(f"  {'engine':<21}{'evals/s best':>14}{'median':>14}{'x lambda':>11}  assay vs engine")
    for run in runs:
        if not run.rates:
            print(f"  {run.engine.name:<21}unavailable: {run.unavailable}")
            continue
        versus = "-"
        if assay_best is not None and run.engine is not ASSAY:
            versus = f"assay is {ratio(assay_best / run.best)} {run.engine.name}"
        print(
            f"  {run.engine.name:<21}{run.best:>14,.0f}{run.median:>14,.0f}"
            f"{ratio(run.best / lambda_best):>11}  {versus}"
        )


@dataclass(frozen=True)
class Target:
    text: str
    measured: float | None
    goal: float

    @property
    def status(self) -> str:
        if self.measured is None:
            return "N/A"
        return "PASS" if self.measured >= self.goal else "MISS"


def targets(results: dict[str, list[Run]]) -> list[Target]:
    found: list[Target] = []
    for predicate in PREDICATES:
        runs = results[predicate.name]
        assay_best = assay_rate(runs)
        by_name = {run.engine.name: run for run in runs if run.rates}
        lambda_ratio = None if assay_best is None else assay_best / runs[0].best
        found.append(
            Target(
                f"{predicate.name} assay ≥ {predicate.lambda_target}x python lambda",
                lambda_ratio,
                predicate.lambda_target,
            )
        )
        js = by_name.get(JS_ENGINE)
        js_ratio = None if assay_best is None or js is None else assay_best / js.best
        found.append(
            Target(
                f"{predicate.name} assay ≥ {JS_ENGINE_FACTOR:.0f}x {JS_ENGINE}",
                js_ratio,
                JS_ENGINE_FACTOR,
            )
        )
    return found


def print_targets(found: Sequence[Target]) -> None:
    print("\nTargets (SPEC §11, informational)")
    for target in found:
        measured = "n/a" if target.measured is None else ratio(target.measured)
        print(f"  {target.status:<5} {target.text:<40} measured {measured}")


def report(
    results: dict[str, list[Run]], found: Sequence[Target], settings: dict[str, Any]
) -> dict[str, Any]:
    predicates: dict[str, Any] = {}
    for predicate in PREDICATES:
        runs = results[predicate.name]
        lambda_best = runs[0].best
        assay_best = assay_rate(runs)
        engines: dict[str, Any] = {}
        for run in runs:
            if not run.rates:
                engines[run.engine.name] = {"unavailable": run.unavailable}
                continue
            engines[run.engine.name] = {
                "best_evals_per_s": run.best,
                "median_evals_per_s": run.median,
                "round_evals_per_s": run.rates,
                "calls_per_round": run.calls,
                "ratio_to_lambda": run.best / lambda_best,
                "assay_ratio_to_engine": None if assay_best is None else assay_best / run.best,
            }
        predicates[predicate.name] = {
            "source": predicate.source,
            "simpleeval": predicate.simpleeval,
            "cel": predicate.cel,
            "engines": engines,
        }
    return {
        "settings": settings,
        "predicates": predicates,
        "targets": [
            {"target": t.text, "goal": t.goal, "measured": t.measured, "status": t.status}
            for t in found
        ],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter rounds (smoke run)")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the figures here")
    args = parser.parse_args(argv)
    rounds, round_seconds = (2, 0.05) if args.quick else (5, 0.2)

    state = build_state()
    pool = build_pool(state, POOL_SIZE)
    settings = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "rounds": rounds,
        "round_seconds": round_seconds,
        "pool_size": POOL_SIZE,
        "top_level_keys": len(state),
        "state_json_bytes": len(json.dumps(state)),
    }
    print(
        f"assay expression benchmark: Python {settings['python']}, {rounds} rounds of "
        f"~{round_seconds}s per engine, best round shown\n"
        f"state: {len(state)} top-level keys, {settings['state_json_bytes']} bytes as JSON; "
        f"{POOL_SIZE} distinct copies cycled"
    )

    results: dict[str, list[Run]] = {}
    for predicate in PREDICATES:
        runs: list[Run] = []
        for engine in ENGINES:
            try:
                runs.append(Run(engine, engine.prepare(predicate)))
            except EngineUnavailableError as reason:
                runs.append(Run(engine, None, unavailable=str(reason)))
        check_agreement(predicate, runs, pool)
        measure(runs, pool, rounds, round_seconds)
        results[predicate.name] = runs
        print_table(predicate, runs)

    found = targets(results)
    print_targets(found)
    if args.json is not None:
        args.json.write_text(json.dumps(report(results, found, settings), indent=2) + "\n")
        print(f"\nfigures written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
