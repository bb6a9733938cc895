"""The declarative filter form of a contract (SPEC §3), compiled to a ``Predicate``.

``{"view.domain": {"eq": "billing"}, "cart.quantity": {"gte": 1}}`` holds when every
condition holds; a plain value is shorthand for ``eq``, a dict value is an operator set. Keys
may hold ``{name}`` placeholders and operands may be ``{"arg": "name"}``, resolved by
``bind``. A missing key fails every operator but ``exists: false``, ``ne`` and ``nin``. Arrays
have quantifiers (``all``, ``any``, ``contains_all``: see ``specs`` and ``quantifiers``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from assay.errors import ContractError
from assay.expr.conditions import Condition
from assay.expr.filter_operators import json_value
from assay.expr.predicate import Check, require_state
from assay.expr.specs import Spec, bind_spec, compile_specs
from assay.json.path import format_path, json_type_name

if TYPE_CHECKING:
    from assay.redaction import Redaction


class Contract:
    """A compiled declarative contract; a ``Predicate`` once its placeholders are bound."""

    __slots__ = ("_conditions", "_keys", "_placeholders", "_redaction", "_source", "_specs")

    def __init__(
        self,
        specs: tuple[Spec, ...],
        source: str,
        redaction: Redaction,
        placeholders: frozenset[str],
    ) -> None:
        self._specs = specs
        self._source = source
        self._redaction = redaction
        self._keys = tuple(sorted({format_path(spec.segments) for spec in specs}))
        self._placeholders = placeholders
        self._conditions: tuple[Condition, ...] | None = (
            None if placeholders else tuple(Condition(spec, redaction) for spec in specs)
        )

    @property
    def source(self) -> str:
        """The contract as authored, as canonical JSON text (keys sorted, no spaces); ``bind``
        keeps it."""
        return self._source

    @property
    def keys(self) -> tuple[str, ...]:
        """The dotted paths it reads, sorted and unique (placeholders as written); a
        quantifier reads its whole array, so its nested paths are not listed apart."""
        return self._keys

    @property
    def placeholders(self) -> frozenset[str]:
        """The argument names ``bind`` must be given; empty once bound."""
        return self._placeholders

    def __repr__(self) -> str:
        return f"Contract({self._source})"

    def bind(self, args: Mapping[str, Any]) -> Contract:
        """Resolve ``{name}`` key segments and ``{"arg": name}`` operands from ``args``.

        Raises ``ContractError`` naming the key and the argument when one is missing or
        unfit; arguments the contract does not use are ignored.
        """
        if not self._placeholders:
            return self
        specs = tuple(bind_spec(spec, args) for spec in self._specs)
        return Contract(specs, self._source, self._redaction, frozenset())

    def check(self, state: Mapping[str, Any]) -> Check:
        """Evaluate every condition once against ``state``; holds when all of them hold.

        A quantifier that stops at its element limit leaves the verdict unknown: the check is
        false if another condition fails, and otherwise could not be evaluated (``result``
        ``None``, ``error`` saying why). Never raises for a JSON object; raises
        ``ContractError`` if placeholders are unbound and ``WrongTypeError`` if ``state`` is
        not a mapping.
        """
        require_state(state)
        if self._conditions is None:
            names = ", ".join(sorted(self._placeholders))
            raise ContractError(
                f"contract {self._source} has unbound placeholders ({names}); "
                "call bind(args) before check"
            )
        found = [condition.evaluate(state) for condition in self._conditions]
        evidence = tuple(item for item, _ in found)
        errors = [error for _, error in found if error is not None]
        if errors and all(item.result for item, error in found if error is None):
            return Check(result=None, value=None, error="; ".join(errors), conditions=evidence)
        result = not errors and all(item.result for item in evidence)
        return Check(result=result, value=result, conditions=evidence)


def compile_contract(mapping: Mapping[str, Any], *, redaction: Redaction | None = None) -> Contract:
    """Compile the declarative filter form; raise ``ContractError`` naming the key at fault."""
    if not isinstance(mapping, Mapping):
        raise ContractError(
            f"a contract must be a mapping of keys to conditions, got {json_type_name(mapping)}"
        )
    if not mapping:
        raise ContractError(
            'a contract needs at least one condition, e.g. {"view.domain": {"eq": "billing"}}'
        )
    names: set[str] = set()
    specs = compile_specs(mapping, names)
    source = json.dumps(
        {key: json_value(value, key, "") for key, value in mapping.items()},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    if redaction is None:
        from assay.redaction import Redaction  # which reads paths with this package

        redaction = Redaction.none()
    return Contract(tuple(specs), source, redaction, frozenset(names))
