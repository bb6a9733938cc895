"""A tour of assay's expression language and declarative contracts, run on a sample state.

Run with ``make demo`` (or ``.venv/bin/python examples/expressions.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import assay

STATE = json.loads((Path(__file__).parent / "state.json").read_text(encoding="utf-8"))


def show(source: str) -> None:
    try:
        expression = assay.compile_expression(source)
    except assay.ExpressionSyntaxError as error:
        print(f"  {source}\n    syntax error: {error.reason} at {error.position}")
        print("    " + error.caret.replace("\n", "\n    "))
        return
    check = expression.check(STATE)
    if check.error is not None:
        print(f"  {source}\n    could not be evaluated (result: null): {check.error}")
        return
    value = "undefined" if check.value is assay.UNDEFINED else json.dumps(check.value)
    print(f"  {source}\n    value {value}, verdict {check.result}, reads {list(expression.keys)}")


def main() -> None:
    print("Expressions (JavaScript semantics, compiled once, evaluated on the state):")
    for source in (
        'inbox.sent_count == 15 && drone.mode == "GUIDED"',
        'inbox.folders.includes("archive") && items.length >= 2',
        "items.filter(i => i.done).length >= 1",
        "items.find(i => !i.done)?.title",
        "drone.altitude_m + 'm'",
        "inbox.missing.count > 0",
        "inbox.sent_count = 16",
        "items.push(3)",
    ):
        show(source)

    print("\nA declarative contract, with evidence per condition:")
    contract = assay.compile_contract(
        {
            "drone.mode": "GUIDED",
            "inbox.sent_count": {"gte": 16},
            "user.api_token": {"exists": True},
        },
        redaction=assay.Redaction(["user.api_token"]),
    )
    check = contract.check(STATE)
    print(f"  verdict {check.result}; reads {list(contract.keys)}")
    for condition in check.conditions:
        seen = "[redacted]" if condition.redacted else condition.actual_summary
        reason = f" ({condition.reason})" if condition.reason else ""
        print(
            f"    {condition.key} {condition.op} {json.dumps(condition.threshold)}: "
            f"saw {seen} -> {condition.result}{reason}"
        )


if __name__ == "__main__":
    main()
