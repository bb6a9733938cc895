"""The access log names each query parameter and withholds its value (issue 32, part 5): a
token sent as ``?token=...`` was written to the log of ``assay serve`` as sent."""

from __future__ import annotations

import httpx

from assay.server.access_log import mask_query
from http_daemon import spawn_daemon

SECRET = "query-secret-0123456789"


def test_a_real_daemons_access_log_withholds_query_values() -> None:
    with spawn_daemon(["--ledger", "memory:"], stdout=True) as daemon:
        answered = httpx.get(f"{daemon.url}/v1/state?token={SECRET}&keys=inbox")
        healthy = httpx.get(f"{daemon.url}/healthz")
    log = "".join(daemon.log + daemon.out)
    assert (answered.status_code, healthy.status_code) == (400, 200)  # token is no parameter
    assert SECRET not in log
    assert '"GET /v1/state?token=***&keys=*** HTTP/1.1" 400' in log
    assert '"GET /healthz HTTP/1.1" 200' in log


def test_mask_query_keeps_names_and_paths() -> None:
    assert mask_query("/v1/ledger/entries") == "/v1/ledger/entries"
    assert mask_query("/v1/state?keys=a.b&flag&x=") == "/v1/state?keys=***&flag&x=***"
    assert mask_query("/p?") == "/p?"
