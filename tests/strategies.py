"""Hypothesis strategies shared by assay's tests.

``json_states()`` draws substrates: top-level JSON objects over a small key vocabulary whose
values usually, not always, have the type their name suggests (``items`` is mostly an array
of ``{id, name, done, tags}`` records), so that generated expressions both compute real
values and throw where JavaScript throws.

``expressions(state_keys)`` draws source text over the whole language of SPEC §3. Every
expression it yields is valid JavaScript: ``??`` is never mixed with unparenthesized
``||``/``&&``, a unary sign before a sign gets a space, a number literal is parenthesized
before ``.``, string literals escape what JavaScript requires. The generator only decides
with ``below(n)`` choices where 0 is the simplest option, so failures shrink well; the same
``ExpressionBuilder`` runs on a seeded ``random.Random`` for campaigns outside Hypothesis.

``EXCLUSIONS`` lists what is deliberately never generated, and why.

``quantified_contracts()`` draws declarative contracts with ``all``, ``any`` and
``contains_all``, each condition with the expression that says the same, over
``quantifier_states``; the comment above them lists where the two forms differ on purpose.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

EXCLUSIONS = (
    "Property names that exist on Object.prototype, Array.prototype, String.prototype, "
    "Number.prototype, Boolean.prototype or Function.prototype (constructor, toString, "
    "__proto__, valueOf, hasOwnProperty, map, keys, ...; see PROTOTYPE_PROPERTY_NAMES): "
    "assay treats them as ordinary missing keys, JavaScript finds the inherited member. "
    "The exceptions are `length`, which is an own key of arrays and strings and an ordinary "
    "key of plain objects, and `name`, which only functions inherit and no expression reaches.",
    "Integers beyond 2**53 in states: JSON parsers disagree on them, JavaScript rounds them.",
    "State keys equal to the globals (Math, Object, NaN, undefined, ...): they would shadow them.",
    "Callbacks that are not arrow functions, and array methods called without one: "
    "assay rejects them at compile time, JavaScript only when called.",
    "Globals as values (`Math`, `typeof isNaN`) and members of globals other than the allowed "
    "functions: functions are not values of the language.",
    "Optional calls `a?.m()`: assay rejects them at compile time; SPEC §3 lists `a?.b` and "
    "`a?.[expr]` only. Chains like `a?.b.m()` are generated.",
    "Legacy octal literals and escapes (`010`, `\\1`): not valid in strict-mode JavaScript.",
)

PROTOTYPE_PROPERTY_NAMES = frozenset(
    """__defineGetter__ __defineSetter__ __lookupGetter__ __lookupSetter__ __proto__ anchor
    apply arguments at big bind blink bold call caller charAt charCodeAt codePointAt concat
    constructor copyWithin endsWith entries every fill filter find findIndex findLast
    findLastIndex fixed flat flatMap fontcolor fontsize forEach hasOwnProperty includes indexOf
    isPrototypeOf isWellFormed italics join keys lastIndexOf length link localeCompare map
    match matchAll name normalize padEnd padStart pop propertyIsEnumerable push reduce
    reduceRight repeat replace replaceAll reverse search shift slice small some sort splice
    split startsWith strike sub substr substring sup toExponential toFixed toLocaleLowerCase
    toLocaleString toLocaleUpperCase toLowerCase toPrecision toReversed toSorted toSpliced
    toString toUpperCase toWellFormed trim trimEnd trimLeft trimRight trimStart unshift valueOf
    values with prototype""".split()
)
ALLOWED_INHERITED_NAMES = frozenset({"length", "name"})
GLOBAL_NAMES = frozenset(
    "Math Object Array Number String Boolean isNaN NaN Infinity undefined".split()
)

# Type hints: what a name or a generated sub-expression most likely holds.
NUM, STR, BOOL, OBJ, ANY = "num", "str", "bool", "obj", "any"
ARR_NUM, ARR_STR, ARR_OBJ, ARR_ANY = "arr:num", "arr:str", "arr:obj", "arr:any"
HINTS = (BOOL, NUM, STR, ANY, OBJ, ARR_ANY, ARR_OBJ, ARR_NUM, ARR_STR)

TOP_KEY_HINTS = {
    "count": NUM,
    "total": NUM,
    "price": NUM,
    "name": STR,
    "title": STR,
    "code": STR,
    "text": STR,
    "done": BOOL,
    "active": BOOL,
    "items": ARR_OBJ,
    "tags": ARR_STR,
    "nums": ARR_NUM,
    "list": ARR_ANY,
    "user": OBJ,
    "meta": OBJ,
    "item": OBJ,
    "data": ANY,
    "empty": ANY,
    "x": ANY,
}
FIELD_HINTS = {
    "id": NUM,
    "name": STR,
    "done": BOOL,
    "tags": ARR_STR,
    "score": NUM,
    "email": STR,
    "age": NUM,
    "profile": OBJ,
}
# Plain-object keys that only bracket access reaches ("0", "10" also reorder: integer keys first).
EXTRA_FIELDS = ("a", "b", "length", "0", "1", "10")
ALL_FIELDS = (*FIELD_HINTS, *EXTRA_FIELDS)
UNKNOWN_NAMES = ("missing", "nope", "foo", "zzz")
PARAM_NAMES = ("x", "y", "t", "v", "item", "e", "name", "count", "tags")
INDEX_NAMES = ("i", "j", "k", "idx")

_vocabulary = {*TOP_KEY_HINTS, *ALL_FIELDS, *UNKNOWN_NAMES, *PARAM_NAMES, *INDEX_NAMES}
assert not (_vocabulary & (PROTOTYPE_PROPERTY_NAMES - ALLOWED_INHERITED_NAMES))
assert not (set(TOP_KEY_HINTS) & GLOBAL_NAMES)


INTERESTING_NUMBERS: tuple[int | float, ...] = (
    0, 1, -1, 2, 3, 5, 10, 15, 31, 42, 100, 1000, -7, 2**31, 2**53 - 1, -(2**53 - 1),
    0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 0.1, 0.2, 0.30000000000000004, 5.0, -1.0, 4.35,
    1e21, 1e16, 1e-7, 2e-5, 123.456, 1e300, -1e300, 0.49999999999999994,
    1.7976931348623157e308, 5e-324, 1234.5678,
)  # fmt: skip
INTERESTING_STRINGS = (
    "", " ", "a", "b", "abc", "Abc", "ABC", "a b", "15", "0", "-0", "1", "2", "10", " 0x1F ",
    "0x1F", "0X1f", "1e3", "1_000", "0b11", "0o17", "  12  ", "1.5", ".5", "5.", "+5", "-5",
    "Infinity", "-Infinity", "infinity", "NaN", "true", "false", "null", "undefined", "1e400",
    "00", "007", "1 2", "e", "E5", "éclair", "Émile", "ß", "ﬁ", "İ", "ΟΔΟΣ", "😀", "a😀b",
    "\U0001d4b3y", "\u00a0x\u00a0", "\ufeff1\ufeff", "\x851\x85", "\x1f2", "\u2028", "\u3000",
    "\u200b", "\t\n", "\v\f\r", "١٢", "\uff11\uff12", "\ud83d", "x\ude00", "\uff21", "\uffff",
    "[object Object]", "1,2", "a,b", ",", "done", "id", "name", "length", "x", "tags",
)  # fmt: skip
_ALPHABET = "abcABCxyz 019.-,éÉßﬁİΣς😀\U0001d4b3\u00a0\t\n\u3000\ufeff\x85"

numbers = st.one_of(
    st.sampled_from(INTERESTING_NUMBERS),
    st.integers(-1000, 1000),
    st.floats(-1e4, 1e4, allow_nan=False),
    st.floats(allow_nan=False, allow_infinity=False),
)
strings = st.one_of(
    st.sampled_from(INTERESTING_STRINGS),
    st.text(_ALPHABET, max_size=6),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, strings)


def _records(values: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(st.sampled_from(ALL_FIELDS), values, max_size=4)


json_values = st.recursive(
    scalars, lambda children: st.lists(children, max_size=4) | _records(children), max_leaves=8
)


def _typed(hint: str) -> st.SearchStrategy[Any]:
    """Values that usually fit ``hint``, and one time in five any JSON value at all."""
    usual: st.SearchStrategy[Any]
    if hint == NUM:
        usual = numbers
    elif hint == STR:
        usual = strings
    elif hint == BOOL:
        usual = st.booleans()
    elif hint == OBJ:
        usual = st.deferred(lambda: records)
    elif hint.startswith("arr:"):
        usual = st.lists(st.deferred(lambda: _typed(hint[4:])), max_size=4)
    else:
        return json_values
    return st.one_of(usual, usual, usual, usual, json_values)


@st.composite
def _record(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    """An object over ALL_FIELDS, fields in random order, values usually of the field's type."""
    fields = draw(st.lists(st.sampled_from(ALL_FIELDS), unique=True, max_size=4))
    record: dict[str, Any] = {}
    for field in fields:
        hint = FIELD_HINTS.get(field, ANY)
        if hint == OBJ and depth >= 1:
            record[field] = draw(json_values)
        elif hint == OBJ:
            record[field] = draw(st.one_of(_record(depth + 1), json_values))
        else:
            record[field] = draw(_typed(hint))
    return record


records = _record()
_TYPED = {hint: _typed(hint) for hint in HINTS}


def json_states() -> st.SearchStrategy[dict[str, Any]]:
    """Top-level substrate objects over TOP_KEY_HINTS, each key present or not."""
    return _state()


@st.composite
def _state(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(tuple(TOP_KEY_HINTS)), unique=True, max_size=8))
    return {key: draw(_TYPED[TOP_KEY_HINTS[key]]) for key in keys}


COND, OR, AND, EQ, REL, ADD, MUL, UNARY, POSTFIX, PRIMARY = range(1, 11)

NUMBER_LITERALS = (
    "0", "1", "2", "3", "5", "10", "15", "31", "100", "0.5", ".5", "1.5", "2.5", "0x1F",
    "0xff", "0X1f", "1e3", "1E3", "2.5e-3", "1e+2", "1_000", "0b11", "0o17", "5.", "1e21",
    "0.1", "0.2", "9007199254740991", "4.35", "1e-7", "1000", "0.49999999999999994", "42",
)  # fmt: skip
INDEX_LITERALS = ("0", "1", "2", "-1", "1.5", "3", "10", "-0", '"1"', "NaN", "-2", "-1.5")
SLICE_ARGS = (*INDEX_LITERALS, "Infinity", "-Infinity", "undefined", "null", '"x"', "true")
JOIN_SEPARATORS = ('","', '""', '"-"', '" "', '"😀"', "undefined", "null", "1")
STRING_LITERAL_VALUES = (
    *INTERESTING_STRINGS, *FIELD_HINTS, "a\x00b", "\U0001f600\u00e9", "it's", 'say "hi"',
    "line\nbreak", "tab\there", "back\\slash", "\ud83d\ude00",
)  # fmt: skip
NAMED_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f", "\v": "\\v"}
SPACES = ("  ", "\n", "\t", "\r\n", "\u00a0", "\ufeff", "\u2028", "\u3000", "\v")
IDENTITY_ESCAPABLE = "acdeghijklmopqswyzACDEGHIJKLMOPQSWYZ-!#$ "


@dataclass(frozen=True, slots=True)
class Node:
    """Generated source text with the precedence of its outermost operator."""

    text: str
    prec: int
    op: str = ""


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and name.isascii()


def _fits(have: str, want: str) -> bool:
    return have == want or ANY in (have, want) or (want == ARR_ANY and have.startswith("arr:"))


def _element(hint: str) -> str:
    return hint[4:] if hint.startswith("arr:") else ANY


class ExpressionBuilder:
    """Builds one expression from ``below(n)`` choices (0 <= choice < n, 0 the simplest)."""

    def __init__(self, below: Callable[[int], int], state_keys: Sequence[str]) -> None:
        self.below = below
        self.keys = tuple(state_keys)
        self.env: list[tuple[str, str]] = []
        self.makers: dict[str, tuple[Callable[[str, int], Node], ...]] = {
            NUM: (
                self._arith, self._arith, self._sign, self._length, self._index_of,
                self._find_index, self._math, self._number, self._field, self._element_at,
                self._cond, self._logical,
            ),
            STR: (
                self._concat, self._string_method, self._typeof, self._string, self._join,
                self._field, self._element_at, self._cond, self._logical,
            ),
            BOOL: (
                self._compare, self._compare, self._in, self._not, self._logical,
                self._string_predicate, self._array_includes, self._some_every, self._predicate,
                self._field, self._cond,
            ),
            "arr": (
                self._filter, self._map, self._slice, self._object_static, self._array_literal,
                self._field, self._cond, self._logical,
            ),
            OBJ: (self._find, self._element_at, self._field, self._cond, self._logical),
            ANY: (self._member, self._member, self._logical, self._cond, self._other_kind),
        }  # fmt: skip

    def pick(self, options: Sequence[Any]) -> Any:
        return options[self.below(len(options))]

    def chance(self, one_in: int) -> bool:
        """True one time in ``one_in``; shrinks to False."""
        return self.below(one_in) == one_in - 1

    def expression(self, depth: int = 4) -> str:
        hint = self.pick((BOOL, ANY, BOOL, NUM, STR, ARR_ANY, OBJ))
        return self.gen(hint, depth).text

    def gen(self, hint: str, depth: int) -> Node:
        if depth <= 0 or self.below(3) == 0:
            return self.leaf(hint)
        if self.chance(7):
            hint = self.pick(HINTS)
        kind = "arr" if hint.startswith("arr:") else hint
        maker: Callable[[str, int], Node] = self.pick(self.makers[kind])
        return maker(hint, depth - 1)

    def _operand(self, hint: str) -> str:
        """Mostly ``hint``, one time in four any hint: mixed types exercise coercions."""
        return self.pick(HINTS) if self.chance(4) else hint

    def wrap(self, node: Node, min_prec: int, parent_op: str = "") -> str:
        needed = node.prec < min_prec or (parent_op in ("||", "&&") and node.op == "??")
        if needed or (node.prec < PRIMARY and self.chance(16)):
            return f"({node.text})"
        return node.text

    def base(self, node: Node) -> str:
        """``node`` as the object of a member access or call."""
        text = self.wrap(node, POSTFIX)
        if text[0].isdigit() or text[0] == ".":
            return f"({text})"
        return text

    def binary(self, left: Node, op: str, right: Node) -> Node:
        if op == "??":
            left_text = self.wrap(left, OR) if left.op == "??" else self.wrap(left, EQ)
            return Node(f"{left_text}{self.space()}?? {self.wrap(right, EQ)}", OR, "??")
        prec = {"||": OR, "&&": AND, "in": REL, "+": ADD, "-": ADD}.get(op)
        if prec is None:
            prec = EQ if op in ("==", "!=", "===", "!==") else REL if op[0] in "<>" else MUL
        left_text = self.wrap(left, prec, op)
        right_text = self.wrap(right, prec + 1, op)
        text = f"{left_text}{self.space()}{op}{self.space()}{right_text}"
        return Node(text, prec, op if prec <= AND else "")

    def space(self) -> str:
        """Mostly one space; sometimes other JavaScript whitespace or a line terminator."""
        return self.pick(SPACES) if self.chance(8) else " "

    def unary(self, op: str, operand: Node) -> Node:
        text = self.wrap(operand, UNARY)
        if op == "typeof" or text[0] in "+-":
            return Node(f"{op} {text}", UNARY)
        return Node(f"{op}{text}", UNARY)

    def call(self, receiver: Node, method: str, args: Sequence[str]) -> Node:
        return Node(f"{self.base(receiver)}.{method}({', '.join(args)})", POSTFIX)

    def static_call(self, function: str, args: Sequence[str]) -> Node:
        return Node(f"{function}({', '.join(args)})", POSTFIX)

    def arg(self, hint: str, depth: int) -> str:
        return self.wrap(self.gen(hint, depth), COND)

    def args(self, hint: str, depth: int, counts: Sequence[int]) -> list[str]:
        return [self.arg(hint, depth) for _ in range(self.pick(counts))]

    def index(self, depth: int) -> str:
        if self.below(3) < 2:
            return self.pick(INDEX_LITERALS)
        return self.arg(NUM, depth)

    def member_of(self, obj: Node, name: str, depth: int) -> Node:
        style = self.below(9)
        if style < 5 and _is_identifier(name):
            dot = "?." if style >= 3 else "."
            return Node(f"{self.base(obj)}{dot}{name}", POSTFIX)
        if style == 8:
            key = self.arg(self.pick((STR, NUM, ANY)), depth)
        elif name.isdigit():
            key = name
        else:
            key = self.string_literal(name)
        opener = "?.[" if style in (3, 4, 7) else "["
        return Node(f"{self.base(obj)}{opener}{key}]", POSTFIX)

    def arrow(self, element: str, body_hint: str, depth: int) -> str:
        name = self.pick(PARAM_NAMES)
        params = [(name, element)]
        if self.chance(4):
            params.append((self.pick(INDEX_NAMES), NUM))
        self.env.extend(params)
        body = self.wrap(self.gen(body_hint, depth), COND)
        del self.env[-len(params) :]
        if len(params) == 2:
            return f"({name}, {params[1][0]}) => {body}"
        if self.chance(6):
            return f"({name}) => {body}"
        return f"{name} => {body}"

    def leaf(self, hint: str) -> Node:
        choice = self.below(12)
        if choice < 5 and self.env:
            params = [name for name, have in self.env if _fits(have, hint)]
            if params:
                return Node(self.pick(params), PRIMARY)
        if choice < 9:
            keys = [key for key in self.keys if _fits(TOP_KEY_HINTS.get(key, ANY), hint)]
            if keys:
                return Node(self.pick(keys), PRIMARY)
        if choice == 11:
            return Node(self.pick((*UNKNOWN_NAMES, *TOP_KEY_HINTS)), PRIMARY)
        return self.literal(hint)

    def literal(self, hint: str) -> Node:
        if hint == NUM:
            return Node(self.pick(NUMBER_LITERALS), PRIMARY)
        if hint == STR:
            return Node(self.string_literal(self.pick(STRING_LITERAL_VALUES)), PRIMARY)
        if hint == BOOL:
            return Node(self.pick(("true", "false")), PRIMARY)
        if hint.startswith("arr:"):
            items = [self.leaf(_element(hint)).text for _ in range(self.below(4))]
            return Node(f"[{', '.join(items)}]", PRIMARY)
        if hint == OBJ:
            return Node(self.pick(("user", "item", "meta", "x")), PRIMARY)
        choice = self.below(8)
        if choice < 4:
            return Node(self.pick(("null", "undefined", "NaN", "Infinity")), PRIMARY)
        return self.literal(self.pick((NUM, STR, BOOL, ARR_ANY)))

    def string_literal(self, value: str) -> str:
        quote = self.pick(('"', "'"))
        parts = [quote]
        for position, char in enumerate(value):
            parts.append(self._string_char(char, quote, value[position + 1 : position + 2]))
        parts.append(quote)
        return "".join(parts)

    def _string_char(self, char: str, quote: str, following: str) -> str:
        code = ord(char)
        if char in (quote, "\\"):
            return "\\" + char
        if char in NAMED_ESCAPES and self.below(4) < 3:
            return NAMED_ESCAPES[char]
        if char == "\x00" and not following.isdigit() and self.chance(2):
            return "\\0"
        must = code < 0x20 or code in (0x2028, 0x2029) or 0xD800 <= code <= 0xDFFF
        if not must and not self.chance(5):
            return char
        style = self.below(5)
        if style == 0 and code < 0x100:
            return f"\\x{code:02X}" if self.chance(2) else f"\\x{code:02x}"
        if style == 1:
            return "\\u{" + f"{code:X}" + "}"
        if style == 2 and char in "'\"":
            return "\\" + char
        if style == 3 and char in IDENTITY_ESCAPABLE:
            return "\\" + char
        if code > 0xFFFF:
            high, low = divmod(code - 0x10000, 0x400)
            return f"\\u{0xD800 + high:04X}\\u{0xDC00 + low:04x}"
        return f"\\u{code:04X}"

    def _arith(self, hint: str, depth: int) -> Node:
        op = self.pick(("+", "-", "*", "/", "%"))
        left = self.gen(self._operand(NUM), depth)
        return self.binary(left, op, self.gen(self._operand(NUM), depth))

    def _sign(self, hint: str, depth: int) -> Node:
        return self.unary(self.pick(("-", "+", "-")), self.gen(self._operand(hint), depth))

    def _length(self, hint: str, depth: int) -> Node:
        receiver = self.gen(self.pick((STR, ARR_ANY, ARR_OBJ, ARR_STR, ANY, OBJ)), depth)
        return self.member_of(receiver, "length", depth)

    def _index_of(self, hint: str, depth: int) -> Node:
        receiver_hint = self.pick((STR, ARR_NUM, ARR_STR, ARR_ANY))
        element = STR if receiver_hint == STR else _element(receiver_hint)
        args = [self.arg(self._operand(element), depth)]
        args.extend(self.index(depth) for _ in range(self.pick((0, 0, 0, 1))))
        if self.chance(12):
            args = []
        return self.call(self.gen(receiver_hint, depth), "indexOf", args)

    def _find_index(self, hint: str, depth: int) -> Node:
        receiver_hint = self.pick((ARR_OBJ, ARR_NUM, ARR_STR, ARR_ANY))
        arrow = self.arrow(_element(receiver_hint), self.pick((BOOL, ANY)), depth)
        return self.call(self.gen(receiver_hint, depth), "findIndex", [arrow])

    def _math(self, hint: str, depth: int) -> Node:
        function = self.pick(("abs", "floor", "ceil", "round", "min", "max"))
        counts = (
            (1, 1, 1, 0, 2) if function in ("abs", "floor", "ceil", "round") else (2, 1, 0, 3, 6)
        )
        return self.static_call(f"Math.{function}", self.args(self._operand(NUM), depth, counts))

    def _number(self, hint: str, depth: int) -> Node:
        return self.static_call("Number", self.args(self.pick(HINTS), depth, (1, 1, 1, 0)))

    def _field(self, hint: str, depth: int) -> Node:
        names = [name for name, have in FIELD_HINTS.items() if _fits(have, hint)]
        return self.member_of(self.gen(OBJ, depth), self.pick(names or ALL_FIELDS), depth)

    def _element_at(self, hint: str, depth: int) -> Node:
        if hint == STR and self.chance(3):
            return self.member_of(self.gen(STR, depth), self.pick(INDEX_LITERALS), depth)
        receiver = self.gen(f"arr:{hint}" if hint in (NUM, STR, OBJ) else ARR_ANY, depth)
        if self.chance(2):
            return self.call(receiver, "at", [self.index(depth)][: self.pick((1, 1, 1, 0))])
        key = self.index(depth)
        return Node(f"{self.base(receiver)}{'?.[' if self.chance(6) else '['}{key}]", POSTFIX)

    def _cond(self, hint: str, depth: int) -> Node:
        test = self.gen(self.pick((BOOL, BOOL, ANY)), depth)
        test_text = self.wrap(test, OR)
        yes = self.wrap(self.gen(hint, depth), COND)
        no = self.wrap(self.gen(hint, depth), COND)
        return Node(f"{test_text} ? {yes} : {no}", COND)

    def _logical(self, hint: str, depth: int) -> Node:
        op = self.pick(("??", "||", "&&"))
        left = self.gen(self.pick((hint, ANY)), depth)
        return self.binary(left, op, self.gen(hint, depth))

    def _concat(self, hint: str, depth: int) -> Node:
        left = self.gen(self._operand(STR), depth)
        right = self.gen(self._operand(self.pick((STR, NUM, ANY))), depth)
        return self.binary(left, "+", right) if self.chance(2) else self.binary(right, "+", left)

    def _string_method(self, hint: str, depth: int) -> Node:
        method = self.pick(("toLowerCase", "toUpperCase", "trim", "slice", "slice"))
        args: list[str] = []
        if method == "slice":
            args = [self._slice_arg(depth) for _ in range(self.pick((1, 2, 2, 0)))]
        return self.call(self.gen(STR, depth), method, args)

    def _slice_arg(self, depth: int) -> str:
        return self.pick(SLICE_ARGS) if self.below(4) else self.arg(NUM, depth)

    def _typeof(self, hint: str, depth: int) -> Node:
        return self.unary("typeof", self.gen(self.pick(HINTS), depth))

    def _string(self, hint: str, depth: int) -> Node:
        return self.static_call("String", self.args(self.pick(HINTS), depth, (1, 1, 1, 0)))

    def _join(self, hint: str, depth: int) -> Node:
        receiver = self.gen(self.pick((ARR_STR, ARR_NUM, ARR_ANY, ARR_OBJ)), depth)
        args = [self.pick(JOIN_SEPARATORS)][: self.pick((0, 1, 1))]
        return self.call(receiver, "join", args)

    def _compare(self, hint: str, depth: int) -> Node:
        op = self.pick(("===", "==", "!==", "!=", "<", "<=", ">", ">="))
        left_hint = self.pick((NUM, STR, ANY, NUM, BOOL, ARR_ANY, OBJ))
        left = self.gen(left_hint, depth)
        return self.binary(left, op, self.gen(self._operand(left_hint), depth))

    def _in(self, hint: str, depth: int) -> Node:
        choice = self.below(3)
        if choice == 0:
            key = Node(self.string_literal(self.pick(ALL_FIELDS)), PRIMARY)
        elif choice == 1:
            key = Node(self.pick(INDEX_LITERALS[:6]), PRIMARY)
        else:
            key = self.gen(self.pick((STR, NUM, ANY)), depth)
        target = self.gen(self.pick((OBJ, ARR_ANY, OBJ, ANY, STR)), depth)
        return self.binary(key, "in", target)

    def _not(self, hint: str, depth: int) -> Node:
        return self.unary("!", self.gen(self.pick((BOOL, ANY)), depth))

    def _string_predicate(self, hint: str, depth: int) -> Node:
        method = self.pick(("includes", "startsWith", "endsWith"))
        args = [self.arg(self._operand(STR), depth)]
        if self.chance(4):
            args.append(self.index(depth))
        if self.chance(12):
            args = []
        return self.call(self.gen(STR, depth), method, args)

    def _array_includes(self, hint: str, depth: int) -> Node:
        receiver_hint = self.pick((ARR_STR, ARR_NUM, ARR_ANY))
        args = [self.arg(self._operand(_element(receiver_hint)), depth)]
        if self.chance(5):
            args.append(self.index(depth))
        return self.call(self.gen(receiver_hint, depth), "includes", args)

    def _some_every(self, hint: str, depth: int) -> Node:
        receiver_hint = self.pick((ARR_OBJ, ARR_NUM, ARR_STR, ARR_ANY, ARR_OBJ))
        arrow = self.arrow(_element(receiver_hint), self.pick((BOOL, BOOL, ANY)), depth)
        method = self.pick(("some", "every"))
        return self.call(self.gen(receiver_hint, depth), method, [arrow])

    def _predicate(self, hint: str, depth: int) -> Node:
        function = self.pick(("Array.isArray", "isNaN", "Number.isInteger", "Boolean"))
        return self.static_call(function, self.args(self.pick(HINTS), depth, (1, 1, 1, 1, 0)))

    def _filter(self, hint: str, depth: int) -> Node:
        receiver_hint = hint if hint != ARR_ANY else self.pick((ARR_OBJ, ARR_ANY))
        arrow = self.arrow(_element(receiver_hint), self.pick((BOOL, BOOL, ANY)), depth)
        return self.call(self.gen(receiver_hint, depth), "filter", [arrow])

    def _map(self, hint: str, depth: int) -> Node:
        receiver_hint = self.pick((ARR_OBJ, ARR_NUM, ARR_STR, ARR_ANY))
        arrow = self.arrow(_element(receiver_hint), _element(hint), depth)
        return self.call(self.gen(receiver_hint, depth), "map", [arrow])

    def _slice(self, hint: str, depth: int) -> Node:
        args = [self._slice_arg(depth) for _ in range(self.pick((1, 2, 0)))]
        return self.call(self.gen(hint, depth), "slice", args)

    def _object_static(self, hint: str, depth: int) -> Node:
        function = self.pick(("Object.keys", "Object.values", "Object.entries"))
        target = self.pick((OBJ, OBJ, ANY, ARR_ANY, STR))
        return self.static_call(function, self.args(target, depth, (1, 1, 1, 1, 1, 0)))

    def _array_literal(self, hint: str, depth: int) -> Node:
        items = [self.arg(_element(hint), depth) for _ in range(self.below(5))]
        return Node(f"[{', '.join(items)}]", PRIMARY)

    def _find(self, hint: str, depth: int) -> Node:
        receiver_hint = self.pick((ARR_OBJ, ARR_OBJ, ARR_ANY))
        arrow = self.arrow(_element(receiver_hint), self.pick((BOOL, BOOL, ANY)), depth)
        return self.call(self.gen(receiver_hint, depth), "find", [arrow])

    def _member(self, hint: str, depth: int) -> Node:
        name = self.pick((*ALL_FIELDS, *ALL_FIELDS, *UNKNOWN_NAMES[:2]))
        return self.member_of(self.gen(self.pick((OBJ, OBJ, ANY)), depth), name, depth)

    def _other_kind(self, hint: str, depth: int) -> Node:
        other = self.pick(HINTS[:3] + HINTS[4:])
        kind = "arr" if other.startswith("arr:") else other
        maker: Callable[[str, int], Node] = self.pick(self.makers[kind])
        return maker(other, depth)


_BELOW: dict[int, st.SearchStrategy[int]] = {}


def _below_strategy(n: int) -> st.SearchStrategy[int]:
    strategy = _BELOW.get(n)
    if strategy is None:
        strategy = _BELOW[n] = st.integers(0, n - 1)
    return strategy


def expressions(state_keys: Sequence[str], depth: int = 4) -> st.SearchStrategy[str]:
    """Source text in the language of SPEC §3 that names ``state_keys`` (and unknown names)."""
    keys = tuple(state_keys)

    @st.composite
    def expression(draw: st.DrawFn) -> str:
        def below(n: int) -> int:
            return 0 if n == 1 else draw(_below_strategy(n))

        return ExpressionBuilder(below, keys).expression(depth)

    return expression()


def random_expression(rng: random.Random, state_keys: Sequence[str], depth: int = 4) -> str:
    """The same generator on a seeded ``random.Random``: for campaigns outside Hypothesis."""
    return ExpressionBuilder(rng.randrange, state_keys).expression(depth)


# Small documents and merge patches for the state store: a tiny key vocabulary so that
# documents and patches collide.
STATE_TOP_KEYS = st.sampled_from(["a", "b", "c", "d", ""])
STATE_KEYS = st.sampled_from(["a", "b", "c", "d", "", "x.y"])
"""A small vocabulary, so documents and patches collide. Below the top level ``x.y`` is a
literal key; at the top a report would read it as a path, so it is not drawn there."""

state_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 2.5, -0.5]),
    st.sampled_from(["", "s", "t"]),
)
state_values = st.recursive(
    state_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(STATE_KEYS, inner, max_size=4)
    ),
    max_leaves=12,
)
state_documents = st.dictionaries(STATE_TOP_KEYS, state_values, max_size=5)
"""Random substrates: JSON objects whose values may be anything JSON, nulls included."""

state_patches = st.dictionaries(STATE_TOP_KEYS, st.one_of(st.none(), state_values), max_size=5)
"""Random merge patches: many nulls (deletions), nested objects (recursive merges)."""


def normal(value: Any) -> Any:
    """A form in which JSON-equal values are ``==``: numbers by value, booleans apart."""
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, dict):
        return {key: normal(item) for key, item in value.items()}
    if isinstance(value, list):
        return ("array", [normal(item) for item in value])
    return value


# Declarative contracts with array quantifiers, each drawn with the expression that says the
# same (``quantified_contracts``), over states of arrays of small records
# (``quantifier_states``). The two forms differ on purpose in three ways, which the
# expression written for each contract spells out: an ordering operator compares a number
# with a number or a string with a string only (``typeof x === "number" && x > 1``), a path
# through anything that is not an object is missing (``x?.k``; no member is named by an
# index, nor `length`, which a string or an array has in JavaScript), and `all`, `any` and
# `contains_all` on anything but an array are false (``Array.isArray(a) && ...``) where
# JavaScript would throw. `eq`, `in` and `contains_all` compare by JSON deep equality,
# `===` and `includes` by identity: the values compared are scalars, where the two agree.
QUANTIFIER_FIELDS = ("k", "m", "r", "xs")
QUANTIFIER_TOP_KEYS = ("a", "b")
_QUANTIFIER_SCALARS = (None, True, False, 0, 1, 2.5, "", "1", "a", "ab")
"""Few, so that values meet, and confusable: ``true`` and ``1``, ``"1"`` and ``1``, ``null``
and ``false`` are different values to both forms."""
quantifier_scalars = st.sampled_from(_QUANTIFIER_SCALARS)
_quantifier_values = st.recursive(
    quantifier_scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(QUANTIFIER_FIELDS), inner, max_size=4)
    ),
    max_leaves=12,
)
_quantifier_members = st.dictionaries(
    st.sampled_from(QUANTIFIER_FIELDS), quantifier_scalars, max_size=2
)
_quantifier_records = st.dictionaries(
    st.sampled_from(QUANTIFIER_FIELDS),
    st.one_of(
        quantifier_scalars,
        quantifier_scalars,
        st.lists(quantifier_scalars, max_size=3),
        st.lists(_quantifier_members, max_size=3),
        _quantifier_members,
    ),
    max_size=4,
)
_quantifier_arrays = st.one_of(
    st.lists(quantifier_scalars, max_size=5),
    st.lists(_quantifier_records, max_size=4),
    st.lists(st.lists(quantifier_scalars, max_size=3), max_size=3),
    st.lists(_quantifier_values, max_size=4),
    _quantifier_values,
)


@st.composite
def _quantifier_state(draw: st.DrawFn) -> dict[str, Any]:
    # Each top-level key is usually present, and usually an array.
    return {key: draw(_quantifier_arrays) for key in QUANTIFIER_TOP_KEYS if draw(st.integers(0, 5))}


quantifier_states = _quantifier_state()
"""Top-level arrays (mostly) of scalars, arrays and records over ``QUANTIFIER_FIELDS``."""

_QUANTIFIER_ORDERING = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_QUANTIFIER_SIMPLE = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "exists")
_QUANTIFIER_PATHS = {"k": "?.k", "m": "?.m", "r.k": "?.r?.k", "xs": "?.xs", "r": "?.r"}
MAX_DRAWN_NESTING = 3

Test = Callable[[str], str]
"""A JavaScript boolean about a subject, given the subject's source text."""


def _js(value: Any) -> str:
    return json.dumps(value)  # a JSON scalar is written the same in JavaScript


@st.composite
def _operator(draw: st.DrawFn, name: str, depth: int) -> tuple[Any, Test]:
    """An operand for ``name`` and the expression that tests a subject the same way."""
    if name in ("eq", "ne"):
        value = draw(quantifier_scalars)
        sign = "===" if name == "eq" else "!=="
        return value, lambda s: f"{s} {sign} {_js(value)}"
    if name in _QUANTIFIER_ORDERING:
        bound = draw(st.sampled_from([0, 1, 2.5, -1, "", "1", "a", "ab"]))
        kind = "string" if isinstance(bound, str) else "number"
        sign = _QUANTIFIER_ORDERING[name]
        return bound, lambda s: f'typeof {s} === "{kind}" && {s} {sign} {_js(bound)}'
    if name in ("in", "nin"):
        values = draw(st.lists(quantifier_scalars, max_size=3))
        listed = f"[{', '.join(map(_js, values))}]"
        negate = "!" if name == "nin" else ""
        return values, lambda s: f"{negate}{listed}.includes({s})"
    if name == "exists":
        present = draw(st.booleans())
        return present, lambda s: f"{s} {'!==' if present else '==='} undefined"
    if name == "contains_all":
        values = draw(st.lists(quantifier_scalars, max_size=3))
        listed = f"[{', '.join(map(_js, values))}]"
        v, e = f"v{depth}", f"e{depth}"
        if draw(st.booleans()):
            return (
                values,
                lambda s: f"Array.isArray({s}) && {listed}.every({v} => {s}.includes({v}))",
            )
        field = draw(st.sampled_from(("k", "m")))
        return (
            {"by": field, "values": values},
            lambda s: (
                f"Array.isArray({s}) && "
                f"{listed}.every({v} => {s}.some({e} => {e}?.{field} === {v}))"
            ),
        )
    clause, test = draw(_clause(depth + 1))
    method = "every" if name == "all" else "some"
    x = f"x{depth + 1}"
    return clause, lambda s: f"Array.isArray({s}) && {s}.{method}({x} => {test(x)})"


@st.composite
def _operator_set(draw: st.DrawFn, depth: int) -> tuple[dict[str, Any], Test]:
    """One to two operators for one subject, all of which must hold."""
    names = (*_QUANTIFIER_SIMPLE, "contains_all")
    if depth < MAX_DRAWN_NESTING:
        names += ("all", "any")
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=2, unique=True))
    operators: dict[str, Any] = {}
    tests: list[Test] = []
    for name in chosen:
        operand, test = draw(_operator(name, depth))
        operators[name] = operand
        tests.append(test)
    return operators, lambda s: " && ".join(f"({test(s)})" for test in tests)


@st.composite
def _clause(draw: st.DrawFn, depth: int) -> tuple[dict[str, Any], Test]:
    """The nested conditions of an ``all`` or ``any``: on the element itself, or on members
    of it (an operator set, or a scalar for ``eq``)."""
    if draw(st.booleans()):
        return draw(_operator_set(depth))
    paths = draw(st.lists(st.sampled_from(tuple(_QUANTIFIER_PATHS)), min_size=1, max_size=2))
    clause: dict[str, Any] = {}
    tests: list[Test] = []
    for path in dict.fromkeys(paths):
        suffix = _QUANTIFIER_PATHS[path]
        if draw(st.integers(0, 3)) == 0:
            value = draw(quantifier_scalars)
            clause[path] = value
            tests.append(lambda x, suffix=suffix, value=value: f"{x}{suffix} === {_js(value)}")
        else:
            operators, test = draw(_operator_set(depth))
            clause[path] = operators
            tests.append(lambda x, suffix=suffix, test=test: test(f"{x}{suffix}"))
    return clause, lambda x: " && ".join(f"({test(x)})" for test in tests)


@st.composite
def quantified_contracts(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A declarative contract on ``QUANTIFIER_TOP_KEYS`` whose every condition is an ``all``,
    an ``any`` or a ``contains_all`` (nested conditions may be anything), and for each of its
    conditions, in the order it checks them, the expression that gives the same verdict on
    every state."""
    keys = draw(st.lists(st.sampled_from(QUANTIFIER_TOP_KEYS), min_size=1, max_size=2))
    contract: dict[str, Any] = {}
    tests: list[str] = []
    for key in dict.fromkeys(keys):
        names = st.sampled_from(("all", "any", "contains_all"))
        chosen = draw(st.lists(names, min_size=1, max_size=2, unique=True))
        operators: dict[str, Any] = {}
        for name in chosen:
            operand, test = draw(_operator(name, 0))
            operators[name] = operand
            tests.append(test(key))
        contract[key] = operators
    return contract, tests
