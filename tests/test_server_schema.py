"""Schemathesis against the live daemon's ``/openapi.json``: every operation, positive and
negative inputs, at least 1,000 requests per run, no server error, no response outside
the schema (status, media type, headers, body).

Generated waits and timeouts are capped at 50 ms before sending: the schema allows 55 s,
and waiting is not what this test is about.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import CheckFunction, not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from assay.examples.outpost import APPLICATION, Outpost, outpost_connector
from assay.host import Application
from http_daemon import TOKENS, DaemonThread, Served, bearer

EXAMPLES_PER_OPERATION = 90
MIN_REQUESTS = 1000
CAP_MS = 50
_TIMED = ("wait_ms", "timeout_ms", "settle_ms", "verify_timeout_ms")

CHECKS: list[CheckFunction] = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]


@pytest.fixture(scope="module")
def daemon() -> Iterator[Served]:
    outpost = Outpost(delivery_delay=0.01, mode_delay=0.01, release_delay=0.01)
    application = Application(APPLICATION.graph, start="inbox", connect=outpost_connector(outpost))
    with DaemonThread(application, tokens=TOKENS) as served:
        yield served


def _cap(case: schemathesis.Case) -> None:
    # Lax JSON validation takes 3e4 or "30000" for an int too, so cap whatever reads as one.
    for part in (case.body, case.query):
        if isinstance(part, dict):
            for name in _TIMED:
                if name in part and _number(part[name]) > CAP_MS:
                    part[name] = CAP_MS


def _number(value: Any) -> float:
    if isinstance(value, bool):
        return 0.0
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def test_every_operation_conforms_to_the_schema(daemon: Served) -> None:
    # Every request carries a valid admin token: the auth matrix (test_server_auth) tests
    # tokens; here a missing token would only hide the rest of a generated request.
    config = schemathesis.Config.from_dict({"generation": {"with-security-parameters": False}})
    schema = schemathesis.openapi.from_url(f"{daemon.url}/openapi.json", config=config)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 22
    sent: dict[str, int] = {}
    with requests.Session() as http:
        for operation in operations:
            _exercise(operation, daemon.url, http, sent)
    assert len(sent) == len(operations), sorted(sent)
    total = sum(sent.values())
    print(f"schemathesis: {total} requests over {len(sent)} operations: {sent}")
    assert total >= MIN_REQUESTS, sent


def _exercise(
    operation: schemathesis.APIOperation, url: str, http: requests.Session, sent: dict[str, int]
) -> None:
    """Send the operation's generated cases (valid and invalid) and check each response."""
    strategy = st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )

    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def run(case: schemathesis.Case) -> None:
        _cap(case)
        headers: dict[str, Any] = {**(case.headers or {}), **bearer("admin")}
        case.call_and_validate(
            base_url=url, session=http, headers=headers, checks=CHECKS, timeout=30
        )
        sent[operation.label] = sent.get(operation.label, 0) + 1

    run()
