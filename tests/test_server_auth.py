"""Bearer tokens and scopes: every route × (no token, wrong token, each scope); secrets kept.

Runs against a real uvicorn server on a loopback port; the route table is checked against
``/openapi.json`` so a new route cannot be left out of the matrix.
"""

from __future__ import annotations

import html
import io
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from assay.examples.outpost import APPLICATION, Outpost, outpost_connector
from assay.host import Application
from assay.ledger import export_jsonl
from assay.workflow.examples import COMPETITOR_INPUT
from http_daemon import SECRETS, TOKENS, Served, bearer, serving

pytestmark = pytest.mark.anyio

ROUTES: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("POST", "/v1/actions", {"action": "inbox.open-drone"}, "act"),
    ("POST", "/v1/verify", {"expression": "true", "timeout_ms": 0}, "read"),
    ("GET", "/v1/state", None, "read"),
    ("POST", "/v1/state/reports", {"values": {"desk.lamp": "on"}}, "report"),
    ("GET", "/v1/transitions/{transition_id}", None, "read"),
    ("POST", "/v1/sessions", None, "act"),
    ("GET", "/v1/sessions", None, "read"),
    ("GET", "/v1/sessions/{session_id}", None, "read"),
    ("DELETE", "/v1/sessions/{session_id}", None, "act"),
    ("GET", "/v1/sessions/{session_id}/actions", None, "read"),
    ("GET", "/v1/ledger/entries", None, "read"),
    ("GET", "/v1/ledger/entries/{seq}", None, "read"),
    ("GET", "/v1/ledger/proofs/inclusion/{seq}", None, "read"),
    ("GET", "/v1/ledger/proofs/consistency?old=1", None, "read"),
    ("GET", "/v1/ledger/head", None, "read"),
    ("GET", "/v1/ledger/verify", None, "admin"),
    ("GET", "/v1/workflows", None, "read"),
    ("POST", "/v1/workflows/{name}/runs", {"input": COMPETITOR_INPUT}, "act"),
    ("GET", "/v1/runs", None, "read"),
    ("GET", "/v1/runs/{run_id}", None, "read"),
    ("POST", "/v1/runs/{run_id}/resume", {"input": {}}, "act"),
]
CALLERS = [None, "wrong", *SECRETS]


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    outpost = Outpost(delivery_delay=0.05, mode_delay=0.05, release_delay=0.05)
    application = Application(APPLICATION.graph, start="inbox", connect=outpost_connector(outpost))
    async with serving(application, tokens=TOKENS) as served:
        yield served


async def test_the_matrix_covers_every_route_in_the_openapi_document(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as client:
        document = (await client.get("/openapi.json")).json()
    declared = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
        if path != "/healthz"
    }
    assert declared == {(method, path.partition("?")[0]) for method, path, _, _ in ROUTES}
    scheme = document["components"]["securitySchemes"]["HTTPBearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert "401" in document["paths"]["/v1/state"]["get"]["responses"]


@pytest.mark.parametrize(("method", "template", "body", "scope"), ROUTES)
async def test_every_route_checks_the_token_and_its_scope(
    served: Served, method: str, template: str, body: dict[str, Any] | None, scope: str
) -> None:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        # Something to read: a fire (entries 1 and 2, transition #1) and a session per caller.
        fired = await client.post(
            "/v1/actions",
            json={"action": "inbox.open-drone", "wait_ms": 1000},
            headers=bearer("admin"),
        )
        assert fired.status_code == 200, fired.text
        for caller in CALLERS:
            session = await client.post("/v1/sessions", headers=bearer("admin"))
            path = template.format(
                transition_id="inbox.open-drone%231",
                session_id=session.json()["id"],
                seq=1,
                run_id="no-such-run",
                name="competitor_deep_dive",
            )
            headers = (
                {}
                if caller is None
                else (
                    {"Authorization": "Bearer wrong-secret-0123456789"}
                    if caller == "wrong"
                    else bearer(caller)
                )
            )
            response = await client.request(method, path, json=body, headers=headers)
            label = f"{method} {path} as {caller}"
            if caller is None:
                assert response.status_code == 401, label
                assert response.headers["www-authenticate"] == 'Bearer realm="assay"'
                assert response.json()["detail"].startswith("this route needs a bearer token")
            elif caller == "wrong":
                assert response.status_code == 401, label
                assert 'error="invalid_token"' in response.headers["www-authenticate"]
            elif caller in (scope, "admin") or _holds(caller, scope):
                assert response.status_code not in (401, 403), (label, response.text)
                assert response.status_code < 500, (label, response.text)
            else:
                assert response.status_code == 403, label
                problem = response.json()
                assert f"lacks the {scope!r} scope" in problem["detail"]
                assert f'scope="{scope}"' in response.headers["www-authenticate"]
            assert response.headers["content-type"].startswith("application/")


def _holds(caller: str, scope: str) -> bool:
    return {"reader": "read", "actor": "act", "reporter": "report"}.get(caller) == scope


async def test_the_timeline_page_needs_the_read_scope(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as client:
        for path in ("/", "/timeline/head"):
            assert (await client.get(path)).status_code == 401
            assert (await client.get(path, headers=bearer("reporter"))).status_code == 403
            assert (await client.get(path, headers=bearer("reader"))).status_code == 200


BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


@pytest.mark.parametrize(
    ("caller", "query", "status", "detail"),
    [
        (
            None,
            "",
            401,
            "this route needs a bearer token: send 'Authorization: Bearer <secret>'",
        ),
        (None, f"?token={SECRETS['reader']}", 401, "this route needs a bearer token"),
        (
            "wrong",
            "",
            401,
            "the bearer token is not one this daemon knows; check the secret you send",
        ),
        (
            "reporter",
            "",
            403,
            "token 'reporter' lacks the 'read' scope that GET / needs",
        ),
    ],
)
async def test_a_browser_refused_the_timeline_is_told_how_to_send_a_token(
    served: Served, caller: str | None, query: str, status: int, detail: str
) -> None:
    # A browser sends no Authorization header when it opens a page: it was shown a 401 in JSON.
    headers = dict(BROWSER)
    if caller == "wrong":
        headers["Authorization"] = "Bearer not-a-secret-of-this-daemon"
    elif caller is not None:
        headers.update(bearer(caller))
    async with httpx.AsyncClient(base_url=served.url) as client:
        page = await client.get("/" + query, headers=headers)
    assert page.status_code == status
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert page.headers["www-authenticate"].startswith('Bearer realm="assay"')
    assert f'<p class="refusal">{detail}' in html.unescape(page.text)
    assert "a browser extension that sets request headers can add" in page.text
    assert (
        f'<pre>curl -H "Authorization: Bearer $SECRET" {served.url}/ -o timeline.html</pre>'
    ) in page.text
    assert "Do not put the token in the address" in page.text
    assert not any(secret in page.text for secret in SECRETS.values())


async def test_programs_are_refused_the_timeline_with_a_problem_as_before(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as client:
        for path, accept in (
            ("/", "*/*"),
            ("/", "application/json"),
            ("/timeline/head", BROWSER["Accept"]),
            ("/", "text/html;q=0"),
        ):
            refused = await client.get(path, headers={"Accept": accept})
            assert refused.status_code == 401
            assert refused.headers["content-type"] == "application/problem+json"


async def test_the_timeline_saved_with_a_token_is_the_whole_page(served: Served) -> None:
    # What docs/http.md gives for a daemon with tokens: curl -H "Authorization: ..." -o FILE.
    async with httpx.AsyncClient(base_url=served.url) as client:
        await client.post(
            "/v1/verify", json={"expression": "true", "timeout_ms": 0}, headers=bearer("reader")
        )
        page = await client.get("/", headers={"Accept": "*/*", **bearer("reader")})
    assert page.status_code == 200
    assert page.text.startswith("<!doctype html>")
    assert '<tr class="verdict" data-seq="1" data-passed="True">' in page.text
    assert " src=" not in page.text and "<link" not in page.text  # nothing else to fetch


async def test_health_and_the_schema_need_no_token(served: Served) -> None:
    async with httpx.AsyncClient(base_url=served.url) as client:
        assert (await client.get("/healthz")).status_code == 200
        assert (await client.get("/openapi.json")).status_code == 200


async def test_secrets_appear_in_no_response_log_or_ledger_entry(
    served: Served, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        for name in SECRETS:
            for method, template, body, _ in ROUTES:
                path = template.format(
                    transition_id="inbox.open-drone%231",
                    session_id="default",
                    seq=1,
                    run_id="no-such-run",
                    name="competitor_deep_dive",
                )
                if method == "DELETE":
                    continue
                response = await client.request(method, path, json=body, headers=bearer(name))
                seen.append(response.text)
                seen.append(str(response.headers))
    exported = io.StringIO()
    export_jsonl(served.host.ledger.backend, exported)
    ledger = exported.getvalue()
    assert served.host.ledger.size > 0
    everything = "\n".join([*seen, caplog.text, ledger])
    for secret in SECRETS.values():
        assert secret not in everything
    assert "secret" not in repr(TOKENS)
