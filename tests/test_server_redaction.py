"""Redaction through the daemon: a withheld key's value is in no answer and no ledger entry."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from assay.graph import build_navigation_graph
from assay.graph.session import Handler
from assay.host import Application
from assay.ledger import Ledger
from assay.ledger.backends.memory import MemoryBackend
from assay.ledger.url import open_ledger
from assay.state.store import StateStore
from http_daemon import serving, spawn_daemon
from mcp_apps import panel_application

ADDRESS = "ops@outpost.example"


def test_a_redacted_key_is_withheld_from_answers_and_the_ledger(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'assay.db'}"
    with (
        spawn_daemon(["--ledger", url, "--redact", "inbox.sent.*.to"]) as daemon,
        httpx.Client(base_url=daemon.url, timeout=30) as client,
    ):
        fire = {
            "action": "inbox.send",
            "args": {"message_id": "m1", "to": ADDRESS, "subject": "hello"},
            "wait_ms": 5000,
        }
        fired = client.post("/v1/actions", json=fire)
        assert fired.status_code == 200, fired.text
        changes = {c["key"]: c["after"] for c in fired.json()["verification"]["changed_fields"]}
        assert changes["inbox.sent.m1.to"] == "[redacted]"
        assert changes["inbox.sent.m1.subject"] == "hello"
        state = client.get("/v1/state", params={"keys": "inbox.sent.m1"}).json()
        assert state["objects"]["inbox"]["sent"]["m1"]["to"] == "[redacted]"
        verified = client.post(
            "/v1/verify", json={"expression": f"inbox.sent.m1.to === '{ADDRESS}'", "timeout_ms": 0}
        )
        answers = [fired.text, verified.text, client.get("/").text]
    assert verified.status_code == 200, verified.text
    with open_ledger(url) as ledger:
        stored = "\n".join(entry.canonical.decode() for entry in ledger.iterate())
    # The caller's own inputs are stored as given (the fire's arguments, the expression it
    # sent); what assay observed of the redacted key (diffs, narratives, state) never is.
    echoed = [
        f'"to":"{ADDRESS}"',
        f'"to": "{ADDRESS}"',
        f"&#34;to&#34;:&#34;{ADDRESS}&#34;",  # the timeline page's summary of the arguments
        f"inbox.sent.m1.to === '{ADDRESS}'",
    ]
    for text in (stored, *answers):
        rest = text
        for echo in echoed:
            rest = rest.replace(echo, "")
        assert ADDRESS not in rest, text
    assert "inbox.sent.m1.to is [redacted]" in stored


VAULT = build_navigation_graph(
    "vault",
    pages={
        "vault": {
            "actions": {
                "store": {
                    "does": "Store the keys",
                    "writes": ["u"],
                    "verify": {"u.note": {"eq": "stored"}},
                    "input": {"type": "object", "additionalProperties": False},
                }
            }
        }
    },
)
PIN = "4471-secret-pin"


def _vault() -> Application:
    """Storing writes a key whose name holds a dot; ``u.a.b`` is the configured pattern."""

    def handlers(store: StateStore) -> dict[str, Handler]:
        stored = {"a.b": PIN, "a": {"b.c": PIN, "c": "shown"}, "note": "stored"}
        return {"vault.store": lambda args: store.report({"u": stored})}

    return Application.in_process(
        VAULT, start="vault", state={"u": {"note": "empty"}}, handlers=handlers, redaction=["u.a.b"]
    )


@pytest.mark.anyio
async def test_a_pattern_withholds_a_key_whose_name_holds_its_dots() -> None:
    ledger = Ledger(MemoryBackend())
    async with (
        serving(_vault(), ledger=ledger) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as client,
    ):
        fired = await client.post("/v1/actions", json={"action": "vault.store", "wait_ms": 5000})
        assert fired.status_code == 200, fired.text
        changes = {c["key"]: c["after"] for c in fired.json()["verification"]["changed_fields"]}
        assert changes == {
            'u["a.b"]': "[redacted]",
            'u.a["b.c"]': "[redacted]",
            "u.a.c": "shown",
            "u.note": "stored",
        }
        state = await client.get("/v1/state", params={"keys": "u"})
        assert state.json()["objects"] == {
            "u": {"a.b": "[redacted]", "a": {"b.c": "[redacted]", "c": "shown"}, "note": "stored"}
        }
        verified = await client.post(
            "/v1/verify", json={"expression": 'u["a.b"] === "guess"', "timeout_ms": 0}
        )
        assert verified.status_code == 422, verified.text
        answers = [fired.text, state.text, verified.text, (await client.get("/")).text]
    stored = "\n".join(entry.canonical.decode() for entry in ledger.iterate())
    assert "[redacted]" in stored
    for text in (stored, *answers):
        assert PIN not in text, text


LONG = "7" * 400
"""An integer within the 4,300 digits a number may have, beyond the range of a double."""


@pytest.mark.anyio
async def test_a_refused_value_under_a_redacted_key_is_named_never_quoted() -> None:
    # user.token is redacted: its refused value must not come back in the 400 (issue 32,
    # part 5), while the same value under a key shown is quoted as before.
    async with (
        serving(panel_application()) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as client,
    ):

        async def post(path: str, body: str, number: str = LONG) -> httpx.Response:
            headers = {"Content-Type": "application/json"}
            content = body.replace("NUMBER", number)
            return await client.post(path, content=content, headers=headers)

        double = await post("/v1/state/reports", '{"values": {"user": {"token": NUMBER}}}')
        digits = await post("/v1/state/reports", '{"values": {"user.token": NUMBER}}', "7" * 5000)
        operand = await post(
            "/v1/verify", '{"expression": {"user.token": {"eq": NUMBER}}, "timeout_ms": 0}', "1e400"
        )
        shown = await post("/v1/state/reports", '{"values": {"user": {"name": NUMBER}}}')
    assert [r.status_code for r in (double, digits, operand, shown)] == [400] * 4
    withheld = "the value sent is refused and not shown, as user.token is a redacted key"
    assert double.json()["detail"] == (
        f"cannot store user.token: {withheld}; use a number within ±1.8e308"
    )
    assert double.json()["key"] == "user.token"
    assert digits.json()["errors"] == [
        {
            "field": "body.values.user.token",
            "message": f"{withheld}; an integer of 5,000 digits, more than the 4,300 a number "
            "may have; send it as a string if it is an identifier",
            "type": "json_number_too_long",
        }
    ]
    assert operand.json()["detail"] == (
        f"contract key 'user.token': {withheld}; send an operand this operator takes"
    )
    for refused in (double, digits, operand):
        assert "7777" not in refused.text and "inf" not in refused.text
    assert "cannot store user.name: the integer 77777777777777777777…" in shown.json()["detail"]
