"""Defaults the command line needs before anything heavy loads."""

DEFAULT_APPLICATION = "assay.examples.outpost:APPLICATION"
"""The application ``assay serve`` and ``assay mcp`` host when no ``--app`` is given."""
