"""The HTTP reference (``docs/http-reference.md``), generated from the OpenAPI document.

``render_reference`` turns the daemon's own ``/openapi.json`` into Markdown: every operation
with its parameters, body and responses, then every schema with its fields. A test renders
it again and compares it with the committed file, so the reference cannot drift from the
routes. Regenerate with ``python -m assay.server.reference > docs/http-reference.md``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import Any

HEADER = """# HTTP reference

Generated from the daemon's OpenAPI document (`GET /openapi.json`) by
`python -m assay.server.reference`; do not edit by hand. The prose guide is
[http.md](http.md). Every error is `application/problem+json` (RFC 9457).
"""


def render_reference(document: Mapping[str, Any]) -> str:
    """Markdown for every operation and schema of ``document`` (an OpenAPI 3.1 dict)."""
    lines = [HEADER]
    lines.append("## Operations\n")
    for path, operations in document.get("paths", {}).items():
        for method, operation in operations.items():
            lines.extend(_operation(method.upper(), path, operation))
    lines.append("## Schemas\n")
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        lines.extend(_schema(name, schema))
    return "\n".join(lines).rstrip("\n") + "\n"


def _operation(method: str, path: str, operation: Mapping[str, Any]) -> list[str]:
    lines = [f"### `{method} {path}`\n", f"{operation.get('summary', '')}.\n"]
    description = operation.get("description")
    if description:
        lines.append(f"{_one_line(description)}\n")
    parameters = operation.get("parameters", [])
    if parameters:
        lines.append("| parameter | in | type | required | description |")
        lines.append("|---|---|---|---|---|")
        for parameter in parameters:
            schema = parameter.get("schema", {})
            about = parameter.get("description") or schema.get("description", "")
            required = "yes" if parameter.get("required") else "no"
            lines.append(
                f"| `{parameter['name']}` | {parameter['in']} | {_type(schema)} | {required} "
                f"| {_cell(about)} |"
            )
        lines.append("")
    body = operation.get("requestBody")
    if body:
        schema = body.get("content", {}).get("application/json", {}).get("schema", {})
        lines.append(f"Body: {_type(schema)}.\n")
    lines.append("| status | body | when |")
    lines.append("|---|---|---|")
    for status, response in operation.get("responses", {}).items():
        content = response.get("content", {})
        kinds = [f"{_type(media.get('schema', {}))} ({kind})" for kind, media in content.items()]
        lines.append(
            f"| {status} | {', '.join(kinds) or '-'} | {_cell(response.get('description', ''))} |"
        )
    lines.append("")
    return lines


def _schema(name: str, schema: Mapping[str, Any]) -> list[str]:
    lines = [f"### {name}\n"]
    if schema.get("description"):
        lines.append(f"{_one_line(schema['description'])}\n")
    if "enum" in schema:
        lines.append("One of: " + ", ".join(f"`{value}`" for value in schema["enum"]) + ".\n")
        return lines
    properties = schema.get("properties", {})
    if properties:
        required = set(schema.get("required", []))
        lines.append("| field | type | required | description |")
        lines.append("|---|---|---|---|")
        for field, spec in properties.items():
            lines.append(
                f"| `{field}` | {_type(spec)} | {'yes' if field in required else 'no'} "
                f"| {_cell(spec.get('description', ''))} |"
            )
        lines.append("")
    return lines


def _type(schema: Mapping[str, Any]) -> str:
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_type(option) for option in schema[key])
    kind = schema.get("type")
    if kind == "array":
        return f"array of {_type(schema.get('items', {}))}"
    if "enum" in schema:
        return " \\| ".join(f"`{value}`" for value in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind or "any")


def _cell(text: Any) -> str:
    return _one_line(str(text)).replace("|", "\\|")


def _one_line(text: str) -> str:
    return " ".join(text.split())


async def _document() -> dict[str, Any]:
    from assay.examples.outpost import APPLICATION
    from assay.host import Host
    from assay.ledger import Ledger
    from assay.ledger.backends.memory import MemoryBackend
    from assay.server.app import create_app
    from assay.workflow.definition import Workflow
    from assay.workflow.examples import COMPETITOR_DEEP_DIVE
    from assay.workflow.service import Workflows

    ledger = Ledger(MemoryBackend())
    async with Host(APPLICATION, ledger) as host:
        workflows = Workflows(ledger, workflows=[Workflow.from_mapping(COMPETITOR_DEEP_DIVE)])
        return create_app(host, workflows=workflows).openapi()


def current_reference() -> str:
    """The reference for the daemon as it is now (it starts the example application)."""
    return render_reference(asyncio.run(_document()))


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(current_reference())
