"""``assay serve``: the HTTP daemon (SPEC §9) hosting an application.

Settings come from flags, then ``ASSAY_*`` environment variables, then ``--config FILE``
(TOML), then defaults (see ``assay.server.config``). Exit 2 for unsafe or invalid settings
(e.g. a non-loopback bind without tokens), with a message that says how to fix them.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from assay.defaults import (
    DEFAULT_APPLICATION,
    DEFAULT_LEASE_S,
    DEFAULT_SESSION_IDLE_S,
    DEFAULT_WALL_S,
)
from assay.errors import ApplicationError, LedgerError, RequestError, WorkflowError
from assay.server.config import (
    DEFAULT_HOST,
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_PORT,
    ENVIRONMENT,
    LOG_LEVELS,
    load_config,
)
from assay.server.tokens import TOKEN_FORM


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "serve",
        help="run the HTTP daemon: fire, verify, state, sessions, ledger",
        description="Serve the HTTP API (OpenAPI at /openapi.json) for an application. "
        "Each setting also comes from ASSAY_APP, ASSAY_LEDGER, ASSAY_HOST, ASSAY_PORT, "
        "ASSAY_TOKENS (space-separated), ASSAY_LOG_LEVEL, ASSAY_WORKFLOWS, ASSAY_REDACT, "
        "ASSAY_MAX_BODY_BYTES, ASSAY_SESSION_IDLE_S, ASSAY_LEASE_S, ASSAY_WORKFLOW_WALL_S, "
        "or a TOML --config file (ASSAY_CONFIG). A non-loopback --host needs at least one "
        "--token.",
    )
    parser.add_argument(
        "--app", metavar="MODULE:ATTR", help=f"the application (default {DEFAULT_APPLICATION})"
    )
    parser.add_argument(
        "--ledger", metavar="URL", help="sqlite:///path.db (default), postgresql://..."
    )
    parser.add_argument("--host", help=f"address to bind (default {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, help=f"port (default {DEFAULT_PORT}; 0 for a free one)")
    parser.add_argument(
        "--token",
        dest="tokens",
        action="append",
        metavar="NAME:SECRET:SCOPES",
        help=f"a bearer token, {TOKEN_FORM}; repeat for several",
    )
    parser.add_argument(
        "--workflows",
        action="append",
        metavar="DIR",
        help="a directory of NAME.yaml workflows to run by name; repeat for several",
    )
    parser.add_argument(
        "--redact",
        action="append",
        metavar="PATTERN",
        help="a state key pattern (inbox.sent.*.to, secrets.**) whose values are withheld "
        "everywhere; repeat for several",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        metavar="N",
        help=f"refuse larger request bodies with 413 (default {DEFAULT_MAX_BODY_BYTES:,})",
    )
    parser.add_argument(
        "--session-idle-s",
        type=float,
        metavar="SECONDS",
        help="close a session no request has named for this long (default "
        f"{DEFAULT_SESSION_IDLE_S:g}; 0: never)",
    )
    parser.add_argument(
        "--lease-s",
        type=float,
        metavar="SECONDS",
        help="how long the daemon's lease on the ledger lasts unrenewed (default "
        f"{DEFAULT_LEASE_S:g}; renewed every third of it): once a killed daemon's lease has "
        "expired, the fires it left open are closed as unobservable",
    )
    parser.add_argument(
        "--workflow-wall-s",
        type=float,
        metavar="SECONDS",
        help="the wall bound of a workflow run whose workflow's budget sets no wall_s "
        f"(default {DEFAULT_WALL_S:g}; at most 86400)",
    )
    parser.add_argument(
        "--threshold",
        dest="thresholds",
        action="append",
        metavar="TIER=CONFIDENCE",
        help="the confidence a reversibility tier needs to fire (irreversible=0.99), over the "
        "application's and the defaults (0.5, 0.8, 0.95); repeat for several",
    )
    parser.add_argument("--config", metavar="FILE", help="a TOML file with the same settings")
    parser.add_argument("--log-level", choices=LOG_LEVELS, help="default info")
    parser.add_argument(
        "--no-access-log", dest="access_log", action="store_const", const=False,
        help="do not log each request",
    )  # fmt: skip
    parser.set_defaults(run=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    from assay.server.daemon import run  # uvicorn and FastAPI load only to serve
    from assay.workflow.wall import run as run_to_the_end

    flags = {key: getattr(args, key) for key in ENVIRONMENT}
    try:
        config = load_config(flags, path=args.config)
    except RequestError as error:
        print(f"assay serve: {error}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=config.log_level.upper(), format="%(levelname)s:     %(name)s: %(message)s"
    )
    for chatty in ("httpx", "httpcore"):  # the probes' every read is not news
        logging.getLogger(chatty).setLevel(max(logging.WARNING, logging.root.level))

    def ready(url: str) -> None:
        print(f"assay serve: listening on {url}", file=sys.stderr, flush=True)

    try:
        # Not asyncio.run: at the end, it would wait for ever for a workflow's executor that
        # ignores its cancellation, and the daemon would never stop.
        run_to_the_end(run(config, ready=ready))
    except WorkflowError as error:
        print(f"assay serve: --workflows: {error}", file=sys.stderr)
        return 2
    except (RequestError, ApplicationError, LedgerError) as error:
        print(f"assay serve: {error}", file=sys.stderr)
        return 2
    return 0
