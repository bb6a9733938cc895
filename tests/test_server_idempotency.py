"""``Idempotency-Key`` over HTTP: concurrent retries fire once and all get the first answer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from assay.examples.outpost import APPLICATION, Outpost, outpost_connector
from assay.host import Application
from http_daemon import TOKENS, Served, bearer, serving

pytestmark = pytest.mark.anyio


@pytest.fixture
def outpost() -> Outpost:
    return Outpost(delivery_delay=0.05)


@pytest.fixture
async def served(outpost: Outpost) -> AsyncIterator[Served]:
    application = Application(APPLICATION.graph, start="inbox", connect=outpost_connector(outpost))
    async with serving(application, tokens=TOKENS) as served:
        yield served


async def test_concurrent_retries_with_one_key_fire_once_and_answer_alike(
    served: Served, outpost: Outpost
) -> None:
    fire = {"action": "inbox.send", "args": {"message_id": "once", "to": "ops"}, "wait_ms": 5000}
    headers = {**bearer("actor"), "Idempotency-Key": "send-once"}
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        retries = await asyncio.gather(
            *(client.post("/v1/actions", json=fire, headers=headers) for _ in range(16))
        )
        later = await client.post("/v1/actions", json=fire, headers=headers)
    assert {r.status_code for r in [*retries, later]} == {200}
    assert len({r.content for r in [*retries, later]}) == 1
    assert retries[0].json()["answer"] == "worked"
    fires = served.host.ledger.query(kind="fire")
    assert [e.transition for e in fires] == ["inbox.send#1"]
    assert len(served.host.ledger.query(kind="settlement")) == 1
    assert outpost.state["inbox"]["sent_count"] == 15


async def test_a_failed_answer_is_replayed_with_its_status(served: Served) -> None:
    fire = {"action": "inbox.mark-all-read", "wait_ms": 5000, "verify_timeout_ms": 50}
    headers = {**bearer("actor"), "Idempotency-Key": "read-all"}
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        first, second = await asyncio.gather(
            *(client.post("/v1/actions", json=fire, headers=headers) for _ in range(2))
        )
    assert (first.status_code, second.status_code) == (422, 422)
    assert first.content == second.content
    assert len(served.host.ledger.query(kind="fire")) == 1


async def test_a_key_is_per_token_and_refuses_a_different_request(served: Served) -> None:
    fire = {"action": "inbox.send", "args": {"message_id": "k", "to": "ops"}, "wait_ms": 5000}
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        mine = await client.post(
            "/v1/actions", json=fire, headers={**bearer("actor"), "Idempotency-Key": "k"}
        )
        other = {**fire, "source": "someone"}
        reused = await client.post(
            "/v1/actions", json=other, headers={**bearer("actor"), "Idempotency-Key": "k"}
        )
        theirs = await client.post(
            "/v1/actions", json=fire, headers={**bearer("admin"), "Idempotency-Key": "k"}
        )
        empty = await client.post(
            "/v1/actions", json=fire, headers={**bearer("actor"), "Idempotency-Key": ""}
        )
    assert mine.status_code == 200
    assert reused.status_code == 400
    problem = reused.json()
    assert problem["type"] == "urn:assay:problem:idempotency-key-reused"
    assert problem["field"] == "Idempotency-Key"
    assert "use a new key for a new request" in problem["detail"]
    assert theirs.status_code == 200
    assert theirs.json()["transition_id"] != mine.json()["transition_id"]
    assert empty.status_code == 400
    assert empty.json()["errors"][0]["field"] == "header.Idempotency-Key"


async def test_a_retry_naming_the_default_session_or_waiting_longer_is_the_same_request(
    served: Served,
) -> None:
    fire = {"action": "inbox.send", "args": {"message_id": "same", "to": "ops"}}
    headers = {**bearer("actor"), "Idempotency-Key": "same-request"}
    default = served.host.default_session
    retries = [
        {"session": "default"},
        {"session": default},
        {"wait_ms": 200},
        {"session": "default", "wait_ms": 5000},
    ]
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        first = await client.post("/v1/actions", json=fire, headers=headers)
        again = [
            await client.post("/v1/actions", json={**fire, **retry}, headers=headers)
            for retry in retries
        ]
        other = await client.post(
            "/v1/actions", json={**fire, "session": "elsewhere"}, headers=headers
        )
    assert first.status_code == 200, first.text
    assert [r.status_code for r in again] == [200] * len(retries)
    assert {r.content for r in again} == {first.content}  # the first answer, pending as it was
    assert first.json()["session"] == default
    assert len(served.host.ledger.query(kind="fire")) == 1
    assert other.status_code == 400
    assert other.json()["type"] == "urn:assay:problem:idempotency-key-reused"


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("ключ".encode().decode("latin-1"), "this one holds other characters; send a key of "
         "ASCII characters only"),
        ("", "got an empty one"),
        ("k" * 256, "got 256 characters"),
    ],
)  # fmt: skip
async def test_an_idempotency_key_that_is_not_visible_ascii_is_refused_saying_so(
    served: Served, key: str, why: str
) -> None:
    fire = {"action": "inbox.send", "args": {"message_id": "key", "to": "ops"}}
    headers = [*bearer("actor").items(), ("Idempotency-Key", key.encode("latin-1"))]
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
        refused = await client.post("/v1/actions", json=fire, headers=headers)
    assert refused.status_code == 400
    (error,) = refused.json()["errors"]
    assert error == {
        "field": "header.Idempotency-Key",
        "message": "an Idempotency-Key is 1 to 255 visible ASCII characters (letters, digits, "
        f"punctuation and spaces between them, such as a UUID); {why}",
        "type": "idempotency_key",
    }
    assert served.host.ledger.query(kind="fire") == []
