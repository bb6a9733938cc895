"""``build_server(host, tool_per_action=True)``: one strict tool per action, firing it as
``fire`` does, driven by the SDK's own client (its in-memory pairing)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import jsonschema
import pytest
from mcp import Client

from assay.cli.main import main
from assay.errors import GraphError
from assay.examples.outpost import APPLICATION as OUTPOST
from assay.graph import build_navigation_graph
from assay.host import Application, Host
from assay.ledger import Ledger, MemoryBackend
from assay.mcp import build_server
from assay.mcp.action_tools import action_tools, tool_name
from assay.mcp.strict import strict_schema, without_null_optionals
from assay.state.store import StateStore

pytestmark = pytest.mark.anyio

SHIPPING = build_navigation_graph(
    "shop",
    pages={
        "cart": {
            "actions": {
                "ship": {
                    "does": "Ship the order",
                    "writes": ["orders.{order_id}"],
                    "verify": {"orders.{order_id}.shipped": {"eq": True}},
                    "reversibility": "compensable",
                    "input": {
                        "type": "object",
                        "properties": {
                            "order_id": {"type": "string", "minLength": 1},
                            "note": {"type": "string"},
                            "priority": {"enum": ["low", "high"]},
                            "address": {
                                "type": "object",
                                "properties": {
                                    "street": {"type": "string"},
                                    "floor": {"type": "integer"},
                                },
                                "required": ["street"],
                            },
                            "parcels": {
                                "type": "array",
                                "items": {
                                    "type": "object",
                                    "properties": {
                                        "weight": {"type": "number"},
                                        "label": {
                                            "anyOf": [{"type": "string"}, {"type": "integer"}]
                                        },
                                    },
                                    "required": ["weight"],
                                    "additionalProperties": False,
                                },
                            },
                        },
                        "required": ["order_id"],
                        "additionalProperties": False,
                    },
                },
                "cancel": {
                    "does": "Cancel the order",
                    "writes": ["orders.{order_id}"],
                    "verify": {"orders.{order_id}.cancelled": {"eq": True}},
                    "reversibility": "irreversible",
                },
                "clear": {
                    "does": "Empty the cart",
                    "writes": ["cart.items"],
                    "verify": {"cart.items": {"eq": 0}},
                },
            }
        }
    },
)

SHIPPED: list[dict[str, Any]] = []


def _shop() -> Application:
    def handlers(store: StateStore) -> Mapping[str, Any]:
        def ship(args: dict[str, Any]) -> None:
            SHIPPED.append(args)
            store.report({f"orders.{args['order_id']}.shipped": True})

        return {
            "cart.ship": ship,
            "cart.cancel": lambda args: None,
            "cart.clear": lambda args: None,
        }

    return Application.in_process(
        SHIPPING, start="cart", state={"orders": {}, "cart": {"items": 2}}, handlers=handlers
    )


@pytest.fixture
async def shop() -> AsyncIterator[Client]:
    SHIPPED.clear()
    async with (
        Host(_shop(), Ledger(MemoryBackend())) as host,
        Client(build_server(host, tool_per_action=True)) as client,
    ):
        yield client


def strict_faults(schema: Any, path: str = "$") -> list[str]:
    """Where ``schema`` breaks OpenAI's strict mode: an object without
    ``additionalProperties: false``, or with a property not in ``required``."""
    if isinstance(schema, list):
        return [
            fault for i, sub in enumerate(schema) for fault in strict_faults(sub, f"{path}[{i}]")
        ]
    if not isinstance(schema, dict):
        return []
    faults = []
    kind = schema.get("type")
    if kind == "object" or (isinstance(kind, list) and "object" in kind) or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            faults.append(f"{path}: additionalProperties is not false")
        missing = set(schema.get("properties", {})) - set(schema.get("required", ()))
        if missing:
            faults.append(f"{path}: {sorted(missing)} not required")
    for key, sub in schema.items():
        if key in ("properties", "$defs"):
            for name, each in sub.items():
                faults += strict_faults(each, f"{path}.{name}")
        elif key in ("items", "anyOf", "oneOf", "allOf"):
            faults += strict_faults(sub, f"{path}.{key}")
    return faults


def test_the_checker_finds_what_strict_mode_refuses() -> None:
    loose = SHIPPING.action("cart.ship")
    assert loose is not None and loose.input_schema is not None
    assert strict_faults(dict(loose.input_schema)) == [
        "$: ['address', 'note', 'parcels', 'priority'] not required",
        "$.address: additionalProperties is not false",
        "$.address: ['floor'] not required",
        "$.parcels.items: ['label'] not required",
    ]


async def test_each_action_is_a_tool_named_described_and_hinted_by_it(shop: Client) -> None:
    tools = {tool.name: tool for tool in (await shop.list_tools()).tools}
    assert list(tools) == [
        "list_actions",
        "fire",
        "did_it_work",
        "get_state",
        "verify",
        "cart_ship",
        "cart_cancel",
        "cart_clear",
    ]
    assert tools["cart_ship"].description == (
        "Ship the order. Compensable: another action can make up for it. Fires cart.ship as "
        "fire does, with the same answer."
    )
    assert tools["cart_cancel"].description == (
        "Cancel the order. Irreversible: it cannot be undone; check get_state and its verify "
        "contract first. Fires cart.cancel as fire does, with the same answer."
    )
    hints = {name: tools[name].annotations for name in ("cart_ship", "cart_cancel", "cart_clear")}
    assert {
        name: (h.title, h.read_only_hint, h.destructive_hint, h.idempotent_hint)
        for name, h in hints.items()
        if h is not None
    } == {
        "cart_ship": ("Fire cart.ship", False, False, False),
        "cart_cancel": ("Fire cart.cancel", False, True, False),
        "cart_clear": ("Fire cart.clear", False, False, False),
    }
    assert tools["cart_ship"].output_schema == tools["fire"].output_schema


async def test_every_input_schema_is_strict_and_a_valid_schema(shop: Client) -> None:
    tools = {tool.name: tool for tool in (await shop.list_tools()).tools}
    for name in ("cart_ship", "cart_cancel", "cart_clear"):
        schema = tools[name].input_schema
        assert strict_faults(schema) == [], name
        jsonschema.Draft202012Validator.check_schema(schema)
    ship = tools["cart_ship"].input_schema
    assert ship["required"] == ["order_id", "note", "priority", "address", "parcels", "wait_ms"]
    properties = ship["properties"]
    assert properties["order_id"] == {"type": "string", "minLength": 1}
    assert properties["note"] == {"type": ["string", "null"]}
    assert properties["priority"] == {"enum": ["low", "high", None]}
    assert properties["address"]["type"] == ["object", "null"]
    assert properties["address"]["properties"]["floor"] == {"type": ["integer", "null"]}
    label = properties["parcels"]["items"]["properties"]["label"]
    assert label == {
        "anyOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]
    }
    assert tools["cart_cancel"].input_schema["properties"]["order_id"] == {"type": "string"}
    assert tools["cart_cancel"].input_schema["required"] == ["order_id", "wait_ms"]
    assert list(tools["cart_clear"].input_schema["properties"]) == ["wait_ms"]
    validator = jsonschema.Draft202012Validator(ship)
    every_null = {
        "order_id": "o1",
        "note": None,
        "priority": None,
        "address": None,
        "parcels": [{"weight": 1.5, "label": None}],
        "wait_ms": None,
    }
    assert list(validator.iter_errors(every_null)) == []
    assert not validator.is_valid({**every_null, "order_id": None})
    assert not validator.is_valid({**every_null, "extra": 1})


async def test_the_outpost_schemas_are_strict_too() -> None:
    for tool in action_tools(OUTPOST.graph):
        assert strict_faults(tool.input_schema) == [], tool.name
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    assert tool_name("inbox.mark-all-read") == "inbox_mark-all-read"


def _same(result: Any) -> dict[str, Any]:
    """An answer with what differs between two fires of one action (their ids) left out."""
    assert result.is_error is False, result.content
    content = dict(result.structured_content)
    for key in ("transition_id", "why", "waiting_on", "verification"):
        content.pop(key, None)
    return content


async def test_a_tool_fires_its_action_as_fire_does(shop: Client) -> None:
    through_tool = await shop.call_tool(
        "cart_ship",
        {
            "order_id": "o1",
            "note": None,
            "priority": "high",
            "address": None,
            "parcels": None,
            "wait_ms": 5000,
        },
    )
    through_fire = await shop.call_tool(
        "fire",
        {"action": "cart.ship", "args": {"order_id": "o2", "priority": "high"}, "wait_ms": 5000},
    )
    assert through_tool.structured_content is not None
    assert through_tool.structured_content["transition_id"] == "cart.ship#1"
    assert through_tool.structured_content["answer"] == "worked"
    assert _same(through_tool) == _same(through_fire)
    assert SHIPPED == [
        {"order_id": "o1", "priority": "high"},
        {"order_id": "o2", "priority": "high"},
    ]


async def test_a_null_optional_argument_is_not_given_at_any_depth(shop: Client) -> None:
    result = await shop.call_tool(
        "cart_ship",
        {
            "order_id": "o3",
            "note": None,
            "priority": None,
            "address": {"street": "Main", "floor": None},
            "parcels": [{"weight": 2, "label": None}],
            "wait_ms": None,
        },
    )
    assert result.is_error is False, result.content
    assert SHIPPED == [
        {"order_id": "o3", "address": {"street": "Main"}, "parcels": [{"weight": 2}]}
    ]


async def test_a_null_required_argument_and_a_wrong_one_are_refused(shop: Client) -> None:
    refused = await shop.call_tool("cart_cancel", {"order_id": None, "wait_ms": None})
    assert refused.is_error is True
    assert refused.content[0].text == (  # type: ignore[union-attr]
        "cart_cancel: the arguments do not match its input schema (see tools/list): "
        "order_id: must be string, not null"
    )
    bad = await shop.call_tool("cart_ship", {"order_id": "", "wait_ms": 0})
    assert bad.is_error is True
    assert bad.content[0].text.startswith(  # type: ignore[union-attr]
        "cart.ship: args['order_id']: '' should be non-empty"
    )
    unknown = await shop.call_tool("cart_clear", {"wait": 0})
    assert unknown.content[0].text == (  # type: ignore[union-attr]
        "cart_clear: no argument is called 'wait'; it takes wait_ms"
    )


CLASH = build_navigation_graph(
    "clash",
    pages={
        "a_b": {"actions": {"c": {"does": "One"}}},
        "a": {"actions": {"b_c": {"does": "Another"}}},
    },
)


def test_two_actions_making_one_tool_name_are_refused_naming_both() -> None:
    with pytest.raises(GraphError) as raised:
        action_tools(CLASH)
    assert str(raised.value) == (
        "actions a_b.c and a.b_c both make the tool name 'a_b_c'; rename one of them to serve "
        "a tool per action"
    )
    assert raised.value.action == "a.b_c"


def test_an_action_making_a_generic_tools_name_is_refused() -> None:
    graph = build_navigation_graph("clash", pages={"get": {"actions": {"state": {"does": "Get"}}}})
    with pytest.raises(
        GraphError,
        match=r"^action get\.state makes the tool name 'get_state', a "
        r"generic tool's; rename the action to serve a tool per action$",
    ):
        action_tools(graph, taken=("list_actions", "fire", "did_it_work", "get_state", "verify"))


def test_a_schema_with_free_form_keys_cannot_be_made_strict() -> None:
    schema = {
        "type": "object",
        "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}},
    }
    with pytest.raises(GraphError, match=r"input\.tags is an object with free-form keys"):
        strict_schema(schema, "cart.tag")


def test_nulls_are_dropped_only_where_the_schema_leaves_a_property_optional() -> None:
    schema = {"type": "object", "properties": {"a": {}, "b": {}}, "required": ["a"]}
    assert without_null_optionals({"a": None, "b": None}, schema) == {"a": None}


CLASH_APP = Application.in_process(
    CLASH,
    start="a",
    handlers={"a_b.c": lambda args: None, "a.b_c": lambda args: None},
)


def test_assay_mcp_offers_the_flag_and_refuses_a_clash_at_start(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["mcp", "--help"])
    assert "--tool-per-action" in capsys.readouterr().out
    app = f"{__name__}:CLASH_APP"
    assert main(["mcp", "--app", app, "--ledger", "memory:", "--tool-per-action"]) == 2
    assert capsys.readouterr().err == (
        "assay mcp: error: actions a_b.c and a.b_c both make the tool name 'a_b_c'; rename one "
        "of them to serve a tool per action\n"
    )
