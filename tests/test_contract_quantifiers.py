"""The array quantifiers of the declarative filter form: ``all``, ``any``, ``contains_all``.

Their semantics, the evidence of the element or the values that decided, redaction inside
arrays, arguments and placeholders in nested conditions, the keys they read, compile errors,
the element limit, and what the already-true rule and the ledger make of them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from assay.clock import VirtualClock
from assay.errors import ContractError
from assay.expr.contract import compile_contract
from assay.expr.mismatch import describe_mismatch
from assay.expr.predicate import ConditionEvidence, ElementEvidence
from assay.expr.quantifiers import MAX_ELEMENT_CHECKS
from assay.graph import build_navigation_graph
from assay.graph.answers import answer_from_evidence
from assay.graph.binding import covers
from assay.graph.evidence import condition_json
from assay.ledger import Ledger, MemoryBackend
from assay.redaction import Redaction
from assay.workflow.verifier import describe


def one(contract: dict[str, Any], state: dict[str, Any], **options: Any) -> ConditionEvidence:
    check = compile_contract(contract, **options).check(state)
    assert len(check.conditions) == 1
    assert check.result is check.conditions[0].result
    return check.conditions[0]


ITEMS = {"o": {"items": [{"status": "returned", "n": 1}, {"status": "delivered", "n": 2}]}}


@pytest.mark.parametrize(
    ("condition", "value", "result"),
    [
        ({"all": {"status": "returned"}}, [{"status": "returned"}], True),
        ({"all": {"status": "returned"}}, [{"status": "returned"}, {"status": "x"}], False),
        ({"all": {"status": "returned"}}, [], True),
        ({"any": {"status": "returned"}}, [{"status": "x"}, {"status": "returned"}], True),
        ({"any": {"status": "returned"}}, [{"status": "x"}], False),
        ({"any": {"status": "returned"}}, [], False),
        # Every nested condition must hold of one and the same element.
        ({"any": {"a": 1, "b": 2}}, [{"a": 1, "b": 0}, {"a": 0, "b": 2}], False),
        ({"any": {"a": 1, "b": 2}}, [{"a": 1, "b": 0}, {"a": 1, "b": 2}], True),
        # An operator set in place of the nested mapping tests the element itself.
        ({"all": {"gte": 0, "lt": 3}}, [0, 1, 2.5], True),
        ({"all": {"gte": 0}}, [0, "1"], False),
        ({"any": {"in": ["a", "b"]}}, ["c", "b"], True),
        ({"all": {"ne": None}}, [0, False, ""], True),
        # A nested path through something that is not an object is missing, so ne holds.
        ({"all": {"status": {"ne": "x"}}}, [5, None, "s", [1]], True),
        ({"all": {"status": {"exists": True}}}, [{"status": None}], True),
        # Quantifiers nest: arrays of arrays, and arrays inside elements.
        ({"all": {"any": {"eq": 1}}}, [[1, 2], [0, 1]], True),
        ({"all": {"any": {"eq": 1}}}, [[1, 2], []], False),
        ({"any": {"xs": {"all": {"gt": 0}}}}, [{"xs": [0]}, {"xs": [1, 2]}], True),
        ({"contains_all": ["a", "b"]}, ["b", "c", "a"], True),
        ({"contains_all": ["a", "b"]}, ["b", "c"], False),
        ({"contains_all": []}, [], True),
        ({"contains_all": ["a", "a"]}, ["a"], True),  # how often a value occurs is not counted
        # JSON deep equality: 1 is 1.0, true is not 1, objects compare by content.
        ({"contains_all": [1, {"k": [1]}]}, [{"k": [1.0]}, 1.0], True),
        ({"contains_all": [1]}, [True], False),
        ({"contains_all": [2**53 + 1]}, [float(2**53)], False),
        ({"contains_all": {"by": "id", "values": ["x", "y"]}}, [{"id": "y"}, {"id": "x"}], True),
        ({"contains_all": {"by": "id", "values": ["x", "y"]}}, [{"id": "y"}, {"ID": "x"}], False),
        ({"contains_all": {"by": "a.b", "values": [{"c": 1}]}}, [{"a": {"b": {"c": 1}}}], True),
    ],
)
def test_semantics(condition: dict[str, Any], value: Any, result: bool) -> None:
    assert one({"x": condition}, {"x": value}).result is result


@pytest.mark.parametrize("op", ["all", "any", "contains_all"])
def test_a_value_that_is_not_an_array_fails_with_a_reason(op: str) -> None:
    operand: Any = ["a"] if op == "contains_all" else {"gte": 0}
    for value, kind in [({"a": 1}, "an object"), ("abc", "a string"), (None, "null")]:
        item = one({"o.x": {op: operand}}, {"o": {"x": value}})
        assert (item.result, item.reason) == (False, f"o.x is {kind}, {op} needs an array")
        assert (item.elements, item.missing) == (None, None)
    missing = one({"o.x": {op: operand}}, {"o": {}})
    assert (missing.result, missing.actual_summary, missing.reason) == (
        False,
        None,
        "o.x is missing (o has no key 'x')",
    )


def test_all_reports_the_first_element_that_failed_and_each_nested_condition() -> None:
    state = {"o": {"items": [*ITEMS["o"]["items"], {"n": 3}]}}
    item = one({"o.items": {"all": {"status": "returned", "n": {"lte": 2}}}}, state)
    assert item == ConditionEvidence(
        key="o.items",
        op="all",
        threshold={"status": {"eq": "returned"}, "n": {"lte": 2}},
        actual_summary='[{"status":"returned","n":1},{"status":"delivered","n":2},{"n":3}]',
        result=False,
        elements=(
            ElementEvidence(
                index=1,
                result=False,
                conditions=(
                    ConditionEvidence("o.items.1.status", "eq", "returned", '"delivered"', False),
                    ConditionEvidence("o.items.1.n", "lte", 2, "2", True),
                ),
            ),
        ),
    )
    assert describe_mismatch(item) == 'o.items.1.status was "delivered", not "returned"'


def test_all_that_holds_singles_out_no_element() -> None:
    item = one({"o.items": {"all": {"n": {"gte": 1}}}}, ITEMS)
    assert (item.result, item.elements) == (True, ())


def test_any_reports_the_first_element_that_held() -> None:
    item = one({"o.items": {"any": {"n": {"gte": 1}}}}, ITEMS)
    assert item.result is True
    assert item.elements == (
        ElementEvidence(0, True, (ConditionEvidence("o.items.0.n", "gte", 1, "1", True),)),
    )


def test_any_that_failed_reports_the_nearest_element() -> None:
    history = [
        {"transaction_type": "payment", "amount": 4, "method": "card"},
        {"transaction_type": "refund", "amount": 5, "method": "gift"},
        {"transaction_type": "refund", "amount": 5, "method": "paypal"},
    ]
    contract = {"h": {"any": {"transaction_type": "refund", "method": "card", "amount": 5}}}
    item = one(contract, {"h": history})
    assert item.result is False
    (element,) = item.elements or ()
    assert (element.index, element.result) == (1, False)  # two of three held; the first such
    assert [(c.key, c.result) for c in element.conditions] == [
        ("h.1.transaction_type", True),
        ("h.1.method", False),
        ("h.1.amount", True),
    ]
    assert describe_mismatch(item) == (
        'no element of h satisfied it; the nearest, h.1.method was "gift", not "card"'
    )
    empty = one(contract, {"h": []})
    assert (empty.result, empty.elements) == (False, ())
    assert describe_mismatch(empty) == "h has no elements, so none satisfied it"


def test_nested_evidence_names_full_paths_and_what_was_missing() -> None:
    state = {"o": {"orders": [{"items": [{"id": "x"}]}, {"items": [{"sku": "y"}, {"id": "z"}]}]}}
    item = one({"o.orders": {"all": {"items": {"any": {"id": "x"}}}}}, state)
    (outer,) = item.elements or ()
    (inner,) = outer.conditions
    assert (outer.index, inner.key, inner.op) == (1, "o.orders.1.items", "any")
    (nearest,) = inner.elements or ()
    assert nearest.conditions == (
        ConditionEvidence(
            "o.orders.1.items.0.id",
            "eq",
            "x",
            None,
            False,
            reason="o.orders.1.items.0.id is missing (o.orders.1.items.0 has no key 'id')",
        ),
    )
    assert describe_mismatch(item) == (
        "no element of o.orders.1.items satisfied it; the nearest, "
        "o.orders.1.items.0.id is missing (o.orders.1.items.0 has no key 'id')"
    )


def test_an_element_of_the_wrong_type_says_so_by_its_path() -> None:
    item = one({"xs": {"all": {"gte": 0}}}, {"xs": [1, "2", -1]})
    (element,) = item.elements or ()
    assert element.conditions == (
        ConditionEvidence(
            "xs.1", "gte", 0, '"2"', False, reason="xs.1 is a string, gte needs a number"
        ),
    )


def test_contains_all_names_the_values_the_array_lacks() -> None:
    item = one({"r": {"contains_all": ["a", "b", {"c": 1}, "d"]}}, {"r": ["a", {"c": 1.0}]})
    assert (item.result, item.missing, item.elements) == (False, ("b", "d"), None)
    assert describe_mismatch(item) == 'r lacked "b", "d"'
    by = one(
        {"items": {"contains_all": {"by": "item_id", "values": ["1", "2"]}}},
        {"items": [{"item_id": "2"}, {"item_id": 1}]},
    )
    assert (by.result, by.missing, by.threshold) == (
        False,
        ("1",),
        {"by": "item_id", "values": ["1", "2"]},
    )
    assert describe_mismatch(by) == 'items lacked item_id "1"'
    held = one({"r": {"contains_all": ["a"]}}, {"r": ["a"]})
    assert (held.result, held.missing) == (True, ())


def test_a_redacted_array_withholds_every_value_inside_it() -> None:
    secret = "4111-1111"
    state = {"u": {"cards": [{"number": secret}, {"number": "5500"}]}}
    contract = {"u.cards": {"all": {"number": {"matches": "^4"}}}}
    item = one(contract, state, redaction=Redaction(["u.cards"]))
    assert (item.redacted, item.actual_summary, item.result) == (True, None, False)
    (element,) = item.elements or ()
    assert element.conditions == (
        ConditionEvidence("u.cards.1.number", "matches", "^4", None, False, redacted=True),
    )
    assert describe_mismatch(item) == 'u.cards.1.number (redacted) was not matching "^4"'
    assert secret not in repr(item) and "5500" not in repr(item)
    # A pattern that covers only a member of each element withholds only that member.
    item = one(contract, state, redaction=Redaction(["u.cards.*.number"]))
    assert (item.redacted, item.actual_summary) == (
        False,
        '[{"number":"[redacted]"},{"number":"[redacted]"}]',
    )
    assert (item.elements or ())[0].conditions[0].redacted is True
    assert secret not in repr(item)


def test_arguments_and_placeholders_work_inside_nested_conditions() -> None:
    contract = compile_contract(
        {
            "orders.{order_id}.items": {
                "all": {"{field}": {"arg": "status"}},
                "contains_all": {"by": "{id_field}", "values": {"arg": "item_ids"}},
            },
            "orders.{order_id}.history": {"any": {"amount": {"gte": {"arg": "least"}}}},
        }
    )
    assert contract.keys == ("orders.{order_id}.history", "orders.{order_id}.items")
    assert contract.placeholders == frozenset(
        {"order_id", "field", "status", "id_field", "item_ids", "least"}
    )
    bound = contract.bind(
        {
            "order_id": "#W1",
            "field": "status",
            "status": "returned",
            "id_field": "id",
            "item_ids": ["a"],
            "least": 10,
        }
    )
    assert bound.keys == ('orders["#W1"].history', 'orders["#W1"].items')
    state = {
        "orders": {
            "#W1": {
                "items": [{"id": "a", "status": "returned"}],
                "history": [{"amount": 5}, {"amount": 12}],
            }
        }
    }
    check = bound.check(state)
    assert check.result is True
    assert [(c.op, c.threshold) for c in check.conditions] == [
        ("all", {"status": {"eq": "returned"}}),
        ("contains_all", {"by": "id", "values": ["a"]}),
        ("any", {"amount": {"gte": 10}}),
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"o": "1", "ids": "a", "least": 1},
            "contract key 'orders.{o}.items': contains_all needs a list of values, got a "
            'string; write {"contains_all": [...]}, or {"contains_all": {"by": "item_id", '
            "\"values\": [...]}} to match elements by a member (from argument 'ids')",
        ),
        (
            {"o": "1", "ids": [], "least": [1]},
            "contract key 'orders.{o}.history[*].amount': gte needs a number or a string, "
            "got an array (from argument 'least')",
        ),
        (
            {"o": "1", "ids": []},
            "contract key 'orders.{o}.history[*].amount' needs argument 'least' for its gte "
            "operand, which was not given (given: ids, o)",
        ),
    ],
)
def test_bind_errors_name_the_nested_key(args: dict[str, Any], message: str) -> None:
    contract = compile_contract(
        {
            "orders.{o}.items": {"contains_all": {"arg": "ids"}},
            "orders.{o}.history": {"any": {"amount": {"gte": {"arg": "least"}}}},
        }
    )
    with pytest.raises(ContractError) as caught:
        contract.bind(args)
    assert str(caught.value) == message


EXAMPLE = 'write {{"{op}": {{"status": {{"eq": "returned"}}}}}}, or {{"{op}": {{"gte": 0}}}}'
BY = '{"contains_all": {"by": "item_id", "values": [...]}}'


@pytest.mark.parametrize(
    ("contract", "message", "key", "op"),
    [
        (
            {"items": {"all": [1]}},
            "contract key 'items': all needs a mapping of conditions on each element, written "
            f"in the contract, got an array; {EXAMPLE.format(op='all')} to test the elements "
            "themselves",
            "items",
            "all",
        ),
        (
            {"items": {"any": {"arg": "conditions"}}},
            "contract key 'items': any needs a mapping of conditions on each element, written "
            f"in the contract, got an argument; {EXAMPLE.format(op='any')} to test the "
            "elements themselves",
            "items",
            "any",
        ),
        (
            {"items": {"all": {}}},
            "contract key 'items': all needs at least one condition on each element, got an "
            f"empty mapping; {EXAMPLE.format(op='all')} to test the elements themselves",
            "items",
            "all",
        ),
        (
            {"items": {"all": {"gte": 0, "status": 1}}},
            "contract key 'items': all mixes operators on the element itself ('gte') with "
            "paths in it ('status'); test the element and its members in separate conditions, "
            'or write a member named like an operator in brackets (["in"])',
            "items",
            "all",
        ),
        (
            {"items": {"all": {"status": {"equals": 1}}}},
            "contract key 'items[*].status' has unknown operator 'equals'; valid operators: "
            "eq, ne, gt, gte, lt, lte, in, nin, exists, contains, matches, all, any, "
            'contains_all; to compare with an object, write {"eq": {...}}',
            "items[*].status",
            None,
        ),
        (
            {"items": {"any": {"tags": {"all": {"in": "urgent"}}}}},
            "contract key 'items[*].tags[*]': in needs a list of values, got a string; "
            'write {"in": [...]}',
            "items[*].tags[*]",
            "in",
        ),
        (
            {"items": {"all": {1: 2}}},
            "contract key 1 under 'items[*]' must be a string path",
            "items[*]",
            None,
        ),
        (
            {"items": {"all": {"a..b": 1}}},
            "contract key 'items[*]': invalid path 'a..b' at position 2: empty segment before "
            "'.'; remove the extra dot; write [\"\"] for a key that is the empty string",
            "items[*]",
            None,
        ),
        (
            {"x": {"contains_all": "a"}},
            "contract key 'x': contains_all needs a list of values, got a string; write "
            f'{{"contains_all": [...]}}, or {BY} to match elements by a member',
            "x",
            "contains_all",
        ),
        (
            {"x": {"contains_all": {"by": "id"}}},
            "contract key 'x': contains_all takes a list of values, or "
            '{"by": "item_id", "values": [...]} to match elements by a member, got an object '
            "with 'by'",
            "x",
            "contains_all",
        ),
        (
            {"x": {"contains_all": {"by": 3, "values": []}}},
            "contract key 'x': contains_all's by needs the path of a member of each element, "
            'such as "item_id", got a number',
            "x",
            "contains_all",
        ),
        (
            {"x": {"contains_all": {"by": "id", "values": {"a": 1}}}},
            "contract key 'x': contains_all needs a list of values, got an object; write "
            f'{{"contains_all": [...]}}, or {BY} to match elements by a member',
            "x",
            "contains_all",
        ),
    ],
)
def test_compile_errors_name_the_key_the_operator_and_what_was_expected(
    contract: dict[Any, Any], message: str, key: str, op: str | None
) -> None:
    with pytest.raises(ContractError) as caught:
        compile_contract(contract)
    assert str(caught.value) == message
    assert (caught.value.key, caught.value.op) == (key, op)


def nested(levels: int) -> dict[str, Any]:
    condition: dict[str, Any] = {"gte": 0}
    for _ in range(levels):
        condition = {"all": condition}
    return {"x": condition}


def test_nesting_is_bounded() -> None:
    deep = nested(8)
    assert compile_contract(deep).check({"x": [[[[[[[[1]]]]]]]]}).result is True
    with pytest.raises(ContractError) as caught:
        compile_contract(nested(9))
    assert str(caught.value) == (
        "contract key 'x[*][*][*][*][*][*][*][*][*]': all and any nest more than 8 deep; "
        "test fewer levels of arrays in one condition"
    )


def test_a_member_named_like_an_operator_is_written_in_brackets() -> None:
    contract = compile_contract({"xs": {"any": {'["in"]': 1, "arg": 2}}})
    check = contract.check({"xs": [{"in": 1, "arg": 2}]})
    assert check.result is True
    assert check.conditions[0].threshold == {'["in"]': {"eq": 1}, '["arg"]': {"eq": 2}}
    assert contract.source == '{"xs":{"any":{"[\\"in\\"]":1,"arg":2}}}'


def test_a_check_that_looks_at_too_many_elements_cannot_be_evaluated() -> None:
    side = int(MAX_ELEMENT_CHECKS**0.5) + 1
    row = list(range(side))
    state = {"grid": [row] * side, "flag": True}
    check = compile_contract({"grid": {"all": {"all": {"gte": 0}}}}).check(state)
    error = (
        f"grid all stopped after looking at {MAX_ELEMENT_CHECKS} elements, the limit for one "
        "condition; test a smaller array, or fewer nested levels"
    )
    assert (check.result, check.value, check.error) == (None, None, error)
    (item,) = check.conditions
    assert (item.result, item.reason, item.elements) == (False, error, None)
    # Another condition that fails decides the verdict on its own.
    check = compile_contract({"grid": {"all": {"all": {"gte": 0}}}, "flag": False}).check(state)
    assert (check.result, check.error) == (False, None)


def test_a_quantifier_covers_its_key_for_the_already_true_rule() -> None:
    contract = compile_contract(
        {"orders.a.return_items": {"contains_all": ["1"]}, "orders.a.status": "returned"}
    )
    assert covers(contract, ("orders.a",))
    assert covers(contract, ("orders.a.return_items", "orders.a.status"))
    assert not covers(contract, ("orders.a.return_items", "orders.a.refund"))
    inside = compile_contract({"orders.a.items": {"all": {"status": "returned"}}})
    assert not covers(inside, ("orders.a.items.0.status",))  # it reads the array whole...
    assert covers(inside, ("orders.a.items",))  # ...so it covers the array


RETURN = {
    "does": "Request a return of some items of an order",
    "writes": ["orders.{order_id}.return_items", "orders.{order_id}.status"],
    "verify": {
        "orders.{order_id}.return_items": {"contains_all": {"arg": "item_ids"}},
        "orders.{order_id}.status": "return requested",
    },
}


def test_an_already_true_fire_carries_quantifier_evidence_into_the_ledger_and_back() -> None:
    ledger = Ledger(MemoryBackend())
    graph = build_navigation_graph("shop", pages={"orders": {"actions": {"return": RETURN}}})
    state = {"orders": {"a": {"status": "return requested", "return_items": ["2", "1"]}}}

    async def main() -> Any:
        session = graph.create_session(
            node="orders", state=state, clock=VirtualClock(), evidence=ledger
        )
        session.register_actions("orders", handlers={"return": lambda args: None})
        fired = session.fire("orders.return", {"order_id": "a", "item_ids": ["1", "2"]})
        await session.clock.advance(0)
        answer = session.did_it_work(fired.transition_id or "")
        await session.close()
        return fired, answer

    fired, answer = asyncio.run(main())
    assert fired.already_true is not None
    assert [(c.key, c.op, c.result, c.missing) for c in fired.already_true] == [
        ("orders.a.return_items", "contains_all", True, ()),
        ("orders.a.status", "eq", True, None),
    ]
    assert answer.answer == "unobservable"
    entries = ledger.query()
    fire = next(entry for entry in entries if entry.kind == "fire")
    assert fire.body["already_true"][0]["missing"] == []
    settlement = next(entry for entry in entries if entry.kind == "settlement")
    read_back = answer_from_evidence(
        fire.transition or "", fire.body, "settlement", settlement.body
    )
    assert read_back.already_true == fired.already_true


def test_element_evidence_reads_back_from_the_ledger_as_it_was_recorded() -> None:
    item = one({"o.items": {"all": {"status": "returned"}}}, ITEMS)
    recorded = condition_json(item)
    assert recorded["elements"] == [
        {
            "index": 1,
            "result": False,
            "conditions": [
                {
                    "key": "o.items.1.status",
                    "op": "eq",
                    "threshold": "returned",
                    "actual_summary": '"delivered"',
                    "result": False,
                    "redacted": False,
                    "reason": None,
                    "elements": None,
                    "missing": None,
                }
            ],
        }
    ]
    body = {"already_true": [recorded]}
    settled = {"answer": "unobservable", "commit": [], "effect": "unobservable"}
    assert answer_from_evidence("p.a#1", body, "settlement", settled).already_true == [item]


def test_a_workflow_verdict_names_the_element_that_failed() -> None:
    check = compile_contract({"output.rows": {"all": {"total": {"gte": 0}}}}).check(
        {"output": {"rows": [{"total": 3}, {"total": -2}]}}
    )
    assert describe(check) == "output.rows.1.total was -2, not >= 0"
