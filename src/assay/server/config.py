"""``ServerConfig``: what ``assay serve`` runs, from flags, environment variables and TOML.

Each setting comes from the first source that gives it: the command line, then the
environment (``ASSAY_APP``, ``ASSAY_LEDGER``, ``ASSAY_HOST``, ``ASSAY_PORT``,
``ASSAY_TOKENS``, ``ASSAY_LOG_LEVEL``), then the TOML file (``--config`` or
``ASSAY_CONFIG``), then the defaults. Tokens come whole from one source, the first that
gives any. A non-loopback bind without tokens is refused by ``check``.
"""

from __future__ import annotations

import ipaddress
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from assay.defaults import (
    DEFAULT_APPLICATION,
    DEFAULT_LEASE_S,
    DEFAULT_SESSION_IDLE_S,
    DEFAULT_WALL_S,
)
from assay.defaults import DEFAULT_LEDGER_URL as DEFAULT_URL
from assay.errors import ContractError, RequestError, WrongTypeError
from assay.json.path import parse_path
from assay.server.tokens import TOKEN_FORM, Token, check_distinct, parse_scopes

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
LOG_LEVELS: Final = ("critical", "error", "warning", "info", "debug")
DEFAULT_MAX_BODY_BYTES: Final = 16 * 2**20
"""The largest request body the daemon reads (16 MiB: room for a whole application state)."""
ENVIRONMENT: Final = {
    "app": "ASSAY_APP",
    "ledger": "ASSAY_LEDGER",
    "host": "ASSAY_HOST",
    "port": "ASSAY_PORT",
    "tokens": "ASSAY_TOKENS",
    "log_level": "ASSAY_LOG_LEVEL",
    "access_log": "ASSAY_ACCESS_LOG",
    "workflows": "ASSAY_WORKFLOWS",
    "redact": "ASSAY_REDACT",
    "max_body_bytes": "ASSAY_MAX_BODY_BYTES",
    "session_idle_s": "ASSAY_SESSION_IDLE_S",
    "thresholds": "ASSAY_THRESHOLDS",
    "lease_s": "ASSAY_LEASE_S",
    "workflow_wall_s": "ASSAY_WORKFLOW_WALL_S",
}
CONFIG_ENV: Final = "ASSAY_CONFIG"
_FILE_KEYS: Final = tuple(ENVIRONMENT)
"""Every setting has a flag, a variable and a TOML key of the same name."""


@dataclass(frozen=True)
class ServerConfig:
    """The daemon's settings; ``tokens`` never show in its ``repr``."""

    app: str = DEFAULT_APPLICATION
    ledger: str = DEFAULT_URL
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    tokens: tuple[Token, ...] = field(default=(), repr=False)
    log_level: str = "info"
    workflows: tuple[str, ...] = ()
    """Directories of NAME.yaml workflows the daemon runs by name, beside the built-in one
    (which a file of its name takes the place of)."""
    redact: tuple[str, ...] = ()
    """Key patterns withheld from every answer, narrative, diff, ledger entry and log line,
    beside the application's own."""
    access_log: bool = True
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    """Larger request bodies are refused (413) before they are read whole."""
    session_idle_s: float = DEFAULT_SESSION_IDLE_S
    """A session no request names for this long is closed; 0: sessions never expire."""
    thresholds: tuple[tuple[str, float], ...] = ()
    """(tier, confidence) pairs over the application's thresholds and the defaults."""
    lease_s: float = DEFAULT_LEASE_S
    """How long the daemon's lease on the ledger lasts unrenewed (renewed every third of it):
    once a killed daemon's has expired, another closes the fires it left open."""
    workflow_wall_s: float = DEFAULT_WALL_S
    """The wall bound of a workflow run whose workflow's budget sets no ``wall_s``."""

    @property
    def loopback(self) -> bool:
        """The bind address is reachable from this machine only."""
        return is_loopback(self.host)

    def check(self) -> None:
        """Refuse settings that cannot be served safely; ``RequestError`` says what to do."""
        if not 0 <= self.port <= 65535:
            raise RequestError(f"port must be 0 to 65535, not {self.port}", field="port")
        if self.max_body_bytes < 1:
            raise RequestError(
                f"max_body_bytes must be 1 or more, not {self.max_body_bytes}",
                field="max_body_bytes",
            )
        if not 0 <= self.session_idle_s < math.inf:
            raise RequestError(
                f"session_idle_s must be 0 (never expire) or a positive number of seconds, "
                f"not {self.session_idle_s}",
                field="session_idle_s",
            )
        if not 0 < self.lease_s < math.inf:
            raise RequestError(
                f"lease_s must be a positive number of seconds, not {self.lease_s}",
                field="lease_s",
            )
        from assay.workflow.ceiling import MAX_WALL_S  # here: the CLI's parser loads no workflow

        if not 0 < self.workflow_wall_s <= MAX_WALL_S:
            raise RequestError(
                f"workflow_wall_s must be a positive number of seconds, at most "
                f"{MAX_WALL_S:,.0f} (a day), not {self.workflow_wall_s}",
                field="workflow_wall_s",
            )
        if self.log_level not in LOG_LEVELS:
            raise RequestError(
                f"log level must be one of {', '.join(LOG_LEVELS)}, not {self.log_level!r}",
                field="log_level",
            )
        check_distinct(self.tokens)
        from assay.graph.session import (
            resolve_thresholds,  # here: the CLI's parser loads no compiler
        )

        try:
            resolve_thresholds(dict(self.thresholds))
        except WrongTypeError as error:
            raise RequestError(str(error), field="thresholds") from None
        for pattern in self.redact:
            try:
                parse_path(pattern)
            except ContractError as error:
                raise RequestError(
                    f"redact: {error}; a redact pattern is a dotted state path whose segments "
                    "may be * (any one key) or ** (any keys), such as inbox.sent.*.to or "
                    "secrets.**",
                    field="redact",
                ) from None
        for directory in self.workflows:
            if not Path(directory).is_dir():
                state = "is a file" if Path(directory).exists() else "does not exist"
                raise RequestError(
                    f"workflows: {directory!r} {state}; give a directory of NAME.yaml workflow "
                    "files",
                    field="workflows",
                )
        if not self.loopback and not self.tokens:
            raise RequestError(
                f"refusing to serve on {self.host}, which is not a loopback address, without "
                f"tokens: anyone who can reach it could act. Add one with --token {TOKEN_FORM} "
                "(or ASSAY_TOKENS, or [[tokens]] in the --config file), or bind to 127.0.0.1",
                field="host",
            )


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback IP address (``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def load_config(
    flags: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
    path: str | Path | None = None,
) -> ServerConfig:
    """Merge ``flags`` (``None`` = not given), ``environ`` and the TOML file at ``path`` (or
    ``$ASSAY_CONFIG``) over the defaults; errors name the source and the setting."""
    environ = os.environ if environ is None else environ
    path = path or environ.get(CONFIG_ENV) or None
    file = _read_file(Path(path)) if path else {}
    settings: dict[str, Any] = {}
    sources: dict[str, str] = {}  # where each setting given came from, for its errors
    for key, variable in ENVIRONMENT.items():
        if flags.get(key) not in (None, [], ()):
            settings[key] = _from_flag(key, flags[key])
            sources[key] = FLAGS[key]
        elif environ.get(variable):
            settings[key] = _from_environment(key, environ[variable], variable)
            sources[key] = variable
        elif key in file:
            settings[key] = _from_file(key, file[key], str(path))
            sources[key] = f"{key} in --config {path}"
    config = ServerConfig(**settings)
    try:
        config.check()
    except RequestError as error:
        source = sources.get(error.field or "")
        if source is None or error.field == "host":  # the host's refusal names its remedies
            raise
        raise RequestError(f"{error} (set by {source})", field=error.field) from None
    return config


FLAGS: Final = {
    "app": "--app",
    "ledger": "--ledger",
    "host": "--host",
    "port": "--port",
    "tokens": "--token",
    "log_level": "--log-level",
    "access_log": "--no-access-log",
    "workflows": "--workflows",
    "redact": "--redact",
    "max_body_bytes": "--max-body-bytes",
    "session_idle_s": "--session-idle-s",
    "thresholds": "--threshold",
    "lease_s": "--lease-s",
    "workflow_wall_s": "--workflow-wall-s",
}
"""The flag of each setting."""


def _from_flag(key: str, value: Any) -> Any:
    if key == "tokens":
        return tuple(Token.parse(text, source="--token") for text in value)
    if key == "thresholds":
        return tuple(_threshold(text, "--threshold") for text in value)
    if key in ("workflows", "redact"):
        return tuple(value)
    return value


def _from_environment(key: str, value: str, variable: str) -> Any:
    if key == "tokens":
        texts = value.replace(";", " ").split()
        return tuple(Token.parse(text, source=variable) for text in texts)
    if key in ("port", "max_body_bytes"):
        try:
            return int(value)
        except ValueError:
            what = "a port number" if key == "port" else "a number of bytes"
            raise RequestError(f"{variable} must be {what}, not {value!r}", field=key) from None
    if key in ("session_idle_s", "lease_s", "workflow_wall_s"):
        try:
            return float(value)
        except ValueError:
            raise RequestError(
                f"{variable} must be a number of seconds, not {value!r}", field=key
            ) from None
    if key == "thresholds":
        return tuple(_threshold(text, variable) for text in value.split())
    if key == "access_log":
        return value.strip().lower() not in ("0", "false", "no", "off")
    if key == "workflows":
        return tuple(part for part in value.split(os.pathsep) if part)
    if key == "redact":
        return tuple(value.split())
    return value


def _from_file(key: str, value: Any, path: str) -> Any:
    expected, kind = _FILE_KINDS.get(key, (str, "string"))
    valid = isinstance(value, expected) and (expected is bool or not isinstance(value, bool))
    if not valid:
        raise RequestError(
            f"--config {path}: {key} must be a TOML {kind}, not {type(value).__name__}",
            field=key,
        )
    if key == "tokens":
        return tuple(_file_token(item, index, path) for index, item in enumerate(value))
    if key in ("workflows", "redact"):
        if not all(isinstance(item, str) for item in value):
            raise RequestError(f"--config {path}: {key} must be an array of strings", field=key)
        return tuple(value)
    if key == "thresholds":
        return tuple(value.items())  # checked with the rest, in ServerConfig.check
    return value


def _threshold(text: str, source: str) -> tuple[str, float]:
    """``TIER=CONFIDENCE`` (``irreversible=0.99``) as a pair; ``RequestError`` if not."""
    tier, sign, number = text.partition("=")
    try:
        if not sign:
            raise ValueError
        return tier.strip(), float(number)
    except ValueError:
        raise RequestError(
            f"{source}: {text!r} is not TIER=CONFIDENCE, such as irreversible=0.99",
            field="thresholds",
        ) from None


_FILE_KINDS: Final[dict[str, tuple[type | tuple[type, ...], str]]] = {
    "port": (int, "integer"),
    "max_body_bytes": (int, "integer"),
    "session_idle_s": ((int, float), "number"),
    "lease_s": ((int, float), "number"),
    "workflow_wall_s": ((int, float), "number"),
    "tokens": (list, "array of tables"),
    "access_log": (bool, "boolean"),
    "workflows": (list, "array of strings"),
    "redact": (list, "array of strings"),
    "thresholds": (dict, "table of numbers, such as {irreversible = 0.99}"),
}


def _file_token(item: Any, index: int, path: str) -> Token:
    where = f"--config {path}: tokens[{index}]"
    if not isinstance(item, dict):
        raise RequestError(f"{where} must be a table with name, secret and scopes", field="tokens")
    unknown = sorted(set(item) - {"name", "secret", "secret_env", "scopes"})
    if unknown:
        raise RequestError(
            f"{where} has unknown keys {', '.join(unknown)}; a token has name, secret (or "
            "secret_env, the environment variable that holds it) and scopes",
            field="tokens",
        )
    name, scopes = item.get("name"), item.get("scopes")
    if not isinstance(name, str) or not isinstance(scopes, list) or not scopes:
        raise RequestError(f"{where} needs a name and a list of scopes", field="tokens")
    secret = item.get("secret")
    if "secret_env" in item:
        variable = str(item["secret_env"])
        secret = os.environ.get(variable)
        if not secret:
            raise RequestError(
                f"{where} ({name}): the environment variable {variable} that secret_env names "
                "is not set",
                field="tokens",
            )
    if not isinstance(secret, str):
        raise RequestError(f"{where} ({name}) needs a secret or a secret_env", field="tokens")
    return Token(name, secret, parse_scopes(map(str, scopes), name=name, source=where))


def _read_file(path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as error:
        raise RequestError(f"--config {path}: cannot read it ({error.strerror})") from None
    except UnicodeDecodeError as error:
        raise RequestError(f"--config {path}: not UTF-8 text ({error.reason})") from None
    except tomllib.TOMLDecodeError as error:
        raise RequestError(f"--config {path}: not valid TOML ({error})") from None
    unknown = sorted(set(data) - set(_FILE_KEYS))
    if unknown:
        raise RequestError(
            f"--config {path}: unknown settings {', '.join(unknown)}; the settings are "
            f"{', '.join(_FILE_KEYS)}",
            field="config",
        )
    return data
