"""The C modules the ledger runs on, or their pure-Python twins where one was not built.

``_canonical`` writes RFC 8785 JSON of plain values and makes drafts; ``_seal`` seals entries
and hashes Merkle nodes with OpenSSL. Each is loaded if it was built, else its twin
(``_pycanonical``, ``_pyseal``), which gives the same results more slowly. ``COMPILED``
names the C modules that were loaded.
"""

from __future__ import annotations

from typing import Final

_loaded: list[str] = []
try:
    from assay.ledger._canonical import canonical, canonical_copy, stamped_draft

    _loaded.append("_canonical")
except ImportError:
    from assay.ledger._pycanonical import canonical, canonical_copy, stamped_draft
try:
    from assay.ledger._seal import node_hashes, seal_all

    _loaded.append("_seal")
except ImportError:
    from assay.ledger._pyseal import node_hashes, seal_all

COMPILED: Final = frozenset(_loaded)
"""The C modules in use: ``{"_canonical", "_seal"}`` where both were built."""

__all__ = ["COMPILED", "canonical", "canonical_copy", "node_hashes", "seal_all", "stamped_draft"]
