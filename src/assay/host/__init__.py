"""The host: one application, its sessions and its ledger, behind every port."""

from assay.host.application import Application, ConnectContext, Connection, load_application
from assay.host.evidence import DurableEvidence
from assay.host.host import DEFAULT_SESSION, Host

__all__ = [
    "DEFAULT_SESSION",
    "Application",
    "ConnectContext",
    "Connection",
    "DurableEvidence",
    "Host",
    "load_application",
]
