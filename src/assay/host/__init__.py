"""The host: one application, its sessions and its ledger, behind every port."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.host.application import Application as Application
    from assay.host.application import ConnectContext as ConnectContext
    from assay.host.application import Connection as Connection
    from assay.host.application import load_application as load_application
    from assay.host.evidence import DurableEvidence as DurableEvidence
    from assay.host.host import Host as Host
    from assay.host.session_registry import DEFAULT_SESSION as DEFAULT_SESSION

__all__ = [
    "DEFAULT_SESSION",
    "Application",
    "ConnectContext",
    "Connection",
    "DurableEvidence",
    "Host",
    "load_application",
]

# Loaded on first use: the command line reads a constant from here without loading the host.
_WHERE = {
    "Application": "assay.host.application",
    "ConnectContext": "assay.host.application",
    "Connection": "assay.host.application",
    "load_application": "assay.host.application",
    "DurableEvidence": "assay.host.evidence",
    "DEFAULT_SESSION": "assay.host.session_registry",
    "Host": "assay.host.host",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'assay.host' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
