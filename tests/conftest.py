"""Shared fixtures: the Node.js oracle runs once per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from js_oracle import JsOracle


@pytest.fixture(scope="session")
def js_oracle() -> Iterator[JsOracle]:
    """One ``node`` process for the whole session, closed cleanly at its end."""
    with JsOracle() as oracle:
        yield oracle
