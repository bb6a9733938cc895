"""The framework adapters are optional extras: ``assay`` imports none of the frameworks, and
an adapter imported without its framework names the extra to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

FRAMEWORKS = ("pydantic_ai", "langchain_core", "langgraph")


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )


def test_importing_assay_imports_no_framework() -> None:
    ran = python(
        f"import sys, assay, assay.tool; print([m for m in {FRAMEWORKS!r} if m in sys.modules])"
    )
    assert (ran.returncode, ran.stdout.strip()) == (0, "[]"), ran.stderr


@pytest.mark.parametrize(
    ("adapter", "framework", "extra"),
    [
        ("assay.tool.pydantic_ai", "pydantic_ai", "pydantic-ai"),
        ("assay.tool.langgraph", "langchain_core", "langgraph"),
    ],
)
def test_an_adapter_without_its_framework_names_the_extra(
    adapter: str, framework: str, extra: str
) -> None:
    ran = python(
        f"import sys; sys.modules[{framework!r}] = None\n"
        f"try:\n    import {adapter}\nexcept ImportError as e:\n    print(e, '|', e.name)"
    )
    assert ran.returncode == 0, ran.stderr
    assert f"pip install 'assay[{extra}]' | {framework}" in ran.stdout
