"""``VerificationOutcome``: the one wire type every port returns for a verification (SPEC §5)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from assay.state.snapshot import FieldChange


class VerificationOutcome(BaseModel):
    """What a verification saw: the verdict, the evidence and a narrative built from it."""

    model_config = ConfigDict(frozen=True)

    passed: bool = Field(description="the contract held within the timeout")
    expression: str = Field(description="the contract as given, echoed")
    result: bool | None = Field(
        description="the final evaluated value; null when it could not be evaluated"
    )
    narrative: str = Field(description="what happened, naming the keys read and their values")
    elapsed_ms: int = Field(description="from the start of the settlement wait to the last cycle")
    poll_cycles: int = Field(description="evaluations made")
    changed_fields: list[FieldChange] = Field(
        description="differences between the pre-action snapshot and the final snapshot"
    )
