"""Hostile JSON against every route that takes a body and every CLI input (issue 32, part 3).

Each body of the corpus is sent to every such route of a real daemon over one keep-alive
connection: each must be answered 400 with problem+json naming what is wrong (never a 500),
and the next request on that connection must still be answered. The command line's JSON
inputs (``verify --state FILE``, ``--state -``, a contract as EXPR, ``run --input`` inline
and ``@FILE``), all read by ``json_text.read_document``, must exit 2 with one line naming
what is wrong: each input is given the whole corpus (62 answers). An integer over Python's
4,300 digits was a 500 on five routes and exit 70 on the command line.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from assay.cli.main import main
from assay.examples.outpost import APPLICATION
from assay.state.json_text import JSONTextError, NumberTooLongError, loads, read_document
from hostile_json import BIG, CORPUS, DEEP
from http_daemon import serving

ROUTES = (
    "/v1/verify",
    "/v1/actions",
    "/v1/sessions",
    "/v1/state/reports",
    "/v1/workflows/competitor_deep_dive/runs",
    "/v1/runs/no-such-run/resume",
)


@pytest.mark.anyio
async def test_every_hostile_body_is_a_400_on_every_route_and_the_connection_lives() -> None:
    answered: dict[tuple[str, str], int] = {}
    async with (
        serving(APPLICATION) as served,
        httpx.AsyncClient(base_url=served.url, timeout=30) as client,
    ):
        for route in ROUTES:
            for name, body in CORPUS.items():
                response = await client.post(
                    route, content=body, headers={"Content-Type": "application/json"}
                )
                answered[route, name] = response.status_code
                assert response.headers["content-type"] == "application/problem+json", name
                problem = response.json()
                assert problem["status"] == response.status_code
                assert problem["detail"], (route, name)
                alive = await client.get("/healthz")  # the same keep-alive connection
                assert alive.status_code == 200, (route, name)
        big = await client.post(
            "/v1/actions",
            content=CORPUS["integer of 5,000 digits in args"],
            headers={"Content-Type": "application/json"},
        )
    assert {status for status in answered.values()} == {400}, answered
    assert len(answered) == len(ROUTES) * len(CORPUS) == 78
    assert big.json()["errors"] == [
        {
            "field": "body.args.n",
            "message": "an integer of 5,000 digits, more than the 4,300 a number may have; "
            "send it as a string if it is an identifier",
            "type": "json_number_too_long",
        }
    ]


def test_loads_names_where_the_long_integer_stands() -> None:
    with pytest.raises(NumberTooLongError) as raised:
        loads('{"orders": [{"id": 1}, {"id": -' + BIG + "}]}")
    assert (raised.value.path, raised.value.digits, raised.value.limit) == (
        ("orders", 1, "id"),
        5000,
        4300,
    )
    assert str(raised.value).startswith("orders.1.id: an integer of 5,000 digits")
    with pytest.raises(NumberTooLongError, match=r"^the value: an integer of 5,000"):
        loads(BIG)
    assert loads('{"n": ' + "9" * 4300 + "}") == {"n": int("9" * 4300)}


def _long_state(tmp_path: Path) -> Path:
    path = tmp_path / "state.json"
    path.write_text('{"inbox": {"count": ' + BIG + "}}")
    return path


TOO_LONG = (
    "inbox.count: an integer of 5,000 digits, more than the 4,300 a number may have; send it "
    "as a string if it is an identifier"
)


def test_a_state_file_with_a_long_integer_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _long_state(tmp_path)
    assert main(["verify", "inbox.count > 1", "--state", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"assay verify: error: the state file {str(path)!r}: {TOO_LONG}\n"
    )


def test_a_state_on_stdin_with_a_long_integer_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ('{"inbox": {"count": ' + BIG + "}}").encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["verify", "inbox.count > 1", "--state", "-"]) == 2
    assert capsys.readouterr().err == (
        f"assay verify: error: the state read from stdin: {TOO_LONG}\n"
    )


def test_a_contract_with_a_long_integer_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state.json"
    state.write_text('{"a": 1}')
    contract = json.dumps({"a": {"eq": 1}}).replace("1", BIG)
    assert main(["verify", contract, "--state", str(state)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "assay verify: error: the contract is malformed: EXPR (read as a declarative contract): "
    )
    assert "a.eq: an integer of 5,000 digits" in err


@pytest.mark.parametrize("from_file", [False, True], ids=["inline", "@file"])
def test_a_run_input_with_a_long_integer_is_a_usage_error(
    from_file: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = '{"sources": [' + BIG + "]}"
    given = text
    if from_file:
        path = tmp_path / "input.json"
        path.write_text(text)
        given = f"@{path}"
    flow = Path(__file__).resolve().parents[1] / "examples/workflows/competitor_deep_dive.yaml"
    code = main(["run", str(flow), "--input", given, "--ledger", "memory:"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "sources.0: an integer of 5,000 digits, more than the 4,300" in err


CLI_INPUTS = (
    "verify --state FILE",
    "verify --state -",
    "verify EXPR",
    "run --input",
    "run --input @FILE",
)


def _cli_answer(
    given: str, body: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[str] | None:
    """argv for the command line input ``given`` carrying ``body``; ``None`` where that input
    cannot carry it (argv is text; EXPR is read as a contract only when it is an object)."""
    flow = Path(__file__).resolve().parents[1] / "examples/workflows/competitor_deep_dive.yaml"
    run = ["run", str(flow), "--ledger", "memory:", "--input"]
    file = tmp_path / "body.json"
    file.write_bytes(body)
    state = tmp_path / "state.json"
    state.write_text('{"a": 1}')
    if given == "verify --state FILE":
        return ["verify", "a === 1", "--state", str(file)]
    if given == "verify --state -":
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(body)))
        return ["verify", "a === 1", "--state", "-"]
    if given == "run --input @FILE":
        return [*run, f"@{file}"]
    try:
        text = body.decode()
    except UnicodeDecodeError:
        return None
    if given == "run --input":
        return [*run, text]
    return (
        ["verify", text, "--state", str(state)] if text.lstrip("\ufeff").startswith("{") else None
    )


@pytest.mark.parametrize("given", CLI_INPUTS)
def test_every_hostile_body_is_a_usage_error_on_every_command_line_input(
    given: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    refused: dict[str, str] = {}
    for name, body in CORPUS.items():
        argv = _cli_answer(given, body, tmp_path, monkeypatch)
        if argv is None:
            continue
        code = main(argv)
        out, err = capsys.readouterr()
        assert (code, out) == (2, ""), (name, err)
        command = argv[0]
        # one line, from the command, saying what is wrong: no traceback, nothing half-done
        assert err.startswith(f"assay {command}: error: ") and err.count("\n") == 1, (name, err)
        refused[name] = err
    carried = {"verify EXPR": 11, "run --input": 12}.get(given, len(CORPUS))
    assert len(refused) == carried


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES, st.booleans(), st.booleans())
def test_read_document_reads_every_document_json_writes(
    value: object, as_bytes: bool, marked: bool
) -> None:
    text = ("\ufeff" if marked else "") + json.dumps(value)
    data = text.encode() if as_bytes else text
    assert read_document(data, named="the document") == value


@pytest.mark.parametrize(
    ("data", "kind", "message"),
    [
        (b'{"a": 1, "a": 2}', "duplicate_key", "the document gives the key 'a' twice in one"),
        (b'{"a": "\xff"}', "utf8", "the document is not UTF-8 text: it holds the byte 0xff at"),
        (b'{"a": 1,}', "syntax", "the document is not valid JSON: Expecting property name"),
        (b'{"a": [' + BIG.encode() + b"]}", "too_long", "the document: a.0: an integer of 5,000"),
        (DEEP.encode(), "too_deep", "the document nests deeper than 256 levels"),
    ],
)
def test_read_document_names_the_rule_a_document_breaks(
    data: bytes, kind: str, message: str
) -> None:
    with pytest.raises(JSONTextError) as refused:
        read_document(data, named="the document")
    assert refused.value.kind == kind
    assert str(refused.value).startswith(message)


@pytest.mark.anyio
async def test_a_refusal_of_a_5_mib_argument_quotes_an_excerpt_over_http() -> None:
    # The refusal quoted the argument whole three times (detail, error, why): 15.7 MB.
    fire = {"action": "inbox.send", "args": {"message_id": "x" * (5 << 20), "to": "ops"}}
    async with (
        serving(APPLICATION) as served,
        httpx.AsyncClient(base_url=served.url, timeout=60) as client,
    ):
        refused = await client.post("/v1/actions", json=fire)
    assert refused.status_code == 400
    assert len(refused.content) < 16 << 10
    problem = refused.json()
    assert problem["detail"] == problem["error"] == problem["why"]
    assert problem["detail"].startswith("inbox.send: args['message_id']: 'xxx")
    assert re.search(r"…\[5,24[0-9],[0-9]{3} characters left out\]…", problem["detail"])
    assert problem["detail"].endswith("' does not match '^[A-Za-z0-9_-]{1,64}$'")
