"""Hostile expressions and states, shared by the adversarial test and its timing report.

Each case is (name, source, state, limits, expected): ``expected`` is the error class the
compiler or evaluator must raise, or ``None`` when the expression is legitimately valid and
must only come back as a plain JSON value (prototype and dunder names are missing keys).
"""

from __future__ import annotations

from typing import Any

from assay import (
    ExpressionLimitError,
    ExpressionLimits,
    ExpressionSyntaxError,
)

BIG_SOURCE = ExpressionLimits(max_source_length=2_000_000)
HUNDRED = list(range(100))
HALF_MEGABYTE = "x" * 500_000

# (name, source, state, limits, expected error or None)
Case = tuple[str, str, dict[str, Any], ExpressionLimits | None, type[Exception] | None]

CASES: list[Case] = [
    ("100k-deep parentheses", "(" * 100_000 + "a" + ")" * 100_000, {}, None, ExpressionSyntaxError),
    (
        "100k-deep parentheses, source limit raised",
        "(" * 100_000 + "a" + ")" * 100_000,
        {},
        BIG_SOURCE,
        ExpressionSyntaxError,
    ),
    ("100k-deep unary", "!" * 100_000 + "a", {}, BIG_SOURCE, ExpressionSyntaxError),
    ("100k-deep arrays", "[" * 100_000 + "]" * 100_000, {}, BIG_SOURCE, ExpressionSyntaxError),
    (
        "100k-deep conditionals",
        "a ? " * 100_000 + "1" + " : 2" * 100_000,
        {},
        BIG_SOURCE,
        ExpressionSyntaxError,
    ),
    ("100k-long member chain", "a" + ".b" * 100_000, {}, BIG_SOURCE, ExpressionSyntaxError),
    ("100k-long operator chain", "a" + " + a" * 100_000, {}, BIG_SOURCE, ExpressionSyntaxError),
    (
        "100k-deep computed members",
        "a[" * 100_000 + "0" + "]" * 100_000,
        {},
        BIG_SOURCE,
        ExpressionSyntaxError,
    ),
    (
        "nested callbacks past the limit",
        "a" + ".map(x => a" * 9 + ")" * 9,
        {"a": [1]},
        None,
        ExpressionSyntaxError,
    ),
    ("huge string literal", "'" + "x" * 1_000_000 + "'", {}, None, ExpressionSyntaxError),
    ("huge number literal", "9" * 1_000_000, {}, None, ExpressionSyntaxError),
    (
        "runaway nested callbacks",
        "a.map(x => a.map(y => a.map(z => a.map(w => x + y + z + w))))",
        {"a": HUNDRED},
        None,
        ExpressionLimitError,
    ),
    (
        "runaway some over every",
        "a.some(x => a.some(y => a.some(z => a.some(w => w < 0))))",
        {"a": HUNDRED},
        None,
        ExpressionLimitError,
    ),
    ("runaway string concatenation", "s + s + s", {"s": HALF_MEGABYTE}, None, ExpressionLimitError),
    (
        "runaway join",
        "a.join(a.join(a.join(a.join('xxxxxxxxxx'))))",
        {"a": HUNDRED},
        None,
        ExpressionLimitError,
    ),
    (
        "runaway strings in callbacks",
        "a.map(x => s + x).length",
        {"a": HUNDRED * 40, "s": HALF_MEGABYTE},
        None,
        ExpressionLimitError,
    ),
    (
        "scans inside callbacks",
        "a.filter(x => b.includes(x) && b.indexOf(x) >= 0).length",
        {"a": list(range(3000)), "b": list(range(3000))},
        None,
        ExpressionLimitError,
    ),
    (
        "an array converted in callbacks",
        "a.map(x => b == '').length",
        {"a": list(range(3_000)), "b": [None] * 100_000},
        None,
        ExpressionLimitError,
    ),
    (
        "an array converted again and again",
        "[" + ", ".join(["b == ''"] * 60) + "].length",
        {"b": [None] * 100_000},
        None,
        ExpressionLimitError,
    ),
    (
        "an array looked for in callbacks",
        "a.map(x => c.includes(b) || c.indexOf(b) >= 0).length",
        {"a": list(range(3_000)), "b": [None] * 100_000, "c": [[None] * 100_000]},
        None,
        None,
    ),
    (
        "upper case past the string limit",
        "s.toUpperCase().length",
        {"s": "\u00df" * 600_000},
        None,
        ExpressionLimitError,
    ),
    ("Python dunder __class__", "a.__class__", {"a": {}}, None, None),
    ("Python dunder __globals__", "a.__globals__", {"a": []}, None, None),
    ("Python dunder chain", "a['__class__']['__mro__']", {"a": "x"}, None, Exception),
    ("JavaScript __proto__", "a.__proto__", {"a": {}}, None, None),
    ("JavaScript constructor", "a.constructor", {"a": []}, None, None),
    ("JavaScript prototype", "a.prototype", {"a": "s"}, None, None),
    ("constructor of constructor", "a.constructor.constructor", {"a": {}}, None, Exception),
    ("calling constructor", "a.constructor('return 1')", {"a": {}}, None, ExpressionSyntaxError),
    (
        "Function via string",
        "''.constructor.constructor('return process')()",
        {},
        None,
        ExpressionSyntaxError,
    ),
    ("__import__", "__import__('os')", {}, None, ExpressionSyntaxError),
    ("eval", "eval('1')", {}, None, ExpressionSyntaxError),
    ("getattr", "getattr(a, 'x')", {"a": {}}, None, ExpressionSyntaxError),
    ("in-place push", "a.push(1)", {"a": []}, None, ExpressionSyntaxError),
    ("in-place sort", "a.sort()", {"a": [3, 1]}, None, ExpressionSyntaxError),
    ("in-place splice", "a.splice(0)", {"a": [1]}, None, ExpressionSyntaxError),
    ("in-place reverse", "a.reverse()", {"a": [1, 2]}, None, ExpressionSyntaxError),
    ("in-place fill", "a.fill(0)", {"a": [1]}, None, ExpressionSyntaxError),
    ("in-place pop", "a.pop()", {"a": [1]}, None, ExpressionSyntaxError),
    ("assignment", "a.b = 1", {"a": {}}, None, ExpressionSyntaxError),
    ("compound assignment", "a.b += 1", {"a": {"b": 1}}, None, ExpressionSyntaxError),
    ("increment", "a.b++", {"a": {"b": 1}}, None, ExpressionSyntaxError),
    ("delete", "delete a.b", {"a": {"b": 1}}, None, ExpressionSyntaxError),
    ("Object.assign", "Object.assign(a, {b: 2})", {"a": {}}, None, ExpressionSyntaxError),
    ("Function.prototype.call", "a.includes.call(b, 1)", {"a": []}, None, ExpressionSyntaxError),
    ("apply", "Math.max.apply(null, a)", {"a": [1]}, None, ExpressionSyntaxError),
    ("this", "this.process", {}, None, ExpressionSyntaxError),
    ("new", "new Function('return 1')", {}, None, ExpressionSyntaxError),
    (
        "loop-like recursion through map",
        "a.map(x => a.map(y => a.map(z => 1)))",
        {"a": list(range(1000))},
        None,
        ExpressionLimitError,
    ),
]
