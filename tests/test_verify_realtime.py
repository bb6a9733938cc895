"""The verification loop in real time against a real HTTP application polled by a probe."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from apps import DelayedApp, serve
from assay import compile_expression
from assay.state.probes import HttpProbe
from assay.state.substrate import Substrate
from assay.verify.loop import VerifyOptions, verify
from assay.verify.outcome import VerificationOutcome


@pytest.fixture
def app() -> Iterator[tuple[DelayedApp, str]]:
    application = DelayedApp(delay=0.3)
    with serve(application) as url:
        yield application, url


def act_and_verify(url: str, action: str, expression: str, timeout_ms: int) -> VerificationOutcome:
    async def main() -> VerificationOutcome:
        substrate = Substrate(probes=[HttpProbe(f"{url}/state", interval=0.05)])
        await substrate.start()
        try:
            while substrate.store.version == 0:  # the first read has landed
                await asyncio.sleep(0.01)
            before = substrate.store.current
            async with httpx.AsyncClient() as client:
                response = await client.post(f"{url}{action}")
                assert response.status_code == 200
            options = VerifyOptions(
                timeout_ms=timeout_ms, poll_interval_ms=substrate.poll_interval_ms
            )
            return await verify(
                compile_expression(expression), substrate.store, before=before, options=options
            )
        finally:
            await substrate.stop()

    return asyncio.run(main())


def test_an_effect_that_lands_late_passes_after_several_cycles(app: tuple[DelayedApp, str]) -> None:
    _, url = app
    outcome = act_and_verify(url, "/send", "inbox.sent_count == 1", timeout_ms=3000)
    assert outcome.passed is True
    assert outcome.poll_cycles > 1
    # The effect lands 300 ms after the request, so no honest pass can come sooner.
    assert outcome.elapsed_ms >= 250
    assert [(c.key, c.before, c.after) for c in outcome.changed_fields] == [
        ("inbox.sent_count", 0, 1)
    ]
    assert outcome.narrative.startswith("Expression evaluated to true after ")
    assert outcome.narrative.endswith("; inbox.sent_count changed from 0 to 1.")


def test_a_silent_no_op_fails_and_says_nothing_changed(app: tuple[DelayedApp, str]) -> None:
    _, url = app
    outcome = act_and_verify(url, "/noop", "inbox.sent_count == 1", timeout_ms=600)
    assert outcome.passed is False
    assert outcome.result is False
    assert outcome.changed_fields == []
    assert outcome.narrative.startswith("inbox.sent_count remained 0 after ")
    assert outcome.narrative.endswith(
        "; nothing observable changed. The action may have failed silently."
    )


def test_a_change_to_the_wrong_value_is_reported_from_what_to_what(
    app: tuple[DelayedApp, str],
) -> None:
    _, url = app
    outcome = act_and_verify(url, "/mode/RTL", 'drone.mode == "GUIDED"', timeout_ms=1000)
    assert outcome.passed is False
    assert 'drone.mode changed from "LOITER" to "RTL" after ' in outcome.narrative
    assert outcome.narrative.endswith("but the expression still evaluated to false.")
