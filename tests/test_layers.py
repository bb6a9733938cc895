"""The value layer sits below the compiler: importing it, the state or the ledger loads none."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


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
    assert loaded("from assay.json import equality, meter, path, strings, values") == [
        "assay",
        "assay.errors",
        "assay.json",
        "assay.json.equality",
        "assay.json.meter",
        "assay.json.path",
        "assay.json.strings",
        "assay.json.values",
    ]


@pytest.mark.parametrize("package", ["assay.state", "assay.ledger"])
def test_the_package_loads_no_compiler(package: str) -> None:
    assert [m for m in loaded(f"import {package}") if m.startswith("assay.expr")] == []
