"""The compiled modules, which pyproject.toml cannot declare in a stable form. Every ledger
entry goes through both, under the GIL: RFC 8785 canonicalization of its body
(src/assay/ledger/_canonical.c), and its sealing and Merkle hashing with OpenSSL's SHA-256
(src/assay/ledger/_seal.c, linked to the libcrypto Python's hashlib uses). docs/ledger.md
gives the figures. Both are optional: where they cannot be built, the package installs and
uses their pure-Python twins (assay.ledger.compiled), which give the same results slowly."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "assay.ledger._canonical",
            sources=["src/assay/ledger/_canonical.c"],
            depends=["src/assay/ledger/_fields.h"],
            extra_compile_args=["-std=c11", "-Wall", "-Wextra"],
            optional=True,
        ),
        Extension(
            "assay.ledger._seal",
            sources=["src/assay/ledger/_seal.c"],
            depends=["src/assay/ledger/_fields.h"],
            libraries=["crypto"],
            extra_compile_args=["-std=c11", "-Wall", "-Wextra"],
            optional=True,
        ),
    ]
)
