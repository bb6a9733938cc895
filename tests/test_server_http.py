"""The daemon's routes through a real uvicorn server on a loopback port, with httpx.

The application is the built-in outpost (a real HTTP application on its own loopback port)
with short delays, so fires settle, fail and are refused for real.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from assay.examples.outpost import APPLICATION, Outpost, outpost_connector
from assay.graph.answers import FROM_EVIDENCE
from assay.host import Application
from assay.ledger import Ledger, SQLiteBackend
from assay.ledger.proof import ConsistencyProof, InclusionProof
from assay.server import create_app
from http_daemon import TOKENS, bearer, serving
from test_timeline_check import alter

pytestmark = pytest.mark.anyio

PROBLEM = "application/problem+json"


def _outpost(outpost: Outpost) -> Application:
    return Application(APPLICATION.graph, start="inbox", connect=outpost_connector(outpost))


@pytest.fixture
def outpost() -> Outpost:
    return Outpost(delivery_delay=0.05, mode_delay=0.05, release_delay=0.05, mode="GUIDED")


@pytest.fixture
async def client(outpost: Outpost) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serving(_outpost(outpost)) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as http,
    ):
        yield http


def _problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == PROBLEM
    body: dict[str, Any] = response.json()
    assert body["status"] == status
    assert body["type"] == (f"urn:assay:problem:{code}" if code else "about:blank")
    assert body["title"] and body["detail"]
    assert body["instance"] == response.request.url.raw_path.decode().partition("?")[0]
    return body


async def test_a_fire_that_works_answers_200_with_its_verification(
    client: httpx.AsyncClient,
) -> None:
    fire = {"action": "inbox.send", "args": {"message_id": "m1", "to": "ops"}, "wait_ms": 5000}
    response = await client.post("/v1/actions", json=fire)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert (body["executed"], body["success"], body["answer"]) == (True, True, "worked")
    assert body["transition_id"] == "inbox.send#1"
    assert body["verification"]["passed"] is True
    answer = await client.get("/v1/transitions/inbox.send%231", params={"session": "default"})
    assert answer.json()["answer"] == "worked"
    entries = await client.get("/v1/ledger/entries", params={"transition": "inbox.send#1"})
    assert [e["kind"] for e in entries.json()] == ["fire", "settlement"]


async def test_a_fire_with_its_own_expression_echoes_each_contract_as_written(
    client: httpx.AsyncClient,
) -> None:
    # The echo was '({...}) && (expr)': neither an expression nor a declarative contract.
    fire = {
        "action": "inbox.send",
        "args": {"message_id": "m1", "to": "ops"},
        "verify_expression": "inbox.sent_count >= 1",
        "wait_ms": 5000,
    }
    response = await client.post("/v1/actions", json=fire)
    assert response.status_code == 200, response.text
    echoed = (
        '{"inbox.sent.{message_id}.status":{"eq":"sent"}} (declared) and '
        "inbox.sent_count >= 1 (given with the fire)"
    )
    assert response.json()["verification"]["expression"] == echoed
    entries = await client.get("/v1/ledger/entries", params={"transition": "inbox.send#1"})
    (fired,) = [e for e in entries.json() if e["kind"] == "fire"]
    assert fired["body"]["contract"] == echoed


async def test_a_pending_fire_is_200_and_its_transition_can_be_waited_on(
    client: httpx.AsyncClient,
) -> None:
    fire = {"action": "inbox.send", "args": {"message_id": "m2", "to": "ops"}}
    body = (await client.post("/v1/actions", json=fire)).json()
    assert (body["effect_status"], body["success"], body["answer"]) == ("pending", None, "pending")
    assert body["waiting_on"]
    path = f"/v1/transitions/{body['transition_id'].replace('#', '%23')}"
    settled = await client.get(path, params={"wait_ms": 5000})
    assert settled.status_code == 200
    assert settled.json()["answer"] == "worked"


async def test_a_silent_no_op_is_422_with_the_whole_response_and_executed_true(
    client: httpx.AsyncClient,
) -> None:
    fire = {"action": "inbox.mark-all-read", "wait_ms": 5000, "verify_timeout_ms": 200}
    body = _problem(await client.post("/v1/actions", json=fire), 422, "verification-failed")
    assert (body["executed"], body["success"], body["effect_status"]) == (True, False, "failed")
    assert body["verification"]["passed"] is False
    assert "inbox.unread remained 3" in body["verification"]["narrative"]
    assert body["detail"].startswith("inbox.unread remained 3")


async def test_refusals_are_409_naming_the_reason_and_the_figures(
    client: httpx.AsyncClient, outpost: Outpost
) -> None:
    elsewhere = await client.post("/v1/actions", json={"action": "drone.set-mode", "args": {}})
    body = _problem(elsewhere, 409, "not-available-here")
    assert body["refusal"] == "not_available_here"
    assert body["refusal_figures"]["node"] == "inbox"
    assert body["refusal_figures"]["available_at"] == ["drone"]
    assert body["executed"] is False

    drone = (await client.post("/v1/sessions", json={"node": "drone"})).json()["id"]
    first = await client.post(
        "/v1/actions", json={"action": "drone.release-payload", "session": drone}
    )
    assert first.status_code == 200
    holder = first.json()["transition_id"]
    again = await client.post(
        "/v1/actions", json={"action": "drone.release-payload", "session": drone}
    )
    body = _problem(again, 409, "single-flight")
    assert body["refusal_figures"]["holder"] == holder
    assert holder in body["detail"]

    outpost.link = "down"
    await _until(client, lambda state: state["confidence"]["value"] < 0.95)
    low = await client.post(
        "/v1/actions", json={"action": "drone.release-payload", "session": drone}
    )
    if low.json().get("refusal") == "single_flight":  # the first release has not settled yet
        await client.get(
            f"/v1/transitions/{holder.replace('#', '%23')}?session={drone}&wait_ms=5000"
        )
        low = await client.post(
            "/v1/actions", json={"action": "drone.release-payload", "session": drone}
        )
    body = _problem(low, 409, "low-confidence")
    figures = body["refusal_figures"]
    assert figures["threshold"] == 0.95
    assert figures["confidence"] < 0.95
    assert figures["reversibility"] == "irreversible"
    assert "below the 0.95" in body["detail"]


async def test_bad_input_is_400_and_says_where(client: httpx.AsyncClient) -> None:
    typo = await client.post("/v1/actions", json={"acton": "inbox.send"})
    body = _problem(typo, 400, "invalid-request")
    assert {e["field"] for e in body["errors"]} == {"body.action", "body.acton"}

    syntax = await client.post("/v1/verify", json={"expression": "inbox.unread >= "})
    body = _problem(syntax, 400, "expression-syntax")
    assert body["position"] == 16
    assert body["caret"] == "inbox.unread >= \n                ^"

    contract = await client.post("/v1/verify", json={"expression": {"inbox.unread": {"zz": 1}}})
    assert _problem(contract, 400, "contract")["key"] == "inbox.unread"

    arguments = await client.post("/v1/actions", json={"action": "inbox.send", "args": {}})
    body = _problem(arguments, 400, "bad-arguments")
    assert body["refusal"] == "bad_arguments"
    assert "message_id" in body["detail"]

    not_json = await client.post(
        "/v1/verify", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert _problem(not_json, 400, "invalid-request")["errors"][0]["type"] == "json_invalid"
    not_json = await client.post(  # parsed by FastAPI, where /v1/verify's is by pydantic
        "/v1/actions", content=b"{nope", headers={"content-type": "application/json"}
    )
    assert _problem(not_json, 400, "invalid-request")["errors"][0] == {
        "field": "body.1",
        "message": "JSON decode error: Expecting property name enclosed in double quotes",
        "type": "json_invalid",
    }
    deep = b'{"values": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    too_deep = await client.post(
        "/v1/state/reports", content=deep, headers={"content-type": "application/json"}
    )
    assert _problem(too_deep, 400, "invalid-request")["errors"][0] == {
        "field": "body.0",
        "message": "JSON decode error: it nests too deeply to read (JSON nested hundreds of "
        "levels deep); send a flatter body",
        "type": "json_invalid",
    }

    report = await client.post("/v1/state/reports", json={"values": {"a": 1, "a.b": 2}})
    assert _problem(report, 400, "state")["conflict"] == "a.b"

    wait = await client.get("/v1/transitions/x", params={"wait_ms": -1})
    assert _problem(wait, 400, "invalid-request")["errors"][0]["field"] == "query.wait_ms"


HALF_PAIR = (
    "a string holds half of a surrogate pair, such as \\ud800 alone, which is not Unicode "
    "text; send each character whole or as a full surrogate pair"
)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/state/reports", b'{"values": {"inbox.unread": "%s"}}'),
        ("/v1/actions", b'{"action": "inbox.send", "args": {"message_id": "%s"}}'),
        ("/v1/sessions", b'{"node": "%s"}'),
        ("/v1/verify", b'{"expression": "inbox.unread == \'%s\'"}'),  # the hot path
    ],
)
@pytest.mark.parametrize("half", [b"\\ud800", b"\\uDC00", b"\\ud83d\\u0041"])
async def test_half_a_surrogate_pair_is_refused_where_the_body_is_parsed(
    client: httpx.AsyncClient, path: str, body: bytes, half: bytes
) -> None:
    # JSON.stringify writes a string cut between the halves of a pair as "\\ud800"; let in,
    # it would make every answer that includes it fail to encode.
    refused = await client.post(
        path, content=body % half, headers={"content-type": "application/json"}
    )
    (error,) = _problem(refused, 400, "invalid-request")["errors"]
    assert (error["type"], error["field"].split(".")[0]) == ("json_invalid", "body")
    assert HALF_PAIR in error["message"]
    state = await client.get("/v1/state")
    assert state.status_code == 200, state.text
    assert state.json()["objects"]["inbox"]["unread"] == 3
    whole = body % b"\\ud83d\\ude00"  # a whole pair is one character: read, then judged
    judged = await client.post(path, content=whole, headers={"content-type": "application/json"})
    assert "json_invalid" not in judged.text
    assert judged.status_code < 500


async def test_unknown_things_are_404_and_wrong_methods_405(client: httpx.AsyncClient) -> None:
    unknown = await client.post("/v1/actions", json={"action": "attic.open"})
    assert _problem(unknown, 404, "unknown-action")["refusal"] == "unknown_action"
    session = _problem(await client.get("/v1/sessions/nope"), 404, "not-found")
    assert (session["kind"], session["id"]) == ("session", "nope")
    transition = _problem(await client.get("/v1/transitions/inbox.send%239"), 404, "not-found")
    assert transition["kind"] == "transition"
    empty = _problem(await client.get("/v1/ledger/entries/999"), 404, "not-found")
    assert (empty["kind"], empty["detail"]) == ("entry", "the ledger has no entry 999; it is empty")
    assert _problem(await client.get("/nowhere"), 404, "")["detail"].startswith("no route is")
    method = await client.put("/v1/verify")
    assert _problem(method, 405, "")["detail"] == "PUT is not allowed on /v1/verify; allowed: POST"
    assert method.headers["allow"] == "POST"


async def test_verify_is_200_when_it_holds_and_422_with_the_outcome_when_not(
    client: httpx.AsyncClient,
) -> None:
    held = await client.post("/v1/verify", json={"expression": "inbox.unread === 3"})
    assert held.status_code == 200
    assert held.json()["passed"] is True
    failed = await client.post(
        "/v1/verify", json={"expression": {"inbox.unread": 0}, "timeout_ms": 50}
    )
    body = _problem(failed, 422, "verification-failed")
    assert (body["passed"], body["result"]) == (False, False)
    assert body["detail"] == body["narrative"]
    verdicts = (await client.get("/v1/ledger/entries", params={"kind": "verdict"})).json()
    assert [v["body"]["outcome"]["passed"] for v in verdicts] == [True, False]


async def test_sessions_open_list_describe_and_close(client: httpx.AsyncClient) -> None:
    opened = await client.post("/v1/sessions", json={"node": "drone"})
    assert opened.status_code == 200
    info = opened.json()
    assert (info["app"], info["node"], info["transitions"]) == ("outpost", "drone", 0)
    default = (await client.post("/v1/sessions")).json()
    assert default["node"] == "inbox"
    listed = [s["id"] for s in (await client.get("/v1/sessions")).json()]
    # The default session has an id of its own ("default" names it in requests).
    assert listed[0].startswith("outpost-")
    assert listed[1:] == [info["id"], default["id"]]
    paged = await client.get("/v1/sessions", params={"after": listed[0], "limit": 1})
    assert [s["id"] for s in paged.json()] == [info["id"]]
    for query, status in (({"limit": 0}, 400), ({"limit": 1001}, 400), ({"after": "x"}, 404)):
        refused = await client.get("/v1/sessions", params=query)
        assert refused.status_code == status, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
    aliased = (await client.get("/v1/sessions/default")).json()
    assert aliased["id"] == listed[0]
    actions = (await client.get(f"/v1/sessions/{info['id']}/actions")).json()
    assert [a["id"] for a in actions["actions"]] == [
        "drone.set-mode",
        "drone.release-payload",
        "drone.open-inbox",
    ]
    assert actions["actions"][1]["threshold"] == 0.95
    closed = await client.delete(f"/v1/sessions/{info['id']}")
    assert closed.json()["id"] == info["id"]
    _problem(await client.get(f"/v1/sessions/{info['id']}"), 404, "not-found")
    _problem(await client.delete("/v1/sessions/default"), 400, "bad-request")
    _problem(await client.post("/v1/sessions", json={"node": "attic"}), 400, "bad-request")


async def test_closing_a_session_settles_its_pending_fires_in_the_ledger(
    client: httpx.AsyncClient,
) -> None:
    session = (await client.post("/v1/sessions")).json()["id"]
    # Marking all read silently does nothing in the outpost: it stays pending for seconds.
    fired = await client.post(
        "/v1/actions", json={"action": "inbox.mark-all-read", "session": session, "wait_ms": 0}
    )
    assert fired.json()["answer"] == "pending"
    closed = await client.delete(f"/v1/sessions/{session}")
    assert (closed.status_code, closed.json()["pending"]) == (200, 1)  # as it was when closed

    # Answered from the ledger, though the session is gone (it was a 404).
    asked = await client.get("/v1/transitions/inbox.mark-all-read%231", params={"session": session})
    assert asked.status_code == 200, asked.text
    answer = asked.json()
    assert (answer["session"], answer["answer"]) == (session, "unobservable")
    assert answer["why"] == answer["error"] + FROM_EVIDENCE
    # A transition the ledger does not know stays a 404 that says where to look.
    never_fired = await client.get(
        "/v1/transitions/inbox.mark-all-read%232", params={"session": session}
    )
    assert _problem(never_fired, 404, "not-found")["detail"] == (
        f"the session {session!r} was closed; what it fired and how each settled is in the "
        f"ledger (GET /v1/ledger/entries?session={session})"
    )
    never = _problem(await client.get("/v1/sessions/desk-0"), 404, "not-found")
    assert never["detail"].startswith("no session is called 'desk-0'; open one with")
    entries = (await client.get("/v1/ledger/entries", params={"session": session})).json()
    assert [e["kind"] for e in entries] == ["fire", "settlement"]
    settled = entries[1]["body"]
    assert settled["answer"] == "unobservable"
    # Its handler (a loopback request to the outpost) may still run when the session closes.
    waited = settled["error"].removeprefix("the session was closed while it waited on ")
    assert waited.removeprefix("the handler to finish and ").startswith(
        'the verify contract {"inbox.unread":{"eq":0}} to hold ('
    )


async def test_state_selects_keys_and_reports_merge(client: httpx.AsyncClient) -> None:
    state = await client.get("/v1/state", params={"keys": ["inbox.unread", "drone.mode"]})
    body = state.json()
    assert body["objects"]["inbox"] == {"unread": 3}
    assert set(body["confidence"]) == {"value", "freshness", "coverage", "health"}
    receipt = await client.post("/v1/state/reports", json={"values": {"desk.lamp": "on"}})
    assert receipt.json()["changed"] is True
    again = await client.post("/v1/state/reports", json={"values": {"desk.lamp": "on"}})
    assert again.json() == {"changed": False, "version": receipt.json()["version"]}
    lamp = await client.get("/v1/state", params={"keys": "desk.lamp"})
    assert lamp.json()["objects"] == {"desk": {"lamp": "on"}}


async def test_ledger_reads_and_proofs_check_out(client: httpx.AsyncClient) -> None:
    for index in range(3):
        await client.post("/v1/verify", json={"expression": f"inbox.unread >= {index}"})
    head = (await client.get("/v1/ledger/head")).json()
    assert head["size"] == 3
    page = (await client.get("/v1/ledger/entries", params={"after": 1, "limit": 1})).json()
    assert [e["seq"] for e in page] == [2]
    entry = (await client.get("/v1/ledger/entries/2")).json()
    assert entry == page[0]
    proof = (await client.get("/v1/ledger/proofs/inclusion/2")).json()
    InclusionProof(**{**proof, "path": tuple(proof["path"])}).verify()
    assert proof["root"] == head["root"]
    older = (await client.get("/v1/ledger/proofs/consistency", params={"old": 1})).json()
    ConsistencyProof(**{**older, "path": tuple(older["path"])}).verify()
    beyond = _problem(await client.get("/v1/ledger/proofs/inclusion/4"), 404, "not-found")
    assert beyond["detail"] == "the ledger has no entry 4; it holds entries 1 to 3"
    huge = _problem(await client.get(f"/v1/ledger/entries/{2**70}"), 404, "not-found")
    assert huge["detail"] == f"the ledger has no entry {2**70}; it holds entries 1 to 3"
    assert (await client.get("/v1/ledger/entries", params={"after": 2**70})).json() == []
    too_big = await client.get("/v1/ledger/proofs/consistency", params={"old": 1, "new": 9})
    assert _problem(too_big, 400, "bad-request")["detail"] == (
        "new must be between old (1) and the tree's size (3), not 9; leave new out for the "
        "current tree"
    )
    report = (await client.get("/v1/ledger/verify")).json()
    assert (report["size"], report["problem"]) == (3, None)


async def test_the_openapi_document_declares_problem_json_errors(
    client: httpx.AsyncClient,
) -> None:
    document = (await client.get("/openapi.json")).json()
    assert "HTTPValidationError" not in document["components"]["schemas"]
    assert "securitySchemes" not in document["components"]  # no tokens: no auth
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if path == "/healthz":
                continue
            responses = operation["responses"]
            assert {"400", "503"} <= set(responses), (method, path)
            assert "401" not in responses
            for status, response in responses.items():
                media = "application/json" if status == "200" else PROBLEM
                assert list(response["content"]) == [media], (method, path, status)
    fire = document["paths"]["/v1/actions"]["post"]["responses"]
    assert fire["422"]["content"][PROBLEM]["schema"]["$ref"].endswith("/ActionProblem")
    assert (await client.get("/healthz")).json()["status"] == "ok"


async def _until(
    client: httpx.AsyncClient, condition: Callable[[dict[str, Any]], bool], timeout: float = 10
) -> None:
    """Wait for the real application to reach a state by itself (its probe reads)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition((await client.get("/v1/state")).json()):
        assert loop.time() < deadline, "the state did not come about in time"
        await asyncio.sleep(0.05)


async def test_verify_answers_alike_ahead_of_the_router_and_through_it(outpost: Outpost) -> None:
    # The daemon answers POST /v1/verify before FastAPI's router sees it; the route declared
    # in the router must give the very same answers, errors and scopes included.
    requests: list[tuple[dict[str, Any], dict[str, str], str]] = [
        ({"expression": "inbox.unread === 3", "timeout_ms": 0}, bearer("reader"), ""),
        ({"expression": "inbox.unread === 0", "timeout_ms": 0}, bearer("admin"), ""),
        ({"expression": "inbox.unread >= "}, bearer("reader"), ""),
        ({"expression": "true", "timing_ms": 0}, bearer("reader"), ""),
        ({"expression": "true"}, bearer("reader"), "?wait=1"),
        ({"expression": "true"}, {}, ""),
        ({"expression": "true"}, bearer("actor"), ""),
        ({"expression": "true", "session": "nope"}, bearer("reader"), ""),
    ]
    async with serving(_outpost(outpost)) as served:
        daemon = create_app(served.host, tokens=TOKENS)

        async def router_only(scope: Any, receive: Any, send: Any) -> None:
            await FastAPI.__call__(daemon, scope, receive, send)

        answers: list[list[tuple[int, str, Any]]] = []
        for app in (daemon, router_only):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
                seen = []
                for body, headers, query in requests:
                    response = await http.post(f"/v1/verify{query}", json=body, headers=headers)
                    seen.append(
                        (response.status_code, response.headers["content-type"], response.json())
                    )
                answers.append(seen)
        hot, routed = answers
        assert hot == routed
        assert [status for status, _, _ in hot] == [200, 422, 400, 400, 400, 401, 403, 404]
        assert hot[0][1] == "application/json"
        assert all(kind == PROBLEM for _, kind, _ in hot[1:])


async def test_ledger_entries_are_filtered_by_time(client: httpx.AsyncClient) -> None:
    for index in range(3):
        await client.post("/v1/verify", json={"expression": f"inbox.unread >= {index}"})
    verdicts = (await client.get("/v1/ledger/entries", params={"kind": "verdict"})).json()
    assert len(verdicts) == 3
    middle = verdicts[1]["timestamp"]
    assert middle > verdicts[0]["timestamp"]  # microsecond stamps, appended in order
    since = await client.get("/v1/ledger/entries", params={"kind": "verdict", "since": middle})
    assert [e["seq"] for e in since.json()] == [v["seq"] for v in verdicts[1:]]
    until = await client.get("/v1/ledger/entries", params={"kind": "verdict", "until": middle})
    assert [e["seq"] for e in until.json()] == [verdicts[0]["seq"]]
    offset = middle.replace("Z", "+00:00")
    same = await client.get("/v1/ledger/entries", params={"kind": "verdict", "since": offset})
    assert same.json() == since.json()
    naive = await client.get("/v1/ledger/entries", params={"since": "2026-01-01T00:00:00"})
    assert _problem(naive, 400, "bad-request")["field"] == "since"
    garbled = await client.get("/v1/ledger/entries", params={"until": "yesterday"})
    body = _problem(garbled, 400, "bad-request")
    assert body["field"] == "until"
    assert "RFC 3339" in body["detail"]


async def test_bodies_over_the_limit_are_413_and_change_nothing(outpost: Outpost) -> None:
    async with (
        serving(_outpost(outpost), max_body_bytes=1000) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as http,
    ):
        padding = "x" * 1000
        verify = await http.post("/v1/verify", json={"expression": f"'{padding}' !== ''"})
        body = _problem(verify, 413, "")
        assert body["title"] == "Request too large"
        assert "1,000 bytes" in body["detail"]
        report = await http.post("/v1/state/reports", json={"values": {"note": padding}})
        assert "1,000 bytes" in _problem(report, 413, "")["detail"]
        assert (await http.get("/v1/state", params={"keys": "note"})).json()["objects"] == {}
        assert served.host.ledger.size == 0
        fits = await http.post("/v1/verify", json={"expression": "inbox.unread === 3"})
        assert fits.status_code == 200
        assert served.host.ledger.size == 1


async def test_a_ledger_that_fails_is_503_and_once_evidence_stops_no_retry_is_offered(
    outpost: Outpost, tmp_path: Path
) -> None:
    backend = SQLiteBackend(tmp_path / "ledger.db")
    async with (
        serving(_outpost(outpost), ledger=Ledger(backend)) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as http,
    ):
        sent = {"action": "inbox.mark-all-read", "wait_ms": 0}
        assert (await http.post("/v1/actions", json=sent)).status_code == 200
        backend.close()
        read = await http.get("/v1/ledger/entries/1")
        body = _problem(read, 503, "ledger-unavailable")
        assert read.headers["retry-after"] == "1"  # a read may work again
        assert body["detail"].endswith("nothing was acknowledged, so retry once the ledger is back")
        assert (await http.get("/healthz")).status_code == 200  # a read failing stops nothing
        for _ in range(2):  # the store that fails, then the fire refused before it runs
            fired = await http.post("/v1/actions", json=sent)
            body = _problem(fired, 503, "ledger-unavailable")
            assert "retry-after" not in fired.headers
            assert body["detail"].endswith(
                "restart once the ledger is back; nothing was acknowledged"
            )
        # It said "ok" while refusing everything: a load balancer kept routing to it.
        health = await http.get("/healthz")
        assert health.status_code == 503
        assert health.json()["status"] == "evidence-stopped"
        assert "restart once the ledger is back" in health.json()["error"]


async def test_an_entry_that_cannot_be_read_is_a_409_naming_it_and_the_page_still_shows(
    outpost: Outpost, tmp_path: Path
) -> None:
    # It was a 503 "ledger-unavailable" with Retry-After: 1, and the page a problem+json:
    # retrying cannot fix an entry altered where it is stored.
    path = tmp_path / "ledger.db"
    ledger = Ledger(SQLiteBackend(path))
    try:
        async with (
            serving(_outpost(outpost), ledger=ledger) as served,
            httpx.AsyncClient(base_url=served.url, timeout=30) as http,
        ):
            for _ in range(6):
                await http.post("/v1/verify", json={"expression": "true", "timeout_ms": 0})
            alter(path, 5, "'not json'")
            for url in ("/v1/ledger/entries/5", "/v1/ledger/entries?limit=20"):
                refused = await http.get(url)
                body = _problem(refused, 409, "ledger-fails-checks")
                assert "retry-after" not in refused.headers
                assert body["title"] == "Ledger fails its checks"
                assert body["detail"] == (
                    "entry 5: the stored entry is not JSON (Expecting value: line 1 column 1 "
                    "(char 0)); the ledger was altered or damaged where it is stored, so asking "
                    "again cannot help. Tell whoever runs this daemon: `assay ledger verify` on "
                    "its ledger finds everything that is wrong"
                )
                assert (body["seq"], body["reason"]) == (
                    5,
                    "the stored entry is not JSON (Expecting value: line 1 column 1 (char 0))",
                )
            before = await http.get("/v1/ledger/entries", params={"limit": 4})
            after = await http.get("/v1/ledger/entries", params={"after": 5})
            assert [e["seq"] for e in before.json() + after.json()] == [1, 2, 3, 4, 6]
            page = await http.get("/")
            assert (await http.get("/timeline/head")).json()["size"] == 6
    finally:
        ledger.close()
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert 'data-verified="no"' in page.text
    assert (
        '<span class="status broken">does not verify</span>\n    <span class="covered"'
    ) in page.text
    assert "(entry 5 cannot be read)</span>" in page.text
    assert (
        '<li class="fault">entry 5: the stored entry is not JSON (Expecting value: line 1 '
        "column 1 (char 0)); verify the ledger (assay ledger verify, or verify_ledger) to find "
        "what else is wrong</li>"
    ) in page.text
    assert page.text.count('class="verdict"') == 5  # the other entries are shown
