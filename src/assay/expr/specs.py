"""The conditions of the declarative filter form as authored (``Spec``), compiled from a
condition mapping (``compile_specs``) and bound to a fire's arguments (``bind_spec``).

A condition mapping is ``{path: operator set or plain value}``. At the top its paths start
at the state; in an ``all`` or ``any`` they start at each element of the array
(``{"items": {"all": {"status": {"eq": "returned"}}}}``), and an operator set in their place
(``{"all": {"gte": 0}}``) tests the element itself. A nested key spelled like an operator is
written in brackets (``{"all": {"[\\"in\\"]": 1}}``). Errors name a nested condition by its
key under the array's, the element as ``[*]``: ``items[*].status``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from assay.errors import ContractError
from assay.expr.filter_operators import (
    OPERATORS,
    check_operand,
    check_operator_names,
    json_value,
)
from assay.expr.operators import member_key
from assay.expr.quantifiers import MAX_QUANTIFIER_DEPTH, QUANTIFIERS
from assay.json.path import json_type_name, parse_path

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""A ``{name}`` placeholder in a key, filled from a fire's arguments; group 1 is the name."""


def placeholder_text(value: Any) -> str | None:
    """What a ``{name}`` placeholder is filled with: a string as it is, an integer as the key
    an expression reads with it (``orders[args.n]``, ``n`` being ``1e21``, reads
    ``orders["1e+21"]``); ``None`` for any other value, which a placeholder refuses."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return member_key(int(value))
    return None


@dataclass(frozen=True, slots=True)
class Arg:
    """An operand to be taken from the fire's arguments: written ``{"arg": "name"}``."""

    name: str


@dataclass(frozen=True, slots=True)
class Spec:
    """One authored condition: how errors name it (``key``), its path from its root (the
    state, or an element; placeholders still in), an operator and its operand: a JSON value,
    an ``Arg``, a ``Clause`` (``all``, ``any``) or a ``ByMember`` (``contains_all``)."""

    key: str
    segments: tuple[str, ...]
    op: str
    operand: Any


@dataclass(frozen=True, slots=True)
class Clause:
    """The nested conditions of an ``all`` or ``any``, on each element."""

    specs: tuple[Spec, ...]


@dataclass(frozen=True, slots=True)
class ByMember:
    """A ``contains_all`` that compares its values with each element's member at ``by``."""

    by: tuple[str, ...]
    values: Any  # a list, or an Arg until bound


def compile_specs(
    mapping: Mapping[Any, Any], names: set[str], parent: str | None = None, depth: int = 0
) -> list[Spec]:
    """The conditions of a mapping of paths (from the state, or under ``parent``, an
    element); ``names`` collects the arguments they use."""
    specs: list[Spec] = []
    for key, value in mapping.items():
        if not isinstance(key, str):
            where = "" if parent is None else f" under {parent!r}"
            raise ContractError(
                f"contract key {key!r}{where} must be a string path", key=parent or str(key)
            )
        segments = _path(key, parent)
        names.update(name for segment in segments for name in PLACEHOLDER.findall(segment))
        named = key if parent is None else f"{parent}{'' if key.startswith('[') else '.'}{key}"
        specs.extend(_conditions_on(named, segments, value, names, depth))
    return specs


def _path(text: str, within: str | None, op: str | None = None) -> tuple[str, ...]:
    """``text`` parsed as a path; a nested one's error names the condition it is in."""
    if within is None:
        return parse_path(text)
    try:
        return parse_path(text)
    except ContractError as error:
        raise ContractError(f"contract key {within!r}: {error}", key=within, op=op) from None


def _conditions_on(
    key: str, segments: tuple[str, ...], value: Any, names: set[str], depth: int
) -> Iterator[Spec]:
    if isinstance(value, Mapping) and not is_arg(value):
        check_operator_names(key, value)
        operators = list(value.items())
    else:
        operators = [("eq", value)]
    for op, raw in operators:
        yield Spec(key, segments, op, _operand(raw, key, op, names, depth))


def _operand(raw: Any, key: str, op: str, names: set[str], depth: int) -> Any:
    if op in QUANTIFIERS:
        return _clause(raw, key, op, names, depth + 1)
    if op == "contains_all" and isinstance(raw, Mapping) and not is_arg(raw):
        return _by_member(raw, key, names)
    operand = _plain_operand(raw, key, op)
    if isinstance(operand, Arg):
        names.add(operand.name)  # its operand is checked once bound
    else:
        check_operand(op, operand, key)
    return operand


def _clause(raw: Any, key: str, op: str, names: set[str], depth: int) -> Clause:
    example = f'{{"{op}": {{"status": {{"eq": "returned"}}}}}}, or {{"{op}": {{"gte": 0}}}}'
    if not isinstance(raw, Mapping) or is_arg(raw):
        seen = "an argument" if isinstance(raw, Mapping) else json_type_name(raw)
        raise ContractError(
            f"contract key {key!r}: {op} needs a mapping of conditions on each element, "
            f"written in the contract, got {seen}; write {example} to test the elements "
            "themselves",
            key=key,
            op=op,
        )
    if not raw:
        raise ContractError(
            f"contract key {key!r}: {op} needs at least one condition on each element, got "
            f"an empty mapping; write {example} to test the elements themselves",
            key=key,
            op=op,
        )
    element = f"{key}[*]"
    if depth > MAX_QUANTIFIER_DEPTH:
        raise ContractError(
            f"contract key {element!r}: all and any nest more than {MAX_QUANTIFIER_DEPTH} "
            "deep; test fewer levels of arrays in one condition",
            key=element,
            op=op,
        )
    operators = [name for name in raw if name in OPERATORS]
    if not operators:
        return Clause(tuple(compile_specs(raw, names, element, depth)))
    if len(operators) < len(raw):
        paths = ", ".join(repr(name) for name in raw if name not in OPERATORS)
        raise ContractError(
            f"contract key {key!r}: {op} mixes operators on the element itself "
            f"({', '.join(map(repr, operators))}) with paths in it ({paths}); test the "
            "element and its members in separate conditions, or write a member named like "
            'an operator in brackets (["in"])',
            key=key,
            op=op,
        )
    return Clause(tuple(_conditions_on(element, (), raw, names, depth)))


def _by_member(raw: Mapping[Any, Any], key: str, names: set[str]) -> ByMember:
    if set(raw) != {"by", "values"}:
        raise ContractError(
            f"contract key {key!r}: contains_all takes a list of values, or "
            '{"by": "item_id", "values": [...]} to match elements by a member, got '
            f"an object with {', '.join(sorted(map(repr, map(str, raw)))) or 'no keys'}",
            key=key,
            op="contains_all",
        )
    if not isinstance(raw["by"], str):
        raise ContractError(
            f"contract key {key!r}: contains_all's by needs the path of a member of each "
            f'element, such as "item_id", got {json_type_name(raw["by"])}',
            key=key,
            op="contains_all",
        )
    by = _path(raw["by"], key, "contains_all")
    names.update(name for segment in by for name in PLACEHOLDER.findall(segment))
    values = _plain_operand(raw["values"], key, "contains_all")
    if isinstance(values, Arg):
        names.add(values.name)
    else:
        check_operand("contains_all", values, key)
    return ByMember(by, values)


def is_arg(value: Mapping[Any, Any]) -> bool:
    """Whether a mapping is an argument operand, ``{"arg": ...}``."""
    return len(value) == 1 and "arg" in value


def _plain_operand(raw: Any, key: str, op: str) -> Any:
    """An authored operand as an ``Arg`` or a JSON value (tuples become lists)."""
    if isinstance(raw, Mapping) and is_arg(raw):
        name = raw["arg"]
        if not (isinstance(name, str) and _NAME.fullmatch(name)):
            raise ContractError(
                f'contract key {key!r} ({op}): {{"arg": ...}} needs an argument name such as '
                f'"order_id", got {name!r}',
                key=key,
                op=op,
            )
        return Arg(name)
    return json_value(raw, key, op)


def bind_spec(spec: Spec, args: Mapping[str, Any]) -> Spec:
    """``spec`` with its placeholders and ``Arg`` operands, nested ones included, filled from
    ``args``; ``ContractError`` naming the key and the argument that is missing or unfit."""

    def argument(name: str, what: str) -> Any:
        if name not in args:
            given = ", ".join(sorted(map(str, args))) or "none"
            raise ContractError(
                f"contract key {spec.key!r} needs argument {name!r} for {what}, "
                f"which was not given (given: {given})",
                key=spec.key,
                op=spec.op,
            )
        return args[name]

    def segment_value(match: re.Match[str]) -> str:
        name = match.group(1)
        value = argument(name, "its path")
        text = placeholder_text(value)
        if text is not None:
            return text
        raise ContractError(
            f"contract key {spec.key!r}: argument {name!r} stands in the path, so it must be "
            f"a string or an integer, got {json_type_name(value)}",
            key=spec.key,
            op=spec.op,
        )

    def filled(segments: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(PLACEHOLDER.sub(segment_value, segment) for segment in segments)

    def operand_of(operand: Any) -> Any:
        if not isinstance(operand, Arg):
            return operand
        name = operand.name
        try:
            value = json_value(argument(name, f"its {spec.op} operand"), spec.key, spec.op)
            check_operand(spec.op, value, spec.key)
        except ContractError as error:
            if name not in args:
                raise
            raise ContractError(
                f"{error} (from argument {name!r})", key=spec.key, op=spec.op
            ) from None
        return value

    segments = filled(spec.segments)  # the path first: its arguments are named first
    operand = spec.operand
    if isinstance(operand, Clause):
        operand = Clause(tuple(bind_spec(child, args) for child in operand.specs))
    elif isinstance(operand, ByMember):
        operand = ByMember(filled(operand.by), operand_of(operand.values))
    else:
        operand = operand_of(operand)
    return Spec(spec.key, segments, spec.op, operand)
