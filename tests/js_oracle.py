"""Node.js as the oracle for assay's expression language (SPEC §3).

``JsOracle`` keeps one ``node`` process running ``js_oracle.mjs`` and sends it batches of
(expression, state) cases as JSON lines. Values travel in a tagged form (see the ``.mjs``
file) and are turned into a ``canonical`` Python form that assay's results are mapped to as
well, so the two sides compare with ``==``: numbers by value with ``NaN`` and ``-0`` told
apart, strings by their UTF-16 content, objects with their key order.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("js_oracle.mjs")

#: Canonical values are nested tuples: ("undefined",), ("null",), ("boolean", b),
#: ("number", float | "NaN" | "-0"), ("string", str), ("array", (...)),
#: ("object", ((key, value), ...)), ("function",).
Canonical = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class JsError:
    """The expression threw in JavaScript: ``name`` is the error class, e.g. ``TypeError``."""

    name: str
    message: str


@dataclass(frozen=True, slots=True)
class JsSyntaxError:
    """The source does not compile as JavaScript at all: a bug of whoever generated it."""

    message: str


JsResult = Canonical | JsError | JsSyntaxError


def _string(code_units: list[int]) -> str:
    """UTF-16 code units as a Python str: pairs joined, lone surrogates kept as code points."""
    raw = b"".join(unit.to_bytes(2, "little") for unit in code_units)
    return raw.decode("utf-16-le", "surrogatepass")


def _number(value: float) -> Canonical:
    if math.isnan(value):
        return ("number", "NaN")
    if value == 0 and math.copysign(1.0, value) < 0:
        return ("number", "-0")
    return ("number", value)


def from_tagged(tagged: list[Any]) -> JsResult:
    """Decode one result line entry of ``js_oracle.mjs``."""
    kind = tagged[0]
    if kind == "error":
        return JsError(tagged[1], tagged[2])
    if kind == "syntax":
        return JsSyntaxError(tagged[1])
    return _canonical_tagged(tagged)


def _canonical_tagged(tagged: list[Any]) -> Canonical:
    kind = tagged[0]
    if kind in ("undefined", "null", "function"):
        return (kind,)
    if kind == "boolean":
        return ("boolean", bool(tagged[1]))
    if kind == "number":
        # String(n) is the shortest text that round-trips, so float() recovers n exactly.
        return _number(float(tagged[1]))
    if kind == "string":
        return ("string", _string(tagged[1]))
    if kind == "array":
        return ("array", tuple(_canonical_tagged(item) for item in tagged[1]))
    if kind == "object":
        return (
            "object",
            tuple((_string(key), _canonical_tagged(value)) for key, value in tagged[1]),
        )
    raise ValueError(f"unknown tagged value from node: {tagged!r}")


def canonical(value: Any, *, undefined: object = None) -> Canonical:
    """The canonical form of a Python value as assay returns it (``undefined`` is its sentinel).

    Pass ``undefined`` only when checking assay results; for plain JSON values ``None`` is null.
    """
    if undefined is not None and value is undefined:
        return ("undefined",)
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int):
        as_float = float(value)
        if as_float != value:
            return ("number", f"the int {value}, which no double equals")
        return _number(as_float)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return ("string", value)
    if isinstance(value, list):
        return ("array", tuple(canonical(item, undefined=undefined) for item in value))
    if isinstance(value, dict):
        # assay returns the state's own dict; JavaScript's property order is how it reads.
        ordered = js_property_order_keys(value)
        return (
            "object",
            tuple((key, canonical(value[key], undefined=undefined)) for key in ordered),
        )
    return ("unexpected Python value", repr(value))


def render(result: JsResult) -> str:
    """A JavaScript-like rendering of a canonical value or error, for assertion messages."""
    if isinstance(result, JsError):
        return f"throws {result.name}: {result.message}"
    if isinstance(result, JsSyntaxError):
        return f"does not compile in node: {result.message}"
    kind = result[0]
    if kind in ("undefined", "null"):
        return kind
    if kind == "function":
        return "<function>"
    if kind == "boolean":
        return "true" if result[1] else "false"
    if kind == "number":
        number = result[1]
        if isinstance(number, float) and number.is_integer() and abs(number) < 1e21:
            return str(int(number))
        return str(number).replace("inf", "Infinity")
    if kind == "string":
        return quote(result[1])
    if kind == "array":
        return "[" + ", ".join(render(item) for item in result[1]) + "]"
    if kind == "object":
        fields = (f"{quote(key)}: {render(item)}" for key, item in result[1])
        return "{" + ", ".join(fields) + "}"
    return f"{kind} {result[1:]!r}"


def quote(text: str) -> str:
    """``text`` as a double-quoted JavaScript literal that is safe to print anywhere."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char.isprintable():  # False for surrogates, controls and line separators
            out.append(char)
        elif ord(char) > 0xFFFF:
            out.append(f"\\u{{{ord(char):X}}}")
        else:
            out.append(f"\\u{ord(char):04X}")
    out.append('"')
    return "".join(out)


def js_property_order(value: Any) -> Any:
    """A JSON value with every object's keys in JavaScript's order: array indices first."""
    if isinstance(value, list):
        return [js_property_order(item) for item in value]
    if isinstance(value, dict):
        return {key: js_property_order(value[key]) for key in js_property_order_keys(value)}
    return value


def js_property_order_keys(value: dict[str, Any]) -> list[str]:
    """An object's keys in JavaScript's order: array indices ascending, then the rest."""
    indices = sorted((key for key in value if _is_array_index(key)), key=int)
    return [*indices, *(key for key in value if not _is_array_index(key))]


def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and str(int(key)) == key and int(key) < 2**32 - 1


class JsOracle:
    """One persistent ``node`` process that evaluates expressions as SPEC §3 resolves them."""

    def __init__(self, node: str = "node") -> None:
        executable = shutil.which(node)
        if executable is None:
            raise RuntimeError(f"the JavaScript oracle needs Node.js, but {node!r} is not on PATH")
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115 -- lives until close()
        self._process = subprocess.Popen(
            [executable, str(SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )

    def evaluate(self, cases: Iterable[tuple[str, Mapping[str, Any]]]) -> list[JsResult]:
        """Evaluate every (source, state) case in one round trip; results in case order."""
        states: list[Mapping[str, Any]] = []
        index_of: dict[int, int] = {}
        wire_cases = []
        for source, state in cases:
            index = index_of.get(id(state))
            if index is None:
                index = index_of[id(state)] = len(states)
                states.append(state)
            wire_cases.append((source, index))
        request = json.dumps({"states": states, "cases": wire_cases}, allow_nan=False)
        stdin, stdout = self._process.stdin, self._process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(request.encode("ascii") + b"\n")
            stdin.flush()
            line = stdout.readline()
        except BrokenPipeError:
            line = b""
        if not line:
            raise RuntimeError(f"node oracle died: {self._stderr_text()}")
        results = json.loads(line)["results"]
        if len(results) != len(wire_cases):
            raise RuntimeError(f"node oracle answered {len(results)} of {len(wire_cases)} cases")
        return [from_tagged(result) for result in results]

    def evaluate_one(self, source: str, state: Mapping[str, Any]) -> JsResult:
        return self.evaluate([(source, state)])[0]

    def _stderr_text(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace").strip() or "(no stderr)"

    def close(self) -> None:
        """End the node process: closing its stdin lets it exit on its own."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout is not None:
            self._process.stdout.close()
        self._stderr.close()

    def __enter__(self) -> JsOracle:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
