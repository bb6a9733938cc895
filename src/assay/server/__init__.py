"""The HTTP daemon (SPEC §9): ``assay serve``, a FastAPI app over a ``Host``."""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assay.server.app import create_app as create_app
    from assay.server.config import ServerConfig as ServerConfig
    from assay.server.config import load_config as load_config
    from assay.server.tokens import Scope as Scope
    from assay.server.tokens import Token as Token

__all__ = ["Scope", "ServerConfig", "Token", "create_app", "load_config"]

# FastAPI loads only when the app is built, so `assay --help` and `assay serve --help` are quick.
_WHERE = {
    "create_app": "assay.server.app",
    "ServerConfig": "assay.server.config",
    "load_config": "assay.server.config",
    "Scope": "assay.server.tokens",
    "Token": "assay.server.tokens",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'assay.server' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
