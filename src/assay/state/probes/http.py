"""``HttpProbe``: GET a JSON endpoint of the application and own what it answers.

The whole document, or the part an RFC 6901 pointer selects, goes under one state key
(``into="inbox"``); without ``into`` it must be an object, and its top-level keys are the
keys the probe owns. Any answer other than a 2xx JSON document is a failed read whose
message names the URL, the status and what was wrong, and never quotes the body: it can hold
what redaction withholds. So is a document that gives one key twice in an object (JSON
readers differ on which one counts), and a response that has not ended within ``timeout``
(the whole request, however slowly the server keeps sending). Redirects are followed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any, Final

import httpx

from assay.defaults import HTTP_READ_TIMEOUT
from assay.errors import ContractError, ProbeConfigError, ProbeError
from assay.json.path import format_path, json_type_name, parse_path
from assay.state.canonical import RepeatedKeyError, unique_keys
from assay.state.probes.pointer import JsonPointer
from assay.state.probes.probe import (
    DEFAULT_INTERVAL,
    check_interval,
    check_timeout,
    display_url,
    grace,
    no_answer,
)

_PHASES: Final = {
    httpx.ConnectTimeout: "connecting",
    httpx.WriteTimeout: "sending the request",
    httpx.ReadTimeout: "waiting for the response",
    httpx.PoolTimeout: "waiting for a free connection",
}


def _reject_constant(name: str) -> Any:
    raise ValueError(f"it holds {name}, which JSON does not allow")


def _where_broken(exc: ValueError) -> str:
    """Where and how a body failed to parse as JSON, without quoting any of it."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    if isinstance(exc, UnicodeDecodeError):
        return f"it is not {exc.encoding} text (byte {exc.start})"
    return str(exc)


def _body(response: httpx.Response) -> str:
    """The body described by its size and type: never quoted, as it can hold secrets."""
    size = len(response.content)
    if not size:
        return "an empty body"
    content_type = response.headers.get("content-type", "no content-type")
    return f"a body of {size} byte{'' if size == 1 else 's'} ({content_type})"


def _redirected(response: httpx.Response) -> str:
    """Where a followed redirect led, for a message about the response that ended it."""
    return f" (redirected to {display_url(str(response.url))})" if response.history else ""


class HttpProbe:
    """Reads a JSON endpoint with ``GET``; ``client`` given is used and left open."""

    def __init__(
        self,
        url: str,
        *,
        into: str | None = None,
        pointer: str | None = None,
        interval: float = DEFAULT_INTERVAL,
        timeout: float = HTTP_READ_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        client: httpx.AsyncClient | None = None,
        name: str | None = None,
    ) -> None:
        try:
            scheme = httpx.URL(url).scheme
        except httpx.InvalidURL as exc:
            raise ProbeConfigError(
                f"{display_url(url)!r} is not a valid URL: {exc}", parameter="url"
            ) from None
        if scheme not in ("http", "https"):
            raise ProbeConfigError(
                f"HttpProbe reads http:// or https:// URLs, got {display_url(url)!r}",
                parameter="url",
            )
        if into is not None:
            try:
                parse_path(into)
            except ContractError as exc:
                raise ProbeConfigError(
                    f"into {into!r} is not a state key: {exc}", parameter="into"
                ) from None
        self.url = url
        self.into = into
        self.pointer = JsonPointer(pointer) if pointer is not None else None
        self.interval = check_interval(interval)
        self.timeout = check_timeout(timeout)
        self.headers = {"Accept": "application/json", **(headers or {})}
        self.name = name if name is not None else display_url(url)
        self._shown = display_url(url)
        self._given_client = client
        self._own_client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"HttpProbe({self._shown!r}, into={self.into!r}, name={self.name!r})"

    async def __aenter__(self) -> HttpProbe:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def read(self) -> dict[str, Any]:
        """GET the URL and answer the owned keys; ``ProbeError`` on any other outcome."""
        request = f"GET {self._shown}"
        try:
            # The whole request, however slowly its body comes; a little grace lets httpx's
            # own timeouts say which phase stalled, when one did.
            async with asyncio.timeout(self.timeout + grace(self.timeout)):
                response = await self._client().get(
                    self.url, headers=self.headers, timeout=self.timeout, follow_redirects=True
                )
        except httpx.TimeoutException as exc:
            phase = _PHASES.get(type(exc), "waiting")
            raise ProbeError(
                f"{request} timed out after {self.timeout:g} s while {phase}",
                source=self._shown,
            ) from exc
        except TimeoutError as exc:
            raise ProbeError(no_answer(request, self.timeout), source=self._shown) from exc
        except httpx.HTTPError as exc:
            what = "could not connect" if isinstance(exc, httpx.ConnectError) else "failed"
            raise ProbeError(
                f"{request} {what}: {exc or type(exc).__name__}", source=self._shown
            ) from exc
        status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
        answered = f"{request} answered {status}{_redirected(response)}"
        if not response.is_success:
            raise ProbeError(
                f"{answered}, expected a 2xx JSON response; {_body(response)}",
                source=self._shown,
            )
        try:
            document = json.loads(
                response.content, parse_constant=_reject_constant, object_pairs_hook=unique_keys
            )
        except RepeatedKeyError as exc:
            raise ProbeError(
                f"{answered} with JSON that gives the key {exc.key!r} twice in one object; "
                "JSON readers differ on which one counts, so neither is taken",
                source=self._shown,
            ) from exc
        except ValueError as exc:
            raise ProbeError(
                f"{answered} with {_body(response)} that is not JSON: {_where_broken(exc)}",
                source=self._shown,
            ) from exc
        return self._select(document, request)

    async def aclose(self) -> None:
        """Close the client this probe made for itself; a given client is left open."""
        client, self._own_client = self._own_client, None
        if client is not None:
            await client.aclose()

    def _client(self) -> httpx.AsyncClient:
        if self._given_client is not None:
            return self._given_client
        if self._own_client is None:
            self._own_client = httpx.AsyncClient(timeout=self.timeout)
        return self._own_client

    def _select(self, document: Any, request: str) -> dict[str, Any]:
        value = document
        where = "the response"
        if self.pointer is not None:
            try:
                value = self.pointer.resolve(document)
            except LookupError as exc:
                raise ProbeError(
                    f"JSON pointer {self.pointer.text!r} does not resolve in the response of "
                    f"{request}: {exc}",
                    source=self._shown,
                ) from exc
            where = f"the value at JSON pointer {self.pointer.text!r}"
        if self.into is not None:
            return {self.into: value}
        if not isinstance(value, dict):
            raise ProbeError(
                f"{where} of {request} is {json_type_name(value)}; it must be an object, "
                "whose keys become state keys, unless the probe is given a state key to keep "
                "it whole under (into='key'; assay verify --into KEY)",
                source=self._shown,
            )
        return {format_path((key,)): item for key, item in value.items()}
