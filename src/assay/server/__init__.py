"""The HTTP daemon (SPEC §9): ``assay serve``, a FastAPI app over a ``Host``."""

from assay.server.app import create_app
from assay.server.auth import Scope, Token
from assay.server.config import ServerConfig, load_config

__all__ = ["Scope", "ServerConfig", "Token", "create_app", "load_config"]
