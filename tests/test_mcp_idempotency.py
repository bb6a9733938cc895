"""``fire``'s idempotency key over MCP and HTTP: a retry, also one after a restart on the same
SQLite ledger, answers the first fire and fires nothing; and a wait's first progress names
the transition, so a client whose wait is cancelled can still ask about it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from assay.host import Host
from assay.host.wire import MAX_WAIT_MS, ReportRequest
from assay.ledger import Ledger, MemoryBackend, open_ledger
from assay.mcp import build_server
from assay.mcp.http import StreamableHttpEndpoint
from http_daemon import TOKENS, bearer, serving
from mcp_apps import ARMED, panel_application

pytestmark = pytest.mark.anyio

ARM = {"action": "panel.arm", "args": {"zone": 2}, "wait_ms": 0, "idempotency_key": "arm-2"}


@asynccontextmanager
async def mcp_client(host: Host, transport: str) -> AsyncIterator[Client]:
    """An SDK client of ``host``'s MCP server: in memory, or over streamable HTTP."""
    if transport == "memory":
        async with Client(build_server(host)) as client:
            yield client
        return
    async with StreamableHttpEndpoint(build_server(host)) as served, Client(served.url) as client:
        yield client


def _fired(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert result.structured_content is not None
    answered: dict[str, Any] = result.structured_content
    return answered


def _text(result: Any) -> str:
    assert result.is_error, result.structured_content
    (block,) = result.content
    return str(block.text)


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_a_retry_with_the_key_answers_the_first_fire(transport: str) -> None:
    async with Host(panel_application(), Ledger(MemoryBackend())) as host:
        async with mcp_client(host, transport) as client:
            first = _fired(await client.call_tool("fire", ARM))
            host.report(ReportRequest(values={"system.armed": True}))
            retry = _fired(await client.call_tool("fire", {**ARM, "wait_ms": 5000}))
            other = await client.call_tool("fire", {**ARM, "args": {"zone": 3}})
            bad = await client.call_tool("fire", {**ARM, "idempotency_key": "tab\there"})
        fires = host.ledger.query(kind="fire")
    assert (first["transition_id"], first["answer"]) == ("panel.arm#1", "pending")
    assert (retry["transition_id"], retry["answer"]) == ("panel.arm#1", "pending")
    assert _text(other) == (
        "the Idempotency-Key 'arm-2' was first used for a different request; "
        "use a new key for a new request"
    )
    assert _text(bad) == (
        "idempotency_key: an Idempotency-Key is 1 to 255 visible ASCII characters (letters, "
        "digits, punctuation and spaces between them, such as a UUID); this one holds a "
        "control character"
    )
    assert [(e.transition, e.body["idempotency"]["key"]) for e in fires] == [
        ("panel.arm#1", "arm-2")
    ]


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_a_retry_after_a_restart_answers_the_first_fire_from_the_ledger(
    tmp_path: Path, transport: str
) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with open_ledger(url) as ledger:
        async with Host(panel_application(), ledger) as host:
            async with mcp_client(host, transport) as client:
                first = _fired(await client.call_tool("fire", ARM))
                host.report(ReportRequest(values={"system.armed": True}))
                settled = _fired(
                    await client.call_tool(
                        "did_it_work", {"transition_id": first["transition_id"], "wait_ms": 5000}
                    )
                )
            before = host.default_session
    assert settled["answer"] == "worked"
    with open_ledger(url) as ledger:
        async with Host(panel_application(), ledger) as host:
            async with mcp_client(host, transport) as client:
                retry = _fired(await client.call_tool("fire", {**ARM, "wait_ms": 5000}))
                again = _fired(await client.call_tool("fire", ARM))  # now from memory
                other = await client.call_tool("fire", {**ARM, "args": {"zone": 3}})
                fresh = _fired(await client.call_tool("fire", {**ARM, "idempotency_key": "new"}))
            after = host.default_session
            fires = [(e.session, e.transition) for e in ledger.query(kind="fire")]
    assert after != before
    assert retry == again
    assert (retry["session"], retry["transition_id"]) == (before, first["transition_id"])
    assert (retry["answer"], retry["effect_status"], retry["success"]) == (
        "worked",
        "settled",
        True,
    )
    assert retry["did"] == "panel.arm"
    assert retry["verification"]["passed"] is True
    assert "different request" in _text(other)
    assert fresh["session"] == after
    assert fires == [(before, "panel.arm#1"), (after, "panel.arm#1")]


async def test_an_http_retry_after_a_restart_answers_the_first_fire(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    fire = {"action": "panel.arm", "args": {"zone": 1}, "wait_ms": 0}
    headers = {**bearer("actor"), "Idempotency-Key": "arm-1"}
    with open_ledger(url) as ledger:
        async with (
            serving(panel_application(), tokens=TOKENS, ledger=ledger) as served,
            httpx.AsyncClient(base_url=served.url, timeout=30) as client,
        ):
            first = await client.post("/v1/actions", json=fire, headers=headers)
    assert (first.status_code, first.json()["answer"]) == (200, "pending")
    with open_ledger(url) as ledger:
        async with serving(panel_application(), tokens=TOKENS, ledger=ledger) as served:
            async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
                retry = await client.post("/v1/actions", json=fire, headers=headers)
                theirs = await client.post(
                    "/v1/actions",
                    json=fire,
                    headers={**bearer("admin"), "Idempotency-Key": "arm-1"},
                )
                reused = await client.post(
                    "/v1/actions", json={**fire, "args": {"zone": 2}}, headers=headers
                )
            fires = [e.transition for e in ledger.query(kind="fire")]
    assert retry.status_code == 200
    assert retry.json()["transition_id"] == first.json()["transition_id"] == "panel.arm#1"
    assert retry.json()["session"] == first.json()["session"]
    # Stopped while pending, its session closed: the ledger says it was unobservable.
    assert retry.json()["answer"] == "unobservable"
    assert reused.status_code == 400
    assert reused.json()["type"] == "urn:assay:problem:idempotency-key-reused"
    assert theirs.json()["session"] != first.json()["session"]  # a key is per token
    assert fires == ["panel.arm#1", "panel.arm#1"]


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_a_cancelled_wait_can_be_asked_about_by_the_id_of_its_first_notification(
    transport: str,
) -> None:
    async with (
        Host(panel_application(), Ledger(MemoryBackend())) as host,
        mcp_client(host, transport) as client,
    ):
        told: list[str] = []
        notified = anyio.Event()

        async def progress(done: float, total: float | None, message: str | None) -> None:
            told.append(f"{done:g}/{total:g}: {message}")
            notified.set()

        async def fire() -> None:
            arguments = {"action": "panel.arm", "wait_ms": MAX_WAIT_MS}
            await client.call_tool("fire", arguments, progress_callback=progress)

        with anyio.fail_after(20):
            async with anyio.create_task_group() as group:
                group.start_soon(fire)
                await notified.wait()
                group.cancel_scope.cancel()
        (first,) = told
        transition_id = first.removesuffix(")").rpartition("(transition ")[2]
        host.report(ReportRequest(values={"system.armed": True}))
        asked = _fired(
            await client.call_tool("did_it_work", {"transition_id": transition_id, "wait_ms": 5000})
        )
    assert first == (
        f"0/{MAX_WAIT_MS}: waiting on the verify contract {ARMED} to hold (transition panel.arm#1)"
    )
    assert (asked["transition_id"], asked["answer"]) == ("panel.arm#1", "worked")
