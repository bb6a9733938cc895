"""``PageProbe`` in real headless Chromium against a real local HTTP application.

The application serves a page whose counter goes up with every load and whose mode is
rendered by JavaScript after a fetch; the tests read it by selectors and by script, on
virtual time where a clock is involved. Nothing sleeps to wait: a read waits for the page.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from assay import compile_expression
from assay.clock import VirtualClock
from assay.state.probes import ClosableProbe, PageProbe, ProbeConfigError, ProbeError
from assay.state.substrate import Substrate
from assay.verify.loop import VerifyOptions, verify
from local_http import QuietHandler, serve

T = TypeVar("T")

CHROMIUM = shutil.which("chromium")


@pytest.fixture(autouse=True)
def chromium() -> None:
    """Every test here needs Chromium; CI installs it (`make browser`) and must run them."""
    if CHROMIUM is not None:
        return
    reason = "Chromium is not installed: run `make browser` (Debian's chromium package)"
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


class App:
    """The application's state: a counter of page loads, a mode, and switches for tests."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.loads = 0
        self.mode = "LOITER"
        self.stall = False
        self.release = threading.Event()


PAGE = """<!doctype html>
<html><head><title>outpost</title>{stall}</head>
<body>
  <p>Loads: <span id="count">
    {count}
  </span></p>
  <p id="mode" data-armed="{armed}"></p>
  <ul><li class="item">a</li><li class="item">b</li></ul>
  <p id="token">sk-secret-{count}</p>
  <script>
    fetch("/api/mode").then(r => r.json()).then(d => {{
      document.querySelector("#mode").textContent = d.mode;
      document.body.dataset.ready = "yes";
    }});
  </script>
</body></html>"""


class Handler(QuietHandler):
    always = {"Cache-Control": "no-store"}  # noqa: RUF012 (read only)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        app = self.server.app
        path = self.path.partition("?")[0]
        if path == "/":
            with app.lock:
                app.loads += 1
                stall = '<script src="/never.js"></script>' if app.stall else ""
                page = PAGE.format(stall=stall, count=app.loads, armed=str(app.loads % 2 == 0))
            self.send(200, "text/html", page.encode())
        elif path == "/api/mode":
            with app.lock:
                mode = app.mode
            self.send(200, "application/json", f'{{"mode": "{mode}"}}'.encode())
        elif path == "/never.js":
            app.release.wait(30)
            self.send(200, "text/javascript", b"")
        elif path == "/boom":
            self.send(500, "text/html", b"<p>database on fire</p>")
        else:
            self.send(404, "text/plain", b"no such page")


@pytest.fixture
def app() -> Iterator[tuple[App, str]]:
    """The running application and its base URL."""
    state = App()
    with serve(Handler, state, release=state.release.set) as url:
        yield state, url


def run(main: Callable[[], Awaitable[T]]) -> T:
    async def wrapped() -> T:
        return await main()

    return asyncio.run(wrapped())


def reads(probe: PageProbe, times: int) -> list[dict[str, Any]]:
    """``times`` reads of ``probe`` in one event loop, then closes it."""

    async def main() -> list[dict[str, Any]]:
        async with probe:
            return [await probe.read() for _ in range(times)]

    return run(main)


def read_error(probe: PageProbe) -> str:
    async def main() -> str:
        async with probe:
            with pytest.raises(ProbeError) as caught:
                await probe.read()
            return str(caught.value)

    return run(main)


SCRIPT = """async () => ({
  count: Number(document.querySelector("#count").textContent),
  view: {mode: document.querySelector("#mode").textContent, items: [...document.querySelectorAll(".item")].map(li => li.textContent)},
})"""  # noqa: E501


def test_selectors_read_text_numbers_and_attributes_and_follow_changes(
    app: tuple[App, str],
) -> None:
    state, url = app
    probe = PageProbe(
        url + "/",
        selectors={
            "inbox.loads": {"selector": "#count", "as": "number"},
            "inbox.loads_text": "#count",
            "drone.mode": "#mode",
            "drone.armed": {"selector": "#mode", "attribute": "data-armed"},
        },
        ready="body[data-ready]",
    )

    async def main() -> list[dict[str, Any]]:
        async with probe:
            first = await probe.read()
            state.mode = "GUIDED"
            return [first, await probe.read()]

    first, second = run(main)
    assert first == {
        "inbox.loads": 1,
        "inbox.loads_text": "1",
        "drone.mode": "LOITER",
        "drone.armed": "False",
    }
    assert second == {
        "inbox.loads": 2,
        "inbox.loads_text": "2",
        "drone.mode": "GUIDED",
        "drone.armed": "True",
    }
    assert state.loads == 2


def test_each_read_loads_the_page_again_in_one_browser(app: tuple[App, str]) -> None:
    state, url = app
    probe = PageProbe(url + "/", selectors={"loads": {"selector": "#count", "as": "number"}})

    async def main() -> tuple[list[dict[str, Any]], bool, bool]:
        values = [await probe.read()]
        launched = probe.running
        values += [await probe.read(), await probe.read()]
        await probe.aclose()
        return values, launched, probe.running

    values, launched, after_close = run(main)
    assert values == [{"loads": 1}, {"loads": 2}, {"loads": 3}]
    assert state.loads == 3
    assert (launched, after_close) == (True, False)
    assert isinstance(probe, ClosableProbe)


def test_a_read_abandoned_while_chromium_starts_leaves_the_launch_going(
    app: tuple[App, str],
) -> None:
    # The poller abandons a read at the probe's timeout; Chromium's start is not part of it,
    # so on a slow machine the first read was cut off mid-launch, leaving Playwright running
    # and the next read to launch again, and again.
    _, url = app
    probe = PageProbe(url + "/", selectors={"loads": {"selector": "#count", "as": "number"}})

    async def main() -> tuple[bool, dict[str, Any], bool]:
        first = asyncio.ensure_future(probe.read())
        await asyncio.sleep(0)  # it has started the launch
        first.cancel()  # as the poller's deadline does
        with contextlib.suppress(asyncio.CancelledError):
            await first
        launching = probe._starting is not None and not probe._starting.done()
        value = await probe.read()  # takes the browser the abandoned read started
        await probe.aclose()
        return launching, value, probe.running

    launching, value, after_close = run(main)
    assert launching is True
    assert value == {"loads": 1}
    assert after_close is False


def test_a_missing_element_or_attribute_leaves_its_key_out(app: tuple[App, str]) -> None:
    _, url = app
    probe = PageProbe(
        url + "/",
        selectors={
            "loads": {"selector": "#count", "as": "number"},
            "nothing": "#not-on-this-page",
            "nothing_number": {"selector": "#absent", "as": "number"},
            "no_attribute": {"selector": "#count", "attribute": "data-none"},
        },
    )
    assert reads(probe, 1) == [{"loads": 1}]


def test_a_selector_read_before_the_page_renders_it_reads_what_is_there(
    app: tuple[App, str],
) -> None:
    # Without ready=, the read happens at the load event; the mode is rendered after a fetch
    # that may or may not have landed by then, so only the server-rendered counter is certain.
    _, url = app
    probe = PageProbe(url + "/", selectors={"count": "#count"}, wait_until="domcontentloaded")
    assert reads(probe, 1) == [{"count": "1"}]


def test_script_returns_the_state_object_and_follows_changes(app: tuple[App, str]) -> None:
    state, url = app
    probe = PageProbe(url + "/", script=SCRIPT, ready="body[data-ready]", name="outpost page")

    async def main() -> list[dict[str, Any]]:
        async with probe:
            first = await probe.read()
            state.mode = "RTL"
            return [first, await probe.read()]

    assert run(main) == [
        {"count": 1, "view": {"mode": "LOITER", "items": ["a", "b"]}},
        {"count": 2, "view": {"mode": "RTL", "items": ["a", "b"]}},
    ]


def test_a_script_that_does_not_return_a_json_object_fails_the_read(
    app: tuple[App, str],
) -> None:
    _, url = app
    here = "the script of probe 'page'"

    def error(script: str) -> str:
        return read_error(PageProbe(url + "/", script=script, name="page"))

    assert error("() => [1, 2]") == (
        f"{here} returned an array; it must return a JSON object, whose keys become state keys"
    )
    assert error("() => document.title") == (
        f"{here} returned a string; it must return a JSON object, whose keys become state keys"
    )
    assert error("async () => undefined").startswith(f"{here} returned undefined;")
    assert error("() => ({a: {b: [1, undefined]}})") == (
        f"{here} returned an object whose 'a.b[1]' is undefined, which is not JSON; return only "
        "objects, arrays, strings, finite numbers, booleans and null"
    )
    assert error("() => ({when: new Date()})").startswith(
        f"{here} returned an object whose 'when' is a Date object, which is not JSON;"
    )
    assert error("() => ({ratio: 1 / 0})").startswith(
        f"{here} returned an object whose 'ratio' is a non-finite number, which is not JSON;"
    )
    thrown = error('() => { throw new Error(document.querySelector("#token").textContent) }')
    assert thrown == (
        f"{here} threw Error (the message is not repeated: it may quote the page); run it in "
        "the browser's console to see it"
    )


def test_selector_failures_name_the_key_and_never_quote_the_page(app: tuple[App, str]) -> None:
    _, url = app
    token = {"selector": "#token", "as": "number"}
    assert read_error(PageProbe(url + "/", selectors={"user.token": token})) == (
        "the text of the element the selector '#token' for 'user.token' selects is not a "
        "number; 'as': 'number' reads a JSON number such as 42 or -1.5 (no units, currency "
        "signs or thousands separators), so read it as text or with a script"
    )
    assert read_error(PageProbe(url + "/", selectors={"items": ".item"})) == (
        "the selector '.item' for 'items' matches 2 elements; a state key reads one element, "
        "so make the selector match only it (an id, :nth-of-type(), a data- attribute)"
    )
    assert read_error(PageProbe(url + "/", selectors={"x": "p[["})) == (
        "the selector 'p[[' for 'x' is not a valid CSS selector"
    )
    assert read_error(PageProbe(url + "/boom?key=k", selectors={"x": "p"})) == (
        f"GET {url}/boom?… answered HTTP 500 Internal Server Error; expected the page (2xx)"
    )


def test_a_page_that_never_finishes_loading_fails_at_the_timeout(app: tuple[App, str]) -> None:
    state, url = app
    state.stall = True
    probe = PageProbe(url + "/", selectors={"loads": "#count"}, timeout=1.0)

    async def main() -> tuple[str, dict[str, Any]]:
        async with probe:
            with pytest.raises(ProbeError) as caught:
                await probe.read()
            state.stall = False
            return str(caught.value), await probe.read()

    message, after = run(main)
    assert message == (
        f"reading {url}/ timed out after 1 s while loading the page; the read failed "
        "(timeout= bounds loading, waiting and reading together)"
    )
    assert after == {"loads": "2"}  # the same probe reads again once the page loads


def test_a_ready_selector_that_never_appears_fails_at_the_timeout(app: tuple[App, str]) -> None:
    _, url = app
    probe = PageProbe(url + "/", selectors={"x": "#count"}, ready="#never", timeout=3)
    assert read_error(probe) == (
        f"reading {url}/ timed out after 3 s while waiting for the ready selector '#never'; "
        "the read failed (timeout= bounds loading, waiting and reading together)"
    )


def test_a_failed_read_becomes_the_substrates_last_error() -> None:
    async def main() -> str | None:
        probe = PageProbe("http://127.0.0.1:9/?token=t", selectors={"x": "p"}, name="page")
        substrate = Substrate(probes=[probe], clock=VirtualClock())
        assert substrate.poller is not None
        await substrate.poller.read_once()
        await substrate.stop()
        return substrate.poller.health("page").last_error

    assert run(main) == (
        "reading http://127.0.0.1:9/?… failed while loading the page: the browser could not "
        "load it (net::ERR_UNSAFE_PORT)"
    )


def test_a_page_probe_makes_a_contract_pass_once_the_page_shows_the_value(
    app: tuple[App, str],
) -> None:
    state, url = app

    async def main() -> tuple[Any, bool, bool]:
        clock = VirtualClock()
        probe = PageProbe(
            url + "/", selectors={"drone.mode": "#mode"}, ready="body[data-ready]", name="page"
        )
        substrate = Substrate(probes=[probe], clock=clock)
        poller = substrate.poller
        assert poller is not None
        await poller.read_once()
        before = substrate.store.current
        state.mode = "GUIDED"  # the action; the page shows it from its next load
        waiting = asyncio.create_task(
            verify(
                compile_expression('drone.mode == "GUIDED"'),
                substrate.store,
                before=before,
                options=VerifyOptions(timeout_ms=5000, poll_interval_ms=500),
                clock=clock,
            )
        )
        await clock.settle()
        held_early = waiting.done()
        await poller.read_once()
        outcome = await waiting
        await substrate.stop()
        return outcome, held_early, probe.running

    outcome, held_early, running = run(main)
    assert held_early is False
    assert outcome.passed is True
    assert [(c.key, c.before, c.after) for c in outcome.changed_fields] == [
        ("drone.mode", "LOITER", "GUIDED")
    ]
    assert running is False  # the substrate's stop closed the browser


def test_page_probe_configuration_errors() -> None:
    def refused(**kwargs: Any) -> tuple[str, str]:
        with pytest.raises(ProbeConfigError) as caught:
            PageProbe(kwargs.pop("url", "http://app/"), **kwargs)
        return caught.value.parameter, str(caught.value)

    assert refused(url="file:///tmp/x.html", script="() => ({})") == (
        "url",
        "PageProbe loads http:// or https:// URLs, got 'file:///tmp/x.html'",
    )
    assert refused() == (
        "selectors",
        "a PageProbe reads either selectors= (state keys to CSS selectors) or script= (a "
        "JavaScript function returning a JSON object), and was given neither",
    )
    assert refused(selectors={"a": "p"}, script="() => ({})")[1].endswith("not both")
    assert refused(selectors={"a": "p", "a.b": "q"}) == (
        "selectors",
        "state key 'a' is a parent of 'a.b'; a probe's keys must not overlap, so read the "
        "parent whole or only its children",
    )
    assert refused(selectors={"a": {"selector": "p", "as": "int"}}) == (
        "selectors",
        "the selector for 'a' has 'as' 'int'; expected 'text' or 'number'",
    )
    assert refused(selectors={"a": {"css": "p"}})[1].startswith(
        "the selector for 'a' has unknown fields ['css'];"
    )
    assert refused(selectors={"a": ""}) == (
        "selectors",
        "the selector for 'a' must be CSS text, got ''",
    )
    assert refused(script="() => ({})", timeout=0) == (
        "timeout",
        "timeout is a positive number of seconds, got 0",
    )
    assert refused(script="() => ({})", wait_until="idle")[0] == "wait_until"


def test_assay_verify_reads_a_page_from_the_command_line(
    app: tuple[App, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A page could be read only by writing an application that made a PageProbe.
    from assay.cli.main import main

    _, url = app
    base = ["--page", url + "/", "--ready", "body[data-ready]", "--timeout-ms", "0"]
    assert main(["verify", "drone.mode === 'LOITER'", *base, "--select", "drone.mode=#mode"]) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert outcome["narrative"].endswith('drone.mode remained "LOITER".')
    script = tmp_path / "state.js"
    script.write_text('() => ({loads: Number(document.querySelector("#count").textContent)})')
    assert main(["verify", "loads > 100", *base, "--script", str(script)]) == 1
    assert json.loads(capsys.readouterr().out)["narrative"].startswith("loads remained 2 ")
    for extra, says in (
        ([], "--page reads the state by --select KEY=CSS (repeat for several) or by --script"),
        (["--select", "mode"], "--select 'mode' is not KEY=CSS, such as inbox.unread=#unread"),
        (["--script", str(tmp_path / "none.js")], "--script " + str(tmp_path / "none.js")),
    ):
        assert main(["verify", "true", *base, *extra]) == 2
        assert says in capsys.readouterr().err
    assert main(["verify", "true", "--state", "-", "--select", "a=#b"]) == 2
    assert "--select is about reading a page, so it goes with --page" in capsys.readouterr().err
