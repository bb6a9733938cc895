"""Defaults the command line needs before anything heavy loads."""

DEFAULT_APPLICATION = "assay.examples.outpost:APPLICATION"
"""The application ``assay serve`` and ``assay mcp`` host when no ``--app`` is given."""

DEFAULT_SESSION_IDLE_S = 3600.0
"""How long an opened session may go unused before the host closes it (one hour)."""
