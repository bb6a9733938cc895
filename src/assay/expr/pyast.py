"""Builders for the Python syntax trees the code generator emits.

Only these make Python nodes: names come from the generator, values enter as constants.
"""

from __future__ import annotations

import ast
from typing import Any

from assay.json.values import UNDEFINED


def name(identifier: str) -> ast.Name:
    return ast.Name(identifier, ast.Load())


def store(identifier: str) -> ast.Name:
    return ast.Name(identifier, ast.Store())


def constant(value: Any) -> ast.expr:
    if value is UNDEFINED:
        return name("_U")
    return ast.Constant(value)


def call(function: str, *args: ast.expr) -> ast.Call:
    return ast.Call(name(function), list(args), [])


def is_(left: ast.expr, right: ast.expr, negate: bool = False) -> ast.Compare:
    return ast.Compare(left, [ast.IsNot() if negate else ast.Is()], [right])


def type_is(value: ast.expr, type_name: str, negate: bool = False) -> ast.Compare:
    return is_(call("type", value), name(type_name), negate)


def compare(left: ast.expr, op: ast.cmpop, right: ast.expr) -> ast.Compare:
    return ast.Compare(left, [op], [right])


def and_(*values: ast.expr) -> ast.BoolOp:
    return ast.BoolOp(ast.And(), list(values))


def or_(*values: ast.expr) -> ast.BoolOp:
    return ast.BoolOp(ast.Or(), list(values))


def not_(value: ast.expr) -> ast.UnaryOp:
    return ast.UnaryOp(ast.Not(), value)


def call_attr(target: str, attribute: str, *args: ast.expr) -> ast.Call:
    return ast.Call(ast.Attribute(name(target), attribute, ast.Load()), list(args), [])
