"""Schemathesis against the live daemon's ``/openapi.json``: every operation, positive and
negative inputs, at least 1,000 requests per run, no server error, no response outside
the schema (status, media type, headers, body); and positive inputs alone, none of which
may be refused for its shape: the document says what the server takes (issue 32, part 7).

Generated waits and timeouts are capped at 50 ms before sending: the schema allows 55 s,
and waiting is not what this test is about.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import CheckContext, CheckFunction, not_a_server_error
from schemathesis.core.transport import Response
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


SEMANTIC: frozenset[str] = frozenset(
    "urn:assay:problem:" + code
    for code in ("expression-syntax", "contract", "idempotency-key-reused", "bad-request", "state")
)
"""The 400s a schema-valid request may still get, for what no schema can say: an expression
that does not parse, a filter contract's operators and operands, an Idempotency-Key reused
for another request, a proof's sizes beyond the tree's size now, a state report's keys that
name one path twice or write inside each other (or inside an array of the state)."""


def _shape_accepted(ctx: CheckContext, response: Response, case: schemathesis.Case) -> None:
    """A schema-valid request is never a 400 for its shape (``invalid-request``), nor a 400
    the schema could have said; a 422 is only a verification that failed."""
    if response.status_code in (400, 422):
        kind = response.json().get("type")
        allowed = SEMANTIC if response.status_code == 400 else {VERIFICATION_FAILED}
        assert kind in allowed, f"{case.operation.label}: {response.status_code} {response.text}"


VERIFICATION_FAILED = "urn:assay:problem:verification-failed"
POSITIVE_CHECKS: list[CheckFunction] = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    _shape_accepted,
]
POSITIVE_EXAMPLES = 60


def _as_written(value: Any) -> Any:
    """``value`` with each float that is a whole number written as an integer: JSON Schema
    counts ``1.0`` an integer, and assay's integer fields take integer literals only."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: _as_written(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_written(item) for item in value]
    return value


def test_no_schema_valid_request_is_refused_for_its_shape(daemon: Served) -> None:
    config = schemathesis.Config.from_dict({"generation": {"with-security-parameters": False}})
    schema = schemathesis.openapi.from_url(f"{daemon.url}/openapi.json", config=config)
    operations = [result.ok() for result in schema.get_all_operations()]
    statuses: dict[str, Counter[int]] = {}
    with requests.Session() as http:
        for operation in operations:
            statuses[operation.label] = _exercise_positive(operation, daemon.url, http)
    total = sum(sum(seen.values()) for seen in statuses.values())
    print(f"schemathesis, positive: {total} requests over {len(statuses)} operations")
    for label, seen in statuses.items():
        print(f"  {label}: {dict(sorted(seen.items()))}")
    assert len(statuses) == len(operations) == 22
    assert all(statuses.values()), statuses
    assert total >= MIN_REQUESTS, total


def _exercise_positive(
    operation: schemathesis.APIOperation, url: str, http: requests.Session
) -> Counter[int]:
    """Send the operation's schema-valid cases, check each response; the statuses seen."""
    seen: Counter[int] = Counter()

    @settings(
        max_examples=POSITIVE_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=operation.as_strategy(GenerationMode.POSITIVE))
    def run(case: schemathesis.Case) -> None:
        _cap(case)
        if isinstance(case.body, dict):
            case.body = _as_written(case.body)
        headers: dict[str, Any] = {**(case.headers or {}), **bearer("admin")}
        response = case.call_and_validate(
            base_url=url, session=http, headers=headers, checks=POSITIVE_CHECKS, timeout=30
        )
        seen[response.status_code] += 1

    run()
    return seen
