"""Binding a fire's arguments into its writes and contracts.

Placeholders (``orders.{order_id}.status``) are filled one path segment at a time, so an
argument is always one segment; expressions see the arguments as ``args``; a fire's own
``verify_expression`` joins the declared contract (``AllOf``), and the two are echoed side by
side, each as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from assay.expr import Expression
from assay.expr.contract import Contract
from assay.expr.predicate import Check, Predicate, require_state
from assay.expr.specs import PLACEHOLDER, placeholder_text
from assay.json.path import format_path, json_type_name, parse_path


class ArgsPredicate:
    """An expression that sees the fire's arguments as ``args`` beside the state keys."""

    def __init__(self, expression: Expression, args: Mapping[str, Any]) -> None:
        self.expression = expression
        self.args = dict(args)
        # orders[args.order_id].status reads orders.o1.status, not all of orders.
        self._keys = expression.keys_with(self.args)

    @property
    def source(self) -> str:
        return self.expression.source

    @property
    def keys(self) -> tuple[str, ...]:
        return self._keys

    def check(self, state: Mapping[str, Any]) -> Check:
        require_state(state)
        return self.expression.check({**state, "args": self.args})


class AllOf:
    """Several predicates that must all hold (a declared contract and a fire's own)."""

    def __init__(self, parts: Iterable[Predicate]) -> None:
        self.parts = tuple(parts)

    @property
    def source(self) -> str:
        """Each part as written, the declared first: ``{"a":{"eq":1}} (declared) and b > 1
        (given with the fire)``; no one expression or declarative contract spells both."""
        *declared, given = self.parts
        return " and ".join(
            [
                *(f"{part.source} (declared)" for part in declared),
                f"{given.source} (given with the fire)",
            ]
        )

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(sorted({key for part in self.parts for key in part.keys}))

    def check(self, state: Mapping[str, Any]) -> Check:
        checks = [part.check(state) for part in self.parts]
        conditions = tuple(c for check in checks for c in check.conditions)
        errors = [check.error for check in checks if check.error]
        if any(check.result is False for check in checks):
            return Check(result=False, value=False, error=None, conditions=conditions)
        if errors:
            return Check(result=None, value=None, error="; ".join(errors), conditions=conditions)
        return Check(result=True, value=True, conditions=conditions)


def covers(contract: Contract, writes: tuple[str, ...]) -> bool:
    """Does the declarative contract put a condition on (or inside) every written key?"""
    if not writes:
        return False
    keys = [parse_path(key) for key in contract.keys]
    return all(
        any(tuple(key[: len(write)]) == write for key in keys)
        for write in (parse_path(w) for w in writes)
    )


def related(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def fill(template: str, args: Mapping[str, Any]) -> str:
    """Fill ``{name}`` placeholders inside each path segment, so a value is one segment.

    ``ValueError`` unless each argument so used is a string or an integer: a key written
    from ``None`` or ``1.0`` (``orders.None``) is one no application writes.
    """

    def segment_value(match: re.Match[str]) -> str:
        name = match.group(1)
        value = args[name]
        text = placeholder_text(value)
        if text is not None:
            return text
        raise ValueError(
            f"writes key {template!r}: argument {name!r} stands in the path, so it must be a "
            f"string or an integer, got {json_type_name(value)}"
        )

    return format_path(PLACEHOLDER.sub(segment_value, segment) for segment in parse_path(template))
