"""``PageProbe``: load a page of the application in headless Chromium and read its state.

The state comes from CSS selectors (an element's text or attribute per state key) or from a
JavaScript function evaluated in the page that returns a JSON object. Each read opens a fresh
browser context, loads the URL, waits for ``load`` (and the ``ready`` selector), reads and
closes the context, within one ``timeout``; messages never quote what the page holds.
Playwright is an optional dependency (``pip install 'assay[page]'``); docs/verification.md,
"A page in headless Chromium", has the rules.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from assay.errors import ContractError, ProbeConfigError, ProbeError
from assay.json.path import format_path
from assay.state.probes.probe import DEFAULT_INTERVAL, check_interval, check_keys, display_url

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Playwright

DEFAULT_TIMEOUT: Final = 5.0
"""Seconds one read may take by default: loading the page, waiting for it, reading it."""

LAUNCH_TIMEOUT: Final = 30.0
"""Seconds Chromium may take to start, once per probe; not part of any read's timeout."""

EXECUTABLES: Final = ("chromium", "chromium-browser")
"""Looked up on ``PATH`` when no executable is given: Debian's and Ubuntu's Chromium."""

WaitUntil = Literal["load", "domcontentloaded", "networkidle"]
_WAIT_UNTIL: Final = ("load", "domcontentloaded", "networkidle")
_NUMBER: Final = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_NET_ERROR: Final = re.compile(r"net::ERR_[A-Z_]+")

# One evaluation reads every selector, so a read sees one state of the page. Each answer is
# how many elements matched and, for exactly one, its text (or attribute; null when absent).
_READ_SELECTORS: Final = """(specs) => specs.map(([selector, attribute]) => {
  let found;
  try { found = document.querySelectorAll(selector); } catch (error) { return {invalid: true}; }
  if (found.length !== 1) return {count: found.length};
  const element = found[0];
  if (attribute !== null) return {count: 1, text: element.getAttribute(attribute)};
  const text = element instanceof HTMLElement ? element.innerText : element.textContent;
  return {count: 1, text: text};
})"""

# The script runs inside this wrapper, which checks in the page that its result is a JSON
# object and answers JSON text, or what was wrong: never the offending value itself.
_RUN_SCRIPT: Final = """async () => {
  const kind = (value) => {
    if (value === null) return "null";
    if (Array.isArray(value)) return "an array";
    if (typeof value === "object") {
      const proto = Object.getPrototypeOf(value);
      if (proto === Object.prototype || proto === null) return "an object";
      const name = proto && proto.constructor && proto.constructor.name;
      return name ? "a " + name + " object" : "an exotic object";
    }
    if (typeof value === "number" && !Number.isFinite(value)) return "a non-finite number";
    return typeof value === "undefined" ? "undefined" : "a " + typeof value;
  };
  const problem = (value, path, depth) => {
    const what = kind(value);
    if (["null", "a string", "a boolean", "a number"].includes(what)) return null;
    if (depth > 100) return {path, kind: "nested more than 100 levels deep"};
    if (what === "an array") {
      for (let i = 0; i < value.length; i++) {
        const found = problem(value[i], [...path, i], depth + 1);
        if (found) return found;
      }
      return null;
    }
    if (what === "an object") {
      for (const key of Object.keys(value)) {
        const found = problem(value[key], [...path, key], depth + 1);
        if (found) return found;
      }
      return null;
    }
    return {path, kind: what};
  };
  let value;
  try {
    const script = (
/*SCRIPT*/
    );
    value = await (typeof script === "function" ? script() : script);
  } catch (error) {
    const name = error !== null && typeof error === "object" && typeof error.name === "string";
    return {threw: name ? error.name : kind(error)};
  }
  if (kind(value) !== "an object") return {result: kind(value)};
  const found = problem(value, [], 0);
  if (found) return {problem: found};
  return {json: JSON.stringify(value)};
}"""


@dataclass(frozen=True, slots=True)
class Selector:
    """One state key read from one element: its text, or an ``attribute``; as a number?"""

    key: str
    css: str
    attribute: str | None = None
    number: bool = False

    @classmethod
    def parse(cls, key: str, spec: str | Mapping[str, str]) -> Selector:
        """A selector as given: CSS text, or ``{"selector": css, "as", "attribute"}``."""
        if isinstance(spec, str):
            return cls(key, _css(key, spec))
        if not isinstance(spec, Mapping):
            raise ProbeConfigError(
                f"the selector for {key!r} must be CSS text or a mapping with 'selector', got "
                f"{type(spec).__name__}",
                parameter="selectors",
            )
        unknown = sorted(set(spec) - {"selector", "as", "attribute"})
        if unknown or "selector" not in spec:
            problem = f"unknown fields {unknown}" if unknown else "no 'selector'"
            raise ProbeConfigError(
                f"the selector for {key!r} has {problem}; write {{'selector': css}} with "
                "optional 'as': 'text' | 'number' and 'attribute': name",
                parameter="selectors",
            )
        read_as = spec.get("as", "text")
        if read_as not in ("text", "number"):
            raise ProbeConfigError(
                f"the selector for {key!r} has 'as' {read_as!r}; expected 'text' or 'number'",
                parameter="selectors",
            )
        attribute = spec.get("attribute")
        if attribute is not None and (not isinstance(attribute, str) or not attribute):
            raise ProbeConfigError(
                f"the selector for {key!r} has 'attribute' {attribute!r}; it must name one",
                parameter="selectors",
            )
        return cls(key, _css(key, spec["selector"]), attribute, read_as == "number")

    def value(self, answer: Mapping[str, Any], source: str) -> tuple[bool, Any]:
        """``(found, value)`` from the page's answer; ``ProbeError`` if it cannot be read."""
        here = f"the selector {self.css!r} for {self.key!r}"
        if answer.get("invalid"):
            raise ProbeError(f"{here} is not a valid CSS selector", source=source)
        count = answer["count"]
        if count > 1:
            raise ProbeError(
                f"{here} matches {count} elements; a state key reads one element, so make "
                "the selector match only it (an id, :nth-of-type(), a data- attribute)",
                source=source,
            )
        text = answer.get("text")
        if count == 0 or text is None:
            return False, None
        text = text.strip()
        if not self.number:
            return True, text
        match = _NUMBER.fullmatch(text)
        number = float(text) if match and (match[1] or match[2]) else int(text) if match else None
        if number is None or number in (float("inf"), float("-inf")):
            what = f"attribute {self.attribute!r}" if self.attribute else "text"
            raise ProbeError(
                f"the {what} of the element {here} selects is not a number; 'as': 'number' "
                "reads a JSON number such as 42 or -1.5 (no units, currency signs or thousands "
                "separators), so read it as text or with a script",
                source=source,
            )
        return True, number


def _css(key: str, css: object) -> str:
    if not isinstance(css, str) or not css.strip():
        raise ProbeConfigError(
            f"the selector for {key!r} must be CSS text, got {css!r}", parameter="selectors"
        )
    return css


class PageProbe:
    """Reads state from a page in headless Chromium: by ``selectors`` or by ``script``.

    ``selectors`` maps dotted state keys to CSS selectors; each must match at most one
    element, whose text (trimmed) is the key's value; with ``{"selector": css, "as":
    "number"}`` the text must be a JSON number. An element that is not there, or lacks the
    ``attribute`` asked for, leaves its key out of the read: absent, never ``null``.
    ``script`` is a JavaScript function, run with no arguments (it may be ``async``), that
    returns a JSON object; its top-level keys are the keys the probe owns, as for an
    ``HttpProbe`` without ``into``. ``ready`` is a CSS selector to wait for before reading,
    for pages that render their state after loading.
    """

    def __init__(
        self,
        url: str,
        *,
        selectors: Mapping[str, str | Mapping[str, str]] | None = None,
        script: str | None = None,
        ready: str | None = None,
        wait_until: WaitUntil = "load",
        interval: float = DEFAULT_INTERVAL,
        timeout: float = DEFAULT_TIMEOUT,
        executable: str | None = None,
        args: Sequence[str] = (),
        name: str | None = None,
    ) -> None:
        shown = display_url(url)
        if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
            raise ProbeConfigError(
                f"PageProbe loads http:// or https:// URLs, got {shown!r}", parameter="url"
            )
        if (selectors is None) == (script is None):
            raise ProbeConfigError(
                "a PageProbe reads either selectors= (state keys to CSS selectors) or "
                "script= (a JavaScript function returning a JSON object), "
                + ("not both" if script is not None else "and was given neither"),
                parameter="script" if script is not None else "selectors",
            )
        if selectors is not None:
            if not selectors:
                raise ProbeConfigError("selectors= needs at least one key", parameter="selectors")
            try:
                check_keys(selectors, "selectors")
            except ContractError as exc:
                raise ProbeConfigError(
                    f"selectors has a key that is not a state key: {exc}", parameter="selectors"
                ) from None
        if script is not None and (not isinstance(script, str) or not script.strip()):
            raise ProbeConfigError(
                f"script is the source text of a JavaScript function, got {script!r}",
                parameter="script",
            )
        if ready is not None and (not isinstance(ready, str) or not ready.strip()):
            raise ProbeConfigError(f"ready is a CSS selector, got {ready!r}", parameter="ready")
        if wait_until not in _WAIT_UNTIL:
            raise ProbeConfigError(
                f"wait_until is one of {list(_WAIT_UNTIL)}, got {wait_until!r}",
                parameter="wait_until",
            )
        if not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
            raise ProbeConfigError(
                f"timeout is a positive number of seconds, got {timeout!r}", parameter="timeout"
            )
        self.url = url
        self.selectors = (
            tuple(Selector.parse(key, spec) for key, spec in selectors.items())
            if selectors is not None
            else None
        )
        self.script = script
        self.ready = ready
        self.wait_until: WaitUntil = wait_until
        self.interval = check_interval(interval)
        self.timeout = float(timeout)
        self.executable = executable
        self.args = tuple(args)
        self.name = name if name is not None else shown
        self._shown = shown
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._starting: asyncio.Future[Browser] | None = None

    def __repr__(self) -> str:
        mode = f"keys={[s.key for s in self.selectors]}" if self.selectors else "script=..."
        return f"PageProbe({self._shown!r}, {mode}, name={self.name!r})"

    @property
    def running(self) -> bool:
        """Whether Chromium is launched: from the first read until ``aclose()``."""
        return self._browser is not None and self._browser.is_connected()

    async def __aenter__(self) -> PageProbe:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def read(self) -> dict[str, Any]:
        """Load the page in a fresh context and read the owned keys; ``ProbeError`` if not."""
        browser = await self._launch()
        context: BrowserContext | None = None
        phase = "loading the page"
        try:
            async with asyncio.timeout(self.timeout):
                context = await browser.new_context()
                page = await context.new_page()
                response = await page.goto(self.url, wait_until=self.wait_until, timeout=0)
                if response is not None and not response.ok:
                    status = f"HTTP {response.status} {response.status_text}".rstrip()
                    raise ProbeError(
                        f"GET {self._shown} answered {status}; expected the page (2xx)",
                        source=self._shown,
                    )
                if self.ready is not None:
                    phase = f"waiting for the ready selector {self.ready!r}"
                    await page.wait_for_selector(self.ready, state="attached", timeout=0)
                if self.selectors is not None:
                    phase = "reading the selectors"
                    specs = [[s.css, s.attribute] for s in self.selectors]
                    answers = await page.evaluate(_READ_SELECTORS, specs)
                    return self._from_selectors(answers)
                phase = "running the script"
                assert self.script is not None
                outcome = await page.evaluate(
                    _RUN_SCRIPT.replace("/*SCRIPT*/", self.script.strip())
                )
                return self._from_script(outcome)
        except TimeoutError:
            raise ProbeError(
                f"reading {self._shown} timed out after {self.timeout:g} s while {phase}; "
                "the read failed (timeout= bounds loading, waiting and reading together)",
                source=self._shown,
            ) from None
        except ProbeError:
            raise
        except Exception as exc:
            raise ProbeError(
                f"reading {self._shown} failed while {phase}: {self._browser_message(exc)}",
                source=self._shown,
            ) from exc
        finally:
            if context is not None:
                await self._close_context(context)

    async def aclose(self) -> None:
        """Close Chromium and Playwright; a later read launches them again."""
        starting, self._starting = self._starting, None
        if starting is not None and not starting.done():
            starting.cancel()  # its own clean-up closes what it had started
            with contextlib.suppress(BaseException):
                await starting
        await self._stop()

    async def _stop(self) -> None:
        browser, self._browser = self._browser, None
        playwright, self._playwright = self._playwright, None
        try:
            if browser is not None:
                await browser.close()
        finally:
            if playwright is not None:
                await playwright.stop()

    async def launch(self) -> None:
        """Start Chromium now, rather than in the first read (where a slow start may take
        longer than a read's timeout); ``ProbeError`` if it cannot start."""
        await self._launch()

    async def _launch(self) -> Browser:
        """The running browser, launched if need be. The launch goes on in a task of its own
        when the read that started it is abandoned at the poller's deadline (a slow first
        start fails that read, not every read): a later read takes the browser it made."""
        if self._browser is not None and self._browser.is_connected():
            return self._browser  # launched, and not crashed since
        if self._starting is None or self._starting.done():
            self._starting = asyncio.ensure_future(self._start_browser())
            # Its failure is the next read's to report; retrieved here, it is never logged
            # as an exception nobody retrieved when the read that started it was abandoned.
            self._starting.add_done_callback(_retrieved)
        return await asyncio.shield(self._starting)

    async def _start_browser(self) -> Browser:
        """Launch Playwright and Chromium; whatever fails or is cancelled is closed again."""
        await self._stop()
        try:
            from playwright.async_api import async_playwright
        except ImportError:
            raise ProbeError(
                "PageProbe needs Playwright, which is not installed; install assay's "
                "'page' extra (pip install 'assay[page]')",
                source=self._shown,
            ) from None
        executable = self.executable or next(
            (found for name in EXECUTABLES if (found := shutil.which(name))), None
        )
        self._playwright = await async_playwright().start()
        try:
            self._browser = await self._playwright.chromium.launch(
                executable_path=executable,
                args=list(self.args),
                headless=True,
                timeout=LAUNCH_TIMEOUT * 1000,
            )
        except asyncio.CancelledError:
            await self._stop()
            raise
        except Exception as exc:
            await self._stop()
            where = executable or "Playwright's own Chromium"
            raise ProbeError(
                f"could not launch Chromium ({where}): {_first_line(exc)}; install "
                "Debian's chromium package, or pass executable= the path of a Chromium",
                source=self._shown,
            ) from exc
        return self._browser

    async def _close_context(self, context: BrowserContext) -> None:
        try:
            async with asyncio.timeout(LAUNCH_TIMEOUT):
                await context.close()
        except Exception:
            # A browser that cannot close a context is wedged: start afresh next read.
            await self.aclose()

    def _browser_message(self, exc: Exception) -> str:
        """What the browser said, without the page's content and with the URL as shown."""
        net = _NET_ERROR.search(str(exc))
        if net is not None:
            return f"the browser could not load it ({net[0]})"
        return _first_line(exc).replace(self.url, self._shown)

    def _from_selectors(self, answers: list[dict[str, Any]]) -> dict[str, Any]:
        assert self.selectors is not None
        values: dict[str, Any] = {}
        for selector, answer in zip(self.selectors, answers, strict=True):
            found, value = selector.value(answer, self._shown)
            if found:
                values[selector.key] = value
        return values

    def _from_script(self, outcome: dict[str, Any]) -> dict[str, Any]:
        here = f"the script of probe {self.name!r}"
        if "threw" in outcome:
            raise ProbeError(
                f"{here} threw {outcome['threw']} (the message is not repeated: it may quote "
                "the page); run it in the browser's console to see it",
                source=self._shown,
            )
        if "result" in outcome:
            raise ProbeError(
                f"{here} returned {outcome['result']}; it must return a JSON object, whose "
                "keys become state keys",
                source=self._shown,
            )
        if "problem" in outcome:
            path = _format(outcome["problem"]["path"])
            raise ProbeError(
                f"{here} returned an object whose {path} is {outcome['problem']['kind']}, "
                "which is not JSON; return only objects, arrays, strings, finite numbers, "
                "booleans and null",
                source=self._shown,
            )
        document = json.loads(outcome["json"])
        return {format_path((key,)): value for key, value in document.items()}


def _format(path: list[str | int]) -> str:
    text = ""
    for segment in path:
        part = f"[{segment}]" if isinstance(segment, int) else format_path((segment,))
        text += part if part.startswith("[") or not text else "." + part
    return repr(text)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _retrieved(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
