"""Defaults the command line shows before anything heavy loads.

Each module that acts on one of these imports it from here, so that ``assay --help`` and a
subcommand's ``--help`` need none of those modules.
"""

from typing import Final

DEFAULT_APPLICATION: Final = "assay.examples.outpost:APPLICATION"
"""The application ``assay serve`` and ``assay mcp`` host when no ``--app`` is given."""

DEFAULT_LEDGER_URL: Final = "sqlite:///assay.db"
"""The embedded default ledger: ``assay.db`` in the working directory."""

DEFAULT_SESSION_IDLE_S: Final = 3600.0
"""How long an opened session may go unused before the host closes it (one hour)."""

DEFAULT_LEASE_S: Final = 30.0
"""How long a host's lease on its ledger lasts unrenewed (it renews it every third of that):
once it has expired, another host may close the fires it left open."""

DEFAULT_TIMEOUT_MS: Final = 5000
"""How long a verification waits for its contract to hold."""

DEFAULT_POLL_INTERVAL_MS: Final = 500
"""How often a verification re-reads a polled state."""

HTTP_READ_TIMEOUT: Final = 2.0
"""How long one read of an HTTP probe may take by default, in seconds: connecting, sending
and the answer."""

DEFAULT_WALL_S: Final = 3600.0
"""The wall bound of a run (one leg of it: a resume starts afresh) whose workflow's budget sets
no ``wall_s`` (one hour): no run waits on its steps for ever."""
