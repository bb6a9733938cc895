"""The value layer sits below the compiler: importing it, or the ledger, loads no compiler."""

from __future__ import annotations

import json
import subprocess
import sys


def loaded(imports: str) -> list[str]:
    """The ``assay`` modules a fresh interpreter has loaded after ``imports``, sorted."""
    probe = (
        f"import json, sys; {imports}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('assay'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    modules: list[str] = json.loads(result.stdout)
    return modules


def test_the_value_layer_imports_only_itself_and_the_errors() -> None:
    assert loaded("from assay.json import meter, path, strings, values") == [
        "assay",
        "assay.errors",
        "assay.json",
        "assay.json.meter",
        "assay.json.path",
        "assay.json.strings",
        "assay.json.values",
    ]


def test_the_ledger_loads_no_compiler() -> None:
    assert [m for m in loaded("import assay.ledger") if m.startswith("assay.expr")] == []
