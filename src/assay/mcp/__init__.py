"""The MCP port (SPEC §9): assay's tools for a model, served with the official MCP SDK.

``build_server(host)`` answers an ``MCPServer`` whose five tools (``list_actions``, ``fire``,
``did_it_work``, ``get_state``, ``verify``) act on one session of a started ``Host``;
``StreamableHttpEndpoint`` serves one over streamable HTTP on loopback and ``serve_stdio``
(``assay.mcp.stdio``) over stdio; ``assay mcp`` runs one over either.
"""

from assay.mcp.server import build_server, fire_annotations, irreversible_actions
from assay.mcp.tools import DEFAULT_WAIT_MS, AssayTools

__all__ = [
    "DEFAULT_WAIT_MS",
    "AssayTools",
    "build_server",
    "fire_annotations",
    "irreversible_actions",
]
