"""Time every adversarial case of the test suite against the 100 ms budget of issue #2.

Run: ``.venv/bin/python bench/adversarial.py``. Each case is compiled and evaluated five
times (compile cache cleared each time); the slowest run is reported, since the budget is a
worst case. Prints one line per case and the maximum.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from adversarial import CASES
from assay import ExpressionError, compile_expression
from assay.expr.expression import _compile_cached

BUDGET_MS = 100.0
RUNS = 5


def main() -> int:
    worst_overall = 0.0
    print(f"{'case':48} {'outcome':28} {'worst of 5':>11}")
    for name, source, state, limits, _expected in CASES:
        worst = 0.0
        outcome = ""
        for _ in range(RUNS):
            _compile_cached.cache_clear()
            started = time.perf_counter()
            try:
                compile_expression(source, limits=limits).evaluate(state)
                outcome = "evaluated"
            except ExpressionError as error:
                outcome = type(error).__name__
            worst = max(worst, (time.perf_counter() - started) * 1000)
        worst_overall = max(worst_overall, worst)
        flag = "" if worst <= BUDGET_MS else "  OVER BUDGET"
        print(f"{name:48} {outcome:28} {worst:9.2f}ms{flag}")
    print(f"\nslowest case: {worst_overall:.2f} ms (budget {BUDGET_MS:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
