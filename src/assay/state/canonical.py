"""The canonical form of the substrate: one nested JSON object of plain dicts and lists.

Values are validated and copied on ingest, so a stored tree never aliases a caller's value nor
holds what JSON cannot carry. Numbers are JavaScript's: an integer beyond ±(2**53 - 1) is
stored as the double it rounds to, as ``JSON.parse`` reads it. A report's top-level keys are
dotted paths (``view.domain``, ``orders["a.b"].status``) expanded into nesting; keys inside
values, and a top-level key without ``.``, ``[`` or ``]``, are taken literally.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any, Final

from assay.errors import HALF_PAIR, ContractError, StateError
from assay.json.equality import json_equal
from assay.json.path import MISSING, format_path, parse_path

Path = tuple[str, ...]
"""A path into the substrate as its segments, ``("inbox", "sent_count")``."""

MAX_DEPTH: Final = 256
"""How deeply a stored value may nest, counting the segments of the path it is stored at."""

_PATH_CHARS: Final = frozenset(".[]")
_PLAIN_TYPES: Final = (bool, type(None))
_MAX_EXACT: Final = 2**53 - 1
"""The largest integer RFC 8785 writes: beyond it, a double no longer holds every integer."""
_HALF_PAIR_PROBLEM: Final = (
    "a string holds half of a surrogate pair, such as \\ud800 alone, which is not Unicode text"
)
_HALF_PAIR_INSTEAD: Final = "send each character whole or as a full surrogate pair"
HALF_SURROGATE_PAIR: Final = f"{_HALF_PAIR_PROBLEM}; {_HALF_PAIR_INSTEAD}"
"""Why JSON that ``holds_half_surrogate_pair`` is refused, and what to send instead."""


class _RejectedError(Exception):
    """Raised deep in a copy; gathers the path on its way up so the copy needs none. Its
    text is the problem and what to do instead."""

    def __init__(self, problem: str, instead: str) -> None:
        super().__init__(f"{problem}; {instead}")
        self.segments: list[str] = []


def canonical_value(value: Any, path: Path = ()) -> Any:
    """A fresh plain-JSON copy of ``value`` to store at ``path``.

    Tuples become lists; subclasses of ``str``, ``int``, ``float`` and ``dict`` become the
    plain types. Raise ``StateError`` naming the first place JSON cannot carry.
    """
    try:
        return _copy(value, len(path), False)
    except _RejectedError as rejected:
        raise _error((*path, *reversed(rejected.segments)), rejected) from None


def _error(where: Path, rejected: _RejectedError) -> StateError:
    return StateError(
        f"cannot store {_shown(where, 'the report')}: {rejected}",
        key=format_path(where) if where else None,
    )


def exact_json_object(value: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A fresh plain-JSON copy of the object ``value`` (a fire's ``args``, named ``name``),
    which RFC 8785 can write exactly as given.

    Stricter than ``canonical_value``: an integer beyond ±(2**53 - 1) is refused rather than
    rounded, since rounding would hand on another number than the one given. Raise
    ``ValueError`` naming the first place JSON cannot carry (``args.order_id: …``) and what
    to send instead.
    """
    try:
        copied: dict[str, Any] = _copy(value, 1, True)
    except _RejectedError as rejected:
        where = (name, *reversed(rejected.segments))
        raise ValueError(f"{_shown(where, name)}: {rejected}") from None
    return copied


def _shown(where: Path, empty: str) -> str:
    return format_path(where[:8]) + ("…" if len(where) > 8 else "") if where else empty


def _copy(value: Any, depth: int, exact: bool) -> Any:
    kind = type(value)
    if kind is str:
        return value if value.isascii() else _text(value)
    if kind is int:
        if -_MAX_EXACT <= value <= _MAX_EXACT:
            return value
        return _inexact(value) if exact else _double(value)
    if kind in _PLAIN_TYPES:
        return value
    if kind is float:
        if math.isfinite(value):
            return value
        raise _RejectedError(
            f"{value!r} is not a JSON number", "use a finite number, or null for no value"
        )
    if depth >= MAX_DEPTH:
        raise _RejectedError(
            f"it nests deeper than {MAX_DEPTH} levels", "flatten the value or store less of it"
        )
    if kind is dict or isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for raw, item in value.items():
            key = raw if type(raw) is str and raw.isascii() else _plain_key(raw)
            try:
                out[key] = _copy(item, depth + 1, exact)
            except _RejectedError as rejected:
                rejected.segments.append(key)
                raise
        return out
    if kind is list or kind is tuple:
        items: list[Any] = []
        for index, item in enumerate(value):
            try:
                items.append(_copy(item, depth + 1, exact))
            except _RejectedError as rejected:
                rejected.segments.append(str(index))
                raise
        return items
    if isinstance(value, str):
        return _text(str.__str__(value))
    if isinstance(value, int):
        return _copy(int(value), depth, exact)
    if isinstance(value, float):
        return _copy(float(value), depth, exact)
    raise _RejectedError(
        f"{kind.__name__} is not a JSON type",
        "use objects, arrays, strings, numbers, booleans or null",
    )


def _double(number: int) -> float:
    try:
        return float(number)
    except OverflowError:
        raise _RejectedError(
            f"the integer {str(number)[:20]}… ({len(str(number))} digits) is beyond the range "
            "of a JSON number (a double)",
            "use a number within ±1.8e308",
        ) from None


def _inexact(number: int) -> Any:
    digits = str(number) if len(str(number)) <= 24 else f"{str(number)[:20]}…"
    raise _RejectedError(
        f"the integer {digits} is beyond ±(2**53 - 1), where JSON numbers stop being exact",
        "send it as a string",
    )


def holds_half_surrogate_pair(value: Any) -> bool:
    """Whether a string in ``value`` (parsed JSON) holds half of a surrogate pair, as
    Python's ``json`` reads the escape ``"\\ud800"`` (which ``JSON.stringify`` writes for a
    broken string): text no UTF-8 answer can carry, so every port refuses it."""
    if type(value) is str:
        return not value.isascii() and HALF_PAIR.search(value) is not None
    return HALF_PAIR.search(json.dumps(value, ensure_ascii=False, default=repr)) is not None


def _text(text: str) -> str:
    if HALF_PAIR.search(text) is None:
        return text
    raise _RejectedError(_HALF_PAIR_PROBLEM, _HALF_PAIR_INSTEAD)


def _plain_key(key: object) -> str:
    if isinstance(key, str):
        return _text(str.__str__(key))
    raise _RejectedError(
        f"the key {key!r} ({type(key).__name__}) is not a string", "JSON object keys are strings"
    )


_CACHE_LIMIT: Final = 4096
_paths: dict[str, Path] = {}
"""Parsed report keys: applications report the same keys over and over."""


def report_path(key: str) -> Path:
    """The path a report key names: parsed when it holds ``.``, ``[`` or ``]``, else itself."""
    path = _paths.get(key)
    if path is not None:
        return path
    if _PATH_CHARS.isdisjoint(key):
        return (key,)
    try:
        path = parse_path(key)
    except ContractError as error:
        raise StateError(f"report key {key!r} is not a path: {error}", key=key) from None
    if len(_paths) >= _CACHE_LIMIT:
        _paths.clear()
    _paths[key] = path
    return path


def expand_report(report: object, leaf: Callable[[Any], Any] | None = None) -> dict[str, Any]:
    """Validate and copy a report, expanding its dotted keys into nested dicts.

    ``leaf`` wraps each given value (the set operation marks them to be replaced wholesale).
    Two keys where one writes inside the other (``a`` and ``a.b``), or two spellings of one
    path, are rejected, naming both keys.
    """
    if not isinstance(report, Mapping):
        raise StateError(
            f"a report must be an object mapping keys to values, not {type(report).__name__}"
        )
    nested: dict[str, Any] = {}
    made = {id(nested)}  # the dicts expansion created, as opposed to reported values
    owners: dict[Path, str] = {}
    for raw, value in report.items():
        try:
            key = raw if type(raw) is str and raw.isascii() else _plain_key(raw)
        except _RejectedError as rejected:
            raise _error((), rejected) from None
        path = report_path(key)
        node = nested
        for depth in range(len(path) - 1):
            child = node.get(path[depth], MISSING)
            if child is MISSING:
                child = node[path[depth]] = {}
                made.add(id(child))
            elif id(child) not in made:
                raise _conflict(owners[path[: depth + 1]], key)
            node = child
        existing = node.get(path[-1], MISSING)
        if existing is not MISSING:
            if id(existing) in made:
                inner = next(k for p, k in owners.items() if p[: len(path)] == path)
                raise _conflict(key, inner)
            first = owners[path]
            raise StateError(
                f"report keys {first!r} and {key!r} both name {format_path(path)}; "
                "send one of them",
                key=key,
                conflict=first,
            )
        copied = canonical_value(value, path)
        node[path[-1]] = copied if leaf is None else leaf(copied)
        owners[path] = key
    return nested


def refuse_writes_inside_arrays(objects: Mapping[str, Any], report: Mapping[str, Any]) -> None:
    """``StateError`` if a dotted report key writes inside an array of ``objects``.

    Arrays are leaves: merged as RFC 7396 has it, ``a[0]`` (or ``a.0``) would silently turn
    the array ``a`` into the object ``{"0": ...}``. A nested report (``{"a": {"0": 5}}``)
    still replaces it, as RFC 7396 says; a dotted key is taken to mean the element.
    """
    for key in report:
        if type(key) is not str or ("." not in key and "[" not in key):
            continue
        path = report_path(key)
        node: Any = objects
        for depth, segment in enumerate(path[:-1], start=1):
            node = node.get(segment, MISSING) if type(node) is dict else MISSING
            if type(node) is list:
                array = format_path(path[:depth])
                raise StateError(
                    f"report key {key!r} writes inside {array}, which is an array in the "
                    f"state; arrays are leaves, so report the whole array under {array!r}",
                    key=key,
                )
            if node is MISSING:
                break


def _conflict(outer: str, inner: str) -> StateError:
    return StateError(
        f"report keys {outer!r} and {inner!r} conflict: {outer!r} sets a value and {inner!r} "
        f"writes inside it; send one of them, or nest the inner value in the outer one",
        key=outer,
        conflict=inner,
    )


def same_value(a: Any, b: Any) -> bool:
    """JSON equality with ``MISSING`` equal only to itself; identical objects are equal."""
    if a is b:
        return True
    if a is MISSING or b is MISSING:
        return False
    return json_equal(a, b)


class RepeatedKeyError(Exception):
    """A JSON object gives ``key`` twice (not a ``ValueError``, so no handler of malformed
    JSON takes it for one: JSON readers differ on which of the two counts)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook``: the object, or ``RepeatedKeyError`` naming the
    first key it gives twice."""
    value = dict(pairs)
    if len(value) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise RepeatedKeyError(key)
            seen.add(key)
    return value
