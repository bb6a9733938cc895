"""``assay serve --redact``: a withheld key's value is in no answer and no ledger entry."""

from __future__ import annotations

from pathlib import Path

import httpx

from assay.ledger.url import open_ledger
from http_daemon import spawn_daemon

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
