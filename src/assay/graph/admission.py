"""Admission: whether a fire is accepted or refused, before anything runs.

A fire is refused (in its result, never raised) when its action is unknown, its arguments
break the action's schema or its verify expression does not compile, its action is not
available at the session's node, another fire holds its single flight, or the substrate's
confidence is below what its reversibility tier needs. An argument of the wrong kind is a
``WrongTypeError``, raised before anything is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from assay.errors import ContractError, WrongTypeError, escape_surrogates
from assay.expr import compile_expression
from assay.expr.contract import Contract, compile_contract
from assay.expr.predicate import Predicate
from assay.graph.binding import AllOf, ArgsPredicate, covers, fill
from assay.graph.declaration import MAX_MILLISECONDS, ActionSpec, Reversibility, check_arguments
from assay.graph.graph import NavigationGraph
from assay.graph.registry import FireRegistry
from assay.graph.result import RefusalFigures
from assay.redaction import Redaction
from assay.state.canonical import HALF_SURROGATE_PAIR, exact_json_object, holds_half_surrogate_pair
from assay.state.substrate import Substrate

DEFAULT_THRESHOLDS: Final = {
    Reversibility.REVERSIBLE: 0.5,
    Reversibility.COMPENSABLE: 0.8,
    Reversibility.IRREVERSIBLE: 0.95,
}

_KINDS: Final[dict[object, str]] = {
    str: "a string",
    str | None: "a string or None",
    int | None: "a whole number of milliseconds or None",
}


@dataclass(frozen=True, slots=True)
class Admitted:
    """A fire accepted: its args as the ledger records them, the keys it writes, what
    verifies it, and its declarative contract when that covers every written key."""

    spec: ActionSpec
    args: dict[str, Any]
    source: str
    writes: tuple[str, ...]
    predicate: Predicate | None
    covering: Contract | None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A fire refused: its ``reason`` (``bad_arguments``, ``not_available_here``,
    ``single_flight``, ``low_confidence``), what to tell the agent, and the figures."""

    spec: ActionSpec
    args: dict[str, Any]
    source: str
    reason: str
    message: str
    figures: RefusalFigures | None = None


@dataclass(frozen=True, slots=True)
class UnknownAction:
    """A fire of an action the graph does not declare."""

    action_id: str


def check_kinds(
    action_id: object, source: object, verify_expression: object, verify_timeout_ms: object
) -> None:
    """``WrongTypeError`` naming the first of a fire's arguments of the wrong kind."""
    for name, value, kind in (
        ("action_id", action_id, str),
        ("source", source, str),
        ("verify_expression", verify_expression, str | None),
        ("verify_timeout_ms", verify_timeout_ms, int | None),
    ):
        if not isinstance(value, kind) or isinstance(value, bool):
            raise WrongTypeError(
                f"{name} must be {_KINDS[kind]}, not {type(value).__name__}", parameter=name
            )


class Admission:
    """Decides, for one session, whether each fire is accepted."""

    def __init__(  # noqa: PLR0917
        self,
        session: str,
        graph: NavigationGraph,
        substrate: Substrate,
        registry: FireRegistry,
        thresholds: dict[Reversibility, float],
        redaction: Redaction,
    ) -> None:
        self.session = session
        self.graph = graph
        self.substrate = substrate
        self.registry = registry
        self.thresholds = thresholds
        self.redaction = redaction
        self.contracts: dict[str, Contract] = {}  # each action's compiled verify mapping

    def admit(  # noqa: PLR0917
        self,
        action_id: str,
        given: Mapping[str, Any] | None,
        source: str,
        verify_expression: str | None,
        verify_timeout_ms: int | None,
        node: str,
    ) -> Admitted | Refusal | UnknownAction:
        """Accept or refuse a fire of ``action_id`` at ``node`` (its kinds already checked)."""
        args = dict(given) if isinstance(given, Mapping) else {}
        spec = self.graph.action(action_id)
        if spec is None:
            return UnknownAction(action_id)
        if given is not None and not isinstance(given, Mapping):
            return Refusal(
                spec, args, source, "bad_arguments",
                f"args must be an object mapping argument names to values, not "
                f"{type(given).__name__}; pass None or {{}} for none",
            )  # fmt: skip
        if holds_half_surrogate_pair(source):
            return Refusal(
                spec, args, escape_surrogates(source), "bad_arguments",
                f"source: {HALF_SURROGATE_PAIR}",
            )  # fmt: skip
        if spec.page != node:
            where = ", ".join(self.graph.pages_with(spec.name)) or spec.page
            return Refusal(
                spec, args, source, "not_available_here",
                f"{action_id} is not available at {node!r}; it is available at {where}",
                RefusalFigures(node=node, available_at=self.graph.pages_with(spec.name)),
            )  # fmt: skip
        bound = self._bound(spec, args, source, verify_expression, verify_timeout_ms)
        if isinstance(bound, Refusal):
            return bound
        return self._single_flight(bound) or self._confidence(bound) or bound

    def _bound(
        self,
        spec: ActionSpec,
        args: dict[str, Any],
        source: str,
        verify_expression: str | None,
        verify_timeout_ms: int | None,
    ) -> Admitted | Refusal:
        """The fire bound to its args, or refused for bad ones (as they were when found)."""
        try:
            if verify_timeout_ms is not None and not 0 <= verify_timeout_ms <= MAX_MILLISECONDS:
                raise ValueError(
                    f"verify_timeout_ms must be from 0 to {MAX_MILLISECONDS:,} milliseconds "
                    f"(a day), not {verify_timeout_ms}"
                )
            # The args a handler gets are the ones the ledger records, with or without one.
            args = exact_json_object(args, "args")
            if verify_expression is not None and holds_half_surrogate_pair(verify_expression):
                raise ValueError(f"verify_expression: {HALF_SURROGATE_PAIR}")
            writes, predicate, declared = self._bind(spec, args, verify_expression)
            covering = declared if declared is not None and covers(declared, writes) else None
        except (ContractError, ValueError) as error:
            return Refusal(spec, args, source, "bad_arguments", str(error))
        return Admitted(spec, args, source, writes, predicate, covering)

    def _bind(
        self, spec: ActionSpec, args: dict[str, Any], extra: str | None
    ) -> tuple[tuple[str, ...], Predicate | None, Contract | None]:
        """The written keys, the whole verify predicate and the declared contract, bound to
        ``args``; ``ValueError`` or ``ContractError`` when they do not fit."""
        missing = sorted(spec.placeholders - set(args))
        if missing:
            raise ValueError(
                f"{spec.id} needs the argument{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)} (used in its writes or verify contract)"
            )
        check_arguments(spec, args)
        writes = tuple(fill(key, args) for key in spec.writes)
        parts: list[Predicate] = []
        declared = None
        if spec.verify_mapping is not None:
            contract = self.contracts.get(spec.id)
            if contract is None:
                contract = compile_contract(spec.verify_mapping, redaction=self.redaction)
                self.contracts[spec.id] = contract
            declared = contract.bind(args)
            parts.append(declared)
        if spec.expression is not None:
            parts.append(ArgsPredicate(spec.expression, args))
        if extra is not None:
            parts.append(ArgsPredicate(compile_expression(extra), args))
        predicate = None if not parts else parts[0] if len(parts) == 1 else AllOf(parts)
        return writes, predicate, declared

    def _single_flight(self, fire: Admitted) -> Refusal | None:
        """A refusal when ``fire``'s action is single-flight and a pending fire holds it."""
        spec = fire.spec
        held = self.registry.holder(spec.id)
        if not spec.single_flight or held is None:
            return None
        holder_session, holder = held
        of = "" if holder_session == self.session else f" of session {holder_session!r}"
        return Refusal(
            spec, fire.args, fire.source, "single_flight",
            f"{spec.id} is single-flight and {holder}{of} is still pending; wait for it "
            "to settle (did_it_work) before firing again",
            RefusalFigures(holder=holder, holder_session=holder_session),
        )  # fmt: skip

    def _confidence(self, fire: Admitted) -> Refusal | None:
        """A refusal when the confidence is below what ``fire``'s reversibility tier needs."""
        spec = fire.spec
        confidence = self.substrate.confidence()
        threshold = self.thresholds[spec.reversibility]
        if confidence.value >= threshold:
            return None
        shown, needed = _apart(confidence.value, threshold)
        return Refusal(
            spec, fire.args, fire.source, "low_confidence",
            f"confidence {shown} is below the {needed} that "
            f"{_article(spec.reversibility.value)} action needs "
            f"(freshness {confidence.freshness:.2f}, "
            f"coverage {confidence.coverage:.2f}, health {confidence.health:.2f})",
            RefusalFigures(
                confidence=confidence.value, threshold=threshold,
                freshness=confidence.freshness, coverage=confidence.coverage,
                health=confidence.health, reversibility=spec.reversibility.value,
            ),
        )  # fmt: skip

    def refused_unknown(self, action_id: str, node: str) -> str:
        """Why a fire of ``action_id`` at ``node``, which names no action, is refused."""
        known = [spec.id for spec in self.graph.actions(node)]
        meant = " or ".join(map(repr, self.graph.likely_meant(action_id)))
        guess = f" (did you mean {meant}?)" if meant else ""
        return f"no action is called {action_id!r}{guess}; available here: {', '.join(known)}"


def resolve_thresholds(
    given: Mapping[Reversibility, float] | Mapping[str, float] | None,
) -> dict[Reversibility, float]:
    """The confidence each tier needs: the defaults, with ``given`` over them; a tier that is
    not one, or a threshold that is not a number from 0 to 1, is a ``WrongTypeError``."""
    if given is not None and not isinstance(given, Mapping):
        raise WrongTypeError(
            f"thresholds must map tiers to numbers, not {type(given).__name__}",
            parameter="thresholds",
        )
    thresholds = dict(DEFAULT_THRESHOLDS)
    tiers = ", ".join(tier.value for tier in Reversibility)
    for key, value in (given or {}).items():
        try:
            tier = Reversibility(key)
        except ValueError:
            raise WrongTypeError(
                f"thresholds: {key!r} is not a reversibility tier; tiers are {tiers}",
                parameter="thresholds",
            ) from None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            raise WrongTypeError(
                f"thresholds: {tier.value} must be a number from 0 to 1, not {value!r}",
                parameter="thresholds",
            )
        thresholds[tier] = float(value)
    return thresholds


def _apart(value: float, threshold: float) -> tuple[str, str]:
    """``value`` and ``threshold`` with two decimals, or as many more as it takes for them not
    to read alike (0.946 is below 0.95; "0.95 is below the 0.95" says nothing)."""
    for places in range(2, 7):
        shown, needed = f"{value:.{places}f}", f"{threshold:.{places}f}"
        if shown != needed:
            break
    return shown, needed


def _article(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"
