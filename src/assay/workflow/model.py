"""The model verifier: a language model rules on a step's output, its answer constrained to
the verdict's JSON schema.

The model is an OpenAI-compatible chat completions endpoint (``base_url``) or a GGUF file run
in this process (``path``); ``assay.workflow.chat`` asks either. It rules on the step's
prompt and on each criterion and writes a critique; the declared empty output passes without
asking it. Anything that keeps the model from ruling fails the verdict and says why. It is
asked in a daemon thread of its own (``averify``), so the engine can stop waiting when a wall
bound runs out; what the thread answers after that is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError

from assay.errors import ModelError, escape_surrogates
from assay.workflow.chat import ChatModel, chat_model
from assay.workflow.definition import ModelSettings, Step
from assay.workflow.verdict import CriterionResult, Verdict
from assay.workflow.wall import in_thread

if TYPE_CHECKING:
    import openai


ZERO_CASE_EXEMPTION: Final = (
    "Zero-case exemption: an output equal to the step's declared empty output means the step "
    "honestly found nothing to do. That output passes every check. Never fail an output only "
    "because it is empty or claims nothing; judge only what it does claim."
)
"""Stated in every model verifier prompt (SPEC §8)."""

SHOWN_CHARACTERS: Final = 4000
"""How much of the input and of the output the model is shown, each, as JSON."""


class ModelRuling(BaseModel):
    """The model's ruling on one check."""

    model_config = ConfigDict(extra="ignore")

    passed: bool
    reason: str


class ModelAnswer(BaseModel):
    """The model's whole answer: a ruling per check, in order, and a critique."""

    model_config = ConfigDict(extra="ignore")

    checks: list[ModelRuling]
    critique: str


def read_answer(content: str) -> ModelAnswer:
    """The verdict ``content`` holds; ``ValidationError`` when it holds none.

    Raw control characters inside its strings (a line break in a reason, written as it is
    rather than as ``\\n``) are read as themselves: small local models write them, and some
    servers' JSON grammars let them through, though strict JSON forbids them. Nothing else
    is forgiven.
    """
    try:
        return ModelAnswer.model_validate_json(content)
    except ValidationError as error:
        if error.errors()[0]["type"] != "json_invalid":
            raise
        try:
            data = json.loads(content, strict=False)
        except ValueError:
            raise error from None
        return ModelAnswer.model_validate(data)


class ModelVerifier:
    """Asks the model ``settings`` name to rule on ``step``'s checks; one request per verdict.

    The checks are the step's prompt, then its criteria as written. ``client`` may be given
    for an endpoint (tests, a shared client), ``chat`` for any model at all.
    """

    def __init__(
        self,
        settings: ModelSettings,
        step: Step,
        *,
        client: openai.OpenAI | None = None,
        chat: ChatModel | None = None,
    ) -> None:
        self.settings = settings
        self.step = step
        self.checks = tuple(
            ([f"prompt: {step.prompt}"] if step.prompt else [])
            + [criterion.source for criterion in step.criteria]
        )
        self.chat = chat or chat_model(settings, client=client)

    def schema(self) -> dict[str, Any]:
        """The JSON schema the model's answer is constrained to."""
        count = len(self.checks)
        return {
            "type": "object",
            "properties": {
                "checks": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "passed": {"type": "boolean"},
                            "reason": {"type": "string"},
                        },
                        "required": ["passed", "reason"],
                        "additionalProperties": False,
                    },
                    "minItems": count,
                    "maxItems": count,
                },
                "critique": {"type": "string"},
            },
            "required": ["checks", "critique"],
            "additionalProperties": False,
        }

    def messages(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> list[Any]:
        """The chat the model is shown: the role, the exemption, the checks, input, output."""
        checks = "\n".join(f"{n}. {text}" for n, text in enumerate(self.checks, 1))
        empty = json.dumps(self.step.empty_output, sort_keys=True)
        system = (
            "You verify one step of a workflow. You see the step's input and its output, "
            "nothing else. Rule on each numbered check in order: passed true or false, with "
            "a one-sentence reason. Then write a critique telling the author of the output "
            "what to change (empty if everything passed). Answer with JSON only.\n"
            f"{ZERO_CASE_EXEMPTION} This step's declared empty output is {empty}."
        )
        user = f"Checks:\n{checks}\n\nInput:\n{_shown(input)}\n\nOutput:\n{_shown(output)}"
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    async def averify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        """``verify`` in a daemon thread: the event loop runs on while the model answers.

        Cancelling the wait (the engine does when a wall bound runs out) leaves the thread
        running, as nothing can stop it; the verdict it comes to later is dropped.
        """
        return await in_thread(lambda: self.verify(input, output), name="assay model verifier")

    def verify(self, input: Mapping[str, Any], output: Mapping[str, Any]) -> Verdict:
        if self.step.empty_output is not None and dict(output) == dict(self.step.empty_output):
            exempt = "the self-attesting empty result: the zero-case exemption applies"
            return Verdict.of(
                tuple(self._result(check, True, exempt) for check in self.checks), critique=""
            )
        try:
            content, tokens = self.chat.complete(self.messages(input, output), self.schema())
        except ModelError as error:
            return self._unruled(str(error))
        except Exception as error:  # the verifier never raises, whatever the model's code does
            reason = f"{type(error).__name__}: {error}"
            return self._unruled(escape_surrogates(f"{self.settings.where} failed: {reason}"))
        try:
            answer = read_answer(content or "")
        except ValidationError as error:
            why = f"the model's answer is not a verdict ({error.errors()[0]['msg']}): {content!r}"
            return self._unruled(why[:500], tokens)
        results = []
        for index, check in enumerate(self.checks):
            if index < len(answer.checks):
                ruling = answer.checks[index]
                results.append(self._result(check, ruling.passed, ruling.reason))
            else:
                results.append(self._result(check, False, "the model did not rule on this check"))
        verdict = Verdict.of(tuple(results), tokens=tokens)
        if not verdict.passed and answer.critique.strip():
            verdict = verdict.model_copy(update={"critique": answer.critique.strip()})
        return verdict

    def _result(self, check: str, passed: bool, reason: str) -> CriterionResult:
        return CriterionResult(criterion=check, passed=passed, reason=reason, verifier="model")

    def _unruled(self, why: str, tokens: int = 0) -> Verdict:
        results = tuple(self._result(check, False, why) for check in self.checks)
        return Verdict.of(results, critique=why, tokens=tokens)


def _shown(value: Mapping[str, Any]) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    if len(text) > SHOWN_CHARACTERS:
        return text[:SHOWN_CHARACTERS] + f" … ({len(text) - SHOWN_CHARACTERS} more characters)"
    return text
