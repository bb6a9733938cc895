"""An action's input schema made strict, as OpenAI's strict function calling requires.

Strict mode takes an object schema only when every object in it says
``additionalProperties: false`` and lists every property in ``required``; an optional
property is written as one that may be ``null`` instead. ``strict_schema`` makes that
transform, recursively through properties, array items, ``anyOf``/``oneOf``/``allOf`` and
``$defs``; ``without_null_optionals`` reads a call's arguments back, a ``null`` for a
property the action's own schema leaves optional meaning "not given".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from assay.errors import GraphError

_BRANCHES = ("anyOf", "oneOf", "allOf", "prefixItems")
_DEFINITIONS = ("$defs", "definitions")


def strict_schema(schema: Mapping[str, Any], action: str) -> dict[str, Any]:
    """``schema`` (action ``action``'s input schema, an object) made strict-mode compatible;
    ``GraphError`` naming the action and the path when it cannot be: a root that is not an
    object, or an object whose keys are free-form (``additionalProperties`` or
    ``patternProperties`` a schema), which strict mode has no way to say."""
    if schema.get("type", "object") != "object":
        raise GraphError(
            f"{action}: its input schema must be an object to be a tool's input schema, "
            f"not of type {schema.get('type')!r}",
            action=action,
            field="input",
        )
    strict: dict[str, Any] = _strict(schema, action, "input")
    strict["type"] = "object"
    strict.setdefault("properties", {})
    strict.setdefault("required", [])
    strict["additionalProperties"] = False
    return strict


def placeholder_schema(names: Iterable[str]) -> dict[str, Any]:
    """The strict input schema of an action that declares none: each ``{name}`` placeholder
    of its ``writes`` and ``verify`` a required string, or an empty object if it has none."""
    ordered = sorted(names)
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in ordered},
        "required": ordered,
        "additionalProperties": False,
    }


def without_null_optionals(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` with every ``null`` left out that stands for a property ``schema`` (the
    action's own input schema) does not require, through its properties and array items."""
    if isinstance(value, dict):
        required = set(schema.get("required", ()))
        properties = schema.get("properties", {})
        return {
            key: without_null_optionals(item, properties.get(key, {}))
            for key, item in value.items()
            if item is not None or key in required
        }
    items = schema.get("items")
    if isinstance(value, list) and isinstance(items, Mapping):
        return [without_null_optionals(item, items) for item in value]
    return value


def _strict(node: Any, action: str, path: str) -> Any:
    if not isinstance(node, Mapping):
        return node
    strict = dict(node)
    if _is_object(node):
        for keyword in ("additionalProperties", "patternProperties"):
            free = node.get(keyword)
            if isinstance(free, Mapping) or free is True:
                raise GraphError(
                    f"{action}: {path} is an object with free-form keys ({keyword}), which a "
                    "strict tool schema cannot say; declare its properties instead",
                    action=action,
                    field="input",
                )
        properties: Mapping[str, Any] = node.get("properties", {})
        required = set(node.get("required", ()))
        strict["properties"] = {
            key: _strict(sub, action, f"{path}.{key}")
            if key in required
            else _nullable(_strict(sub, action, f"{path}.{key}"))
            for key, sub in properties.items()
        }
        strict["required"] = list(properties)
        strict["additionalProperties"] = False
    if isinstance(node.get("items"), Mapping):
        strict["items"] = _strict(node["items"], action, f"{path}[]")
    for keyword in _BRANCHES:
        if isinstance(node.get(keyword), list):
            strict[keyword] = [_strict(sub, action, path) for sub in node[keyword]]
    for keyword in _DEFINITIONS:
        if isinstance(node.get(keyword), Mapping):
            strict[keyword] = {
                name: _strict(sub, action, f"{keyword}.{name}")
                for name, sub in node[keyword].items()
            }
    return strict


def _is_object(node: Mapping[str, Any]) -> bool:
    kind = node.get("type")
    return kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in node


def _nullable(node: Any) -> Any:
    """``node``, taking ``null`` as well."""
    if not isinstance(node, Mapping):
        return {"anyOf": [node, {"type": "null"}]}
    kind = node.get("type")
    if "enum" in node and (kind is None or isinstance(kind, str | list)):
        nullable = {**node, "enum": [*node["enum"], *([] if None in node["enum"] else [None])]}
        if kind is not None:
            nullable["type"] = _with_null(kind)
        return nullable
    if isinstance(kind, str | list) and not {"anyOf", "oneOf", "allOf", "$ref", "const"} & set(
        node
    ):
        return {**node, "type": _with_null(kind)}
    return {"anyOf": [node, {"type": "null"}]}


def _with_null(kind: str | list[str]) -> list[str]:
    kinds = [kind] if isinstance(kind, str) else list(kind)
    return kinds if "null" in kinds else [*kinds, "null"]
