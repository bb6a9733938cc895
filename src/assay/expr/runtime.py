"""What compiled expressions can see: their helpers and three builtins, nothing else."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from assay.errors import ExpressionEvaluationError
from assay.expr import operators
from assay.expr.functions import GLOBAL_FUNCTIONS
from assay.expr.limits import ExpressionLimits
from assay.expr.methods import call_method, not_a_function
from assay.json.meter import Meter, MeterNeededError, steps_exceeded
from assay.json.values import UNDEFINED, loose_equal, strict_equal, to_boolean, type_of

SAFE_BUILTINS: Final = {"type": type, "len": len, "enumerate": enumerate}


def _cost(value: Any) -> int:
    """Steps charged inside callbacks for a string or array that was scanned or produced."""
    t = type(value)
    if t is str or t is list:
        return len(value) >> 4
    return 0


def _shadowed_global(name: str, path: str) -> Exception:
    return ExpressionEvaluationError(
        f"{path} is not a function: {name} is a key of the state, which shadows the global",
        path=path,
    )


_HELPERS: Final[dict[str, Any]] = {
    "_U": UNDEFINED,
    "_get_path": operators.get_path,
    "_get_member": operators.get_member,
    "_length_of": operators.length_of,
    "_call_method": call_method,
    "_not_a_function": not_a_function,
    "_has_property": operators.has_property,
    "_add": operators.add,
    "_sub": operators.subtract,
    "_mul": operators.multiply,
    "_div": operators.divide,
    "_mod": operators.remainder,
    "_neg": operators.negate,
    "_pos": operators.plus,
    "_lt": operators.less,
    "_gt": operators.greater,
    "_le": operators.less_equal,
    "_ge": operators.greater_equal,
    "_loose_eq": loose_equal,
    "_strict_eq": strict_equal,
    "_truthy": to_boolean,
    "_typeof": type_of,
    "_cost": _cost,
    "_Meter": Meter,
    "_MeterNeeded": MeterNeededError,
    "_shadowed_global": _shadowed_global,
    "_list": list,
    "_str": str,
    "_int": int,
    "_float": float,
    "_bool": bool,
    "_dict": dict,
    "_KeyError": KeyError,
    "_TypeError": TypeError,
    **{f"_g_{name.replace('.', '_')}": function for name, function in GLOBAL_FUNCTIONS.items()},
}


def namespace(limits: ExpressionLimits) -> dict[str, Any]:
    """A fresh globals dictionary for one compiled expression."""
    scope: dict[str, Any] = dict(_HELPERS)
    scope["__builtins__"] = SAFE_BUILTINS
    scope["_exceeded"] = _exceeded_function(limits.max_steps)
    scope["_M0"] = Meter(limits.max_string_length, limits.max_steps, steps=None)
    return scope


def _exceeded_function(bound: int) -> Callable[[], None]:
    def exceeded() -> None:
        raise steps_exceeded(bound)

    return exceeded
