"""docs/http-reference.md is the daemon's OpenAPI document rendered, and stays so."""

from __future__ import annotations

from pathlib import Path

from assay.server.reference import current_reference

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "http-reference.md"


def test_the_committed_reference_is_the_current_openapi_document_rendered() -> None:
    rendered = current_reference()
    assert REFERENCE.read_text(encoding="utf-8") == rendered, (
        "docs/http-reference.md is out of date: run "
        "`.venv/bin/python -m assay.server.reference > docs/http-reference.md`"
    )
    for heading in (
        "### `POST /v1/actions`",
        "### `POST /v1/verify`",
        "### `POST /v1/workflows/{name}/runs`",
        "### VerificationOutcome",
        "### ActionResponse",
    ):
        assert heading in rendered
