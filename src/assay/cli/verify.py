"""``assay verify EXPR --state FILE``: evaluate an expression against a JSON state."""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from assay.errors import ExpressionSyntaxError
from assay.expr import UNDEFINED, compile_expression
from assay.expr.values import type_of


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "verify",
        help="evaluate a verify_expression against a JSON state",
        description="Evaluate EXPR against the JSON object in FILE and print the result as "
        "JSON: the value, the verdict (Boolean(value), or null when it could not be "
        "evaluated), the state keys read and any error. Exit 0 when the verdict is true, 1 "
        "when it is false or null, 2 on a syntax or usage error.",
    )
    parser.add_argument("expression", metavar="EXPR", help="e.g. 'inbox.sent_count >= 15'")
    parser.add_argument(
        "--state",
        metavar="FILE",
        required=True,
        help="a JSON file holding one object, the application's state ('-' for stdin)",
    )
    parser.set_defaults(run=run)


def _json_value(value: Any) -> Any:
    """The value as JSON.stringify would render it (undefined and non-finite become null)."""
    if value is UNDEFINED:
        return None
    if type(value) is float and not math.isfinite(value):
        return None
    if type(value) is list:
        return [_json_value(item) for item in value]
    if type(value) is dict:
        return {key: _json_value(item) for key, item in value.items() if item is not UNDEFINED}
    return value


def _fail(message: str) -> int:
    print(f"assay verify: error: {message}", file=sys.stderr)
    return 2


def load_state(path: str) -> dict[str, Any] | str:
    """The JSON object in ``path``, or a message saying what is wrong with it."""
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
    except OSError as error:
        return f"cannot read the state file {path!r}: {error.strerror or error}"
    try:
        state = json.loads(text)
    except json.JSONDecodeError as error:
        return (
            f"the state file {path!r} is not valid JSON: {error.msg} at line {error.lineno} "
            f"column {error.colno}"
        )
    if not isinstance(state, dict):
        return (
            f"the state file {path!r} must hold a JSON object (the objects map), "
            f"not {type_of(state) if not isinstance(state, list) else 'an array'}"
        )
    return state


def run(args: argparse.Namespace) -> int:
    state = load_state(args.state)
    if isinstance(state, str):
        return _fail(state)
    try:
        expression = compile_expression(args.expression)
    except ExpressionSyntaxError as error:
        return _fail(f"the expression has a syntax error: {error}")
    check = expression.check(state)
    report: dict[str, Any] = {
        "expression": expression.source,
        "value": _json_value(check.value) if check.error is None else None,
        "type": type_of(check.value) if check.error is None else None,
        "result": check.result,
        "keys": list(expression.keys),
        "error": check.error,
    }
    print(json.dumps(report, ensure_ascii=False, indent=2))
    return 0 if check.result else 1
