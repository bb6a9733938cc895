"""Shared fixtures and the Hypothesis profile.

Shared machines stall now and then, so input-generation speed and per-example deadlines are
not health criteria here; with ``CI`` set, runs are derandomized so a red run reproduces.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from js_oracle import JsOracle
from postgres import PostgresCluster, PostgresMissingError

settings.register_profile(
    "assay",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
    database=None if os.environ.get("CI") else settings.default.database,
)
settings.load_profile("assay")


@atexit.register
def _close_llama_cpp_devnull() -> None:
    """llama-cpp-python opens ``os.devnull`` twice when imported and never closes it, so a
    run that loaded the in-process model would end with two ResourceWarnings. Registered
    before assay's own exit handler, this runs after it has freed the models."""
    utils = sys.modules.get("llama_cpp._utils")
    for name in ("outnull_file", "errnull_file"):
        handle = getattr(utils, name, None)
        if handle is not None:
            handle.close()


@pytest.fixture(scope="session")
def js_oracle() -> Iterator[JsOracle]:
    """One ``node`` process for the whole session, closed cleanly at its end."""
    with JsOracle() as oracle:
        yield oracle


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """A real PostgreSQL server for the session, on a free loopback port, removed at its end.

    Fails, never skips, when PostgreSQL is not installed: CI must run real-component tests.
    """
    try:
        cluster = PostgresCluster()
    except PostgresMissingError as exc:
        missing = str(exc)
    else:
        with cluster:
            yield cluster.url
        return
    pytest.fail(missing, pytrace=False)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Async tests (``pytest.mark.anyio``) run on asyncio, as assay does."""
    return "asyncio"


@pytest.fixture(scope="session")
def model_server() -> Iterator[str]:
    """The real local model (SmolLM2-135M on llama-cpp-python's server) on a free loopback
    port, for the whole session; yields its OpenAI-compatible base URL.

    Fails, never skips, when `make model-server` has not installed it: CI must run it.
    """
    from workflow_model import ModelServer, ModelServerMissingError

    try:
        server = ModelServer()
    except ModelServerMissingError as exc:
        missing = str(exc)
    else:
        with server:
            yield server.base_url
        return
    pytest.fail(missing, pytrace=False)


@pytest.fixture(scope="session")
def model_file() -> str:
    """The same model's GGUF file, for the model verifier's in-process path, once llama-cpp-
    python is importable here. Fails, never skips, when `make model-server` has not put it
    there: CI must run it."""
    from workflow_model import ModelServerMissingError, find_model

    try:
        _, gguf = find_model()
    except ModelServerMissingError as exc:
        pytest.fail(str(exc), pytrace=False)
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.fail(
            "llama-cpp-python is not installed in this venv; run `make model-server`",
            pytrace=False,
        )
    return str(gguf)
