"""The model verifier against the real local model (SmolLM2-135M), both ways it can be run:
behind llama-cpp-python's OpenAI-compatible server, and loaded in this process.

These test the plumbing end to end, never the tiny model's judgement: a verdict comes back
constrained to the schema and parses, it is recorded in the ledger with every per-check
ruling, and a failing one's critique is what the planner is handed next.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from assay.workflow import Engine, ModelSettings, RunStatus, Workflow
from assay.workflow.model import ZERO_CASE_EXEMPTION, ModelVerifier, read_answer
from workflow_steps import PlannerRecorder, Recorder, memory_ledger

UNRULED = ("the model at ", "the model /", "the model's answer is not a verdict")
OUTPUT = {"hypotheses": [{"claim": "Acme grew 12%", "source": "10-K 2025"}], "selected_count": 1}
INPUT = {"sources": ["10-K 2025"]}


Settings = Callable[..., ModelSettings]


@pytest.fixture(params=["server", "in-process"])
def settings(request: pytest.FixtureRequest) -> Settings:
    """Builds the settings for the model behind its server, then for its file in process."""
    if request.param == "server":
        base_url = request.getfixturevalue("model_server")
        return lambda **more: ModelSettings(
            base_url=base_url, model="smollm2", response_format="json_object", **more
        )
    path = request.getfixturevalue("model_file")
    return lambda **more: ModelSettings(path=path, **more)


def workflow(executor: Any, planner: Any) -> Workflow:
    return Workflow.from_mapping(
        {
            "workflow": "modelled",
            "budget": {"iterations_per_attempt": 3},
            "steps": [
                {
                    "id": "select",
                    "executor": executor,
                    "planner": planner,
                    "empty_output": {"hypotheses": [], "selected_count": 0},
                    "verify": {
                        "prompt": "Check that every hypothesis cites a source from the input.",
                        "criteria": ["output.selected_count === output.hypotheses.length"],
                    },
                    "escalation": ["human"],
                }
            ],
        }
    )


def test_the_server_is_the_local_smollm2(model_server: str) -> None:
    models = httpx.get(f"{model_server}/models", timeout=30).json()
    assert [m["id"] for m in models["data"]] == ["smollm2"]


def test_a_verdict_comes_back_in_the_schema_and_parses(settings: Settings) -> None:
    step = workflow(Recorder(), None).steps[0]
    verifier = ModelVerifier(settings(), step)
    assert ZERO_CASE_EXEMPTION in verifier.messages(INPUT, OUTPUT)[0]["content"]

    verdict = verifier.verify({**INPUT, "steps": {}}, OUTPUT)

    assert [r.criterion for r in verdict.criteria] == [
        "prompt: Check that every hypothesis cites a source from the input.",
        "output.selected_count === output.hypotheses.length",
    ]
    assert {r.verifier for r in verdict.criteria} == {"model"}
    assert not any(r.reason.startswith(UNRULED) for r in verdict.criteria), verdict
    assert verdict.tokens > 0
    assert verdict.passed == all(r.passed for r in verdict.criteria)


def test_model_verdicts_are_recorded_and_a_failing_ones_critique_reaches_the_planner(
    settings: Settings,
) -> None:
    executor = Recorder([OUTPUT])
    planner = PlannerRecorder()
    engine = Engine(workflow(executor, planner), memory_ledger(), model=settings())

    record = engine.start(INPUT)

    verdicts = [e.body for e in engine.ledger.query(run=record.run_id, kind="verdict")]
    assert 1 <= len(verdicts) <= 3
    for body in verdicts:
        rulings = body["verdict"]["criteria"]
        assert [r["verifier"] for r in rulings] == ["expression", "model", "model"]
        assert body["verdict"]["tokens"] > 0
    critiques = [v["verdict"]["critique"] for v in verdicts if not v["verdict"]["passed"]]
    # The planner is handed, before each iteration, every failed critique so far, in order.
    assert planner.seen == [tuple(critiques[:n]) for n in range(len(verdicts))]
    if verdicts[-1]["verdict"]["passed"]:
        assert record.status is RunStatus.COMPLETED
        assert record.committed == {"select": OUTPUT}
    else:
        assert record.status is RunStatus.PARKED
        assert record.committed == {}


def test_an_answer_cut_off_by_its_token_bound_fails_and_its_critique_is_routed(
    settings: Settings,
) -> None:
    executor = Recorder([OUTPUT])
    planner = PlannerRecorder()
    engine = Engine(workflow(executor, planner), memory_ledger(), model=settings(max_tokens=4))

    record = engine.start(INPUT)

    assert record.status is RunStatus.PARKED
    verdicts = [e.body["verdict"] for e in engine.ledger.query(run=record.run_id, kind="verdict")]
    assert len(verdicts) == 3
    for verdict in verdicts:
        assert verdict["passed"] is False
        assert verdict["critique"].startswith("the model's answer is not a verdict")
    assert planner.seen == [
        (),
        (verdicts[0]["critique"],),
        tuple(v["critique"] for v in verdicts[:2]),
    ]


def test_a_model_file_that_cannot_be_run_fails_the_verdict_saying_why(
    model_file: str, tmp_path: Path
) -> None:
    step = workflow(Recorder(), None).steps[0]
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("not a model", encoding="utf-8")
    missing = tmp_path / "missing.gguf"

    for path, why in (
        (
            not_gguf,
            "it is not a GGUF model file (it does not begin with GGUF); give the path of one",
        ),
        (missing, "No such file or directory; give the path of a GGUF model file"),
        (tmp_path, "Is a directory; give the path of a GGUF model file"),
    ):
        verdict = ModelVerifier(ModelSettings(path=str(path)), step).verify(INPUT, OUTPUT)
        reason = f"the model {path} cannot be run: {why}"
        assert verdict.passed is False
        assert verdict.critique == reason
        assert [r.reason for r in verdict.criteria] == [reason, reason]


def test_llama_cpp_prints_its_errors_and_nothing_else(
    model_file: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from assay.workflow import chat

    with chat._loading:
        chat._loaded(model_file, 2048)
    capsys.readouterr()
    log = chat._llama_log[0]  # the callback llama.cpp now calls

    for level, text in [
        (3, b"llama_context: n_ctx_per_seq (2048) < n_ctx_train (8192)\n"),  # a warning
        (5, b"-- continued\n"),
        (2, b"llama_context: n_ctx = 2048\n"),
        (4, b"failed to read the tensor"),
        (5, b" at offset 12\n"),
        (1, b"a debug line\n"),
    ]:
        log(level, text, None)

    assert capsys.readouterr().err == "failed to read the tensor at offset 12\n"


def test_without_llama_cpp_a_model_file_fails_the_verdict_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # what an absent package imports as
    step = workflow(Recorder(), None).steps[0]
    path = tmp_path / "model.gguf"

    verdict = ModelVerifier(ModelSettings(path=str(path)), step).verify(INPUT, OUTPUT)

    assert verdict.passed is False
    assert verdict.critique.startswith(
        f"the model {path} cannot be run: llama-cpp-python is not installed ("
    )
    assert verdict.critique.endswith(
        "); install assay[local-model], or give base_url to ask a model server instead"
    )


@pytest.mark.parametrize(
    ("content", "reasons"),
    [
        ('{"checks": [{"passed": true, "reason": "ok"}], "critique": ""}', ["ok"]),
        # A line break written as it is inside a string, as SmolLM2 behind llama-cpp-python's
        # server writes one: strict JSON forbids it; it is read as the line break it is.
        ('{"checks": [{"passed": true, "reason": "12-K\n\nThe input"}], "critique": ""}',
         ["12-K\n\nThe input"]),
    ],
)  # fmt: skip
def test_an_answer_is_read_with_raw_line_breaks_in_its_strings(
    content: str, reasons: list[str]
) -> None:
    assert [ruling.reason for ruling in read_answer(content).checks] == reasons


@pytest.mark.parametrize(
    "content",
    [
        '{"checks": [{"passed": true, "reason": "a\nb"}], "critique": ""',  # cut off
        '{"checks": [{"passed": "maybe", "reason": "a\nb"}], "critique": ""}',  # not a verdict
        '{"checks": [], "critique": "a\nb", }',  # a trailing comma
        "{'checks': [], 'critique': ''}",
    ],
)
def test_an_answer_that_is_no_verdict_is_still_refused(content: str) -> None:
    with pytest.raises(ValidationError):
        read_answer(content)
