"""The one compiled module, which pyproject.toml cannot declare in a stable form: RFC 8785
canonicalization of plain JSON, in C, since every ledger entry's body goes through it
(src/assay/ledger/canonical.py says what it does, docs/ledger.md gives the figures)."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "assay.ledger._canonical",
            sources=["src/assay/ledger/_canonical.c"],
            extra_compile_args=["-std=c11", "-Wall", "-Wextra"],
        )
    ]
)
