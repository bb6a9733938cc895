"""Every route's 405 lists exactly the methods it serves, and with tokens every route asks
for one (401) before it reads anything else of the request (issue 32, part 7)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from assay.examples.outpost import APPLICATION
from http_daemon import TOKENS, serving

pytestmark = pytest.mark.anyio

METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")
PATH_VALUES = {
    "transition_id": "inbox.send%231",
    "session_id": "default",
    "seq": "1",
    "name": "competitor_deep_dive",
    "run_id": "no-such-run",
}
UNDOCUMENTED = {
    "/": {"GET", "HEAD"},
    "/timeline/head": {"GET", "HEAD"},
    "/openapi.json": {"GET", "HEAD"},
}
"""Routes outside the OpenAPI document: the timeline page, its poll, the document itself
(Starlette routes, which answer HEAD as GET)."""


def _routes(document: dict[str, Any]) -> dict[str, set[str]]:
    """Each route's path (its parameters filled in) and the methods it serves."""
    served = {
        re.sub(r"\{(\w+)\}", lambda found: PATH_VALUES[found[1]], path): {m.upper() for m in ops}
        for path, ops in document["paths"].items()
    }
    return {**served, **UNDOCUMENTED}


async def test_every_routes_405_allows_exactly_the_methods_it_serves() -> None:
    # Starlette listed only the first matching route's methods: GET /v1/sessions and
    # DELETE /v1/sessions/{id} were missing.
    async with (
        serving(APPLICATION) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as client,
    ):
        routes = _routes((await client.get("/openapi.json")).json())
        refused: dict[tuple[str, str], str] = {}
        for path, methods in routes.items():
            for method in sorted(set(METHODS) - methods):
                answer = await client.request(method, path)
                assert answer.status_code == 405, (method, path, answer.text)
                refused[method, path] = answer.headers["allow"]
                if method != "HEAD":
                    assert answer.json()["detail"] == (
                        f"{method} is not allowed on {path}; allowed: {answer.headers['allow']}"
                    )
    assert len(routes) == 23  # 20 paths of 22 operations in the document, and 3 outside it
    for (method, path), allow in refused.items():
        assert allow == ", ".join(sorted(routes[path])), (method, path)
    assert refused["PUT", "/v1/sessions"] == "GET, POST"
    assert refused["POST", "/v1/sessions/default"] == "DELETE, GET"
    print(f"405: {len(refused)} answers over {len(routes)} routes")


async def test_with_tokens_every_route_answers_401_before_reading_the_query_or_body() -> None:
    # An unknown query parameter or a body that is not JSON was answered 400 or 415 first.
    open_routes = {"/healthz", "/openapi.json"}
    async with (
        serving(APPLICATION, tokens=TOKENS) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as client,
    ):
        routes = _routes((await client.get("/openapi.json")).json())
        answers: dict[tuple[str, str, str], int] = {}
        for path, methods in routes.items():
            if path in open_routes:
                continue
            for method in sorted(methods - {"HEAD"}):
                for what, request in {
                    "unknown query parameter": {"params": {"wait_sm": "100"}},
                    "body not JSON": {
                        "content": b"{not json",
                        "headers": {"Content-Type": "application/json"},
                    },
                    "body not sent as JSON": {
                        "content": b"<a/>",
                        "headers": {"Content-Type": "text/xml"},
                    },
                    "unknown token": {
                        "params": {"wait_sm": "100"},
                        "content": b"{not json",
                        "headers": {"Authorization": "Bearer not-a-known-secret-at-all"},
                    },
                }.items():
                    answer = await client.request(method, path, **request)  # type: ignore[arg-type]
                    answers[method, path, what] = answer.status_code
                    assert answer.headers["www-authenticate"].startswith('Bearer realm="assay"')
    assert set(answers.values()) == {401}, {k: v for k, v in answers.items() if v != 401}
    assert len(answers) == 4 * 23  # 21 operations of the document (not healthz), 2 timeline
    print(f"401 first: {len(answers)} answers over {len(answers) // 4} operations")
