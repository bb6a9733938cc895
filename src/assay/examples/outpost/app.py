"""The outpost: a small real application with an inbox and a drone, and its own HTTP API.

It knows nothing of assay, and behaves as the applications agents meet: a sent message lands
only after a delivery delay, "mark all read" answers ``200 {"ok": true}`` and does nothing,
a drone mode change takes effect after a delay, and releasing the payload cannot be undone.
The inbox pushes its changes to subscribers (``subscribe``); the drone is only observable by
polling its telemetry, which fails while the radio link (``POST /drone/link``) is ``flaky``
(every other read) or ``down``.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any, Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

MODES: Final = ("LOITER", "GUIDED", "RTL", "LAND")
LINKS: Final = ("ok", "flaky", "down")
RECENT_SENT: Final = 100
"""The inbox shows only the most recent sent messages, as mail clients do."""

Listener = Callable[[dict[str, Any]], None]


class Outpost:
    """The application's state and behaviour; ``routes`` serve it over HTTP."""

    def __init__(
        self,
        *,
        delivery_delay: float = 0.4,
        mode_delay: float = 0.3,
        release_delay: float = 0.2,
        unread: int = 3,
        sent_count: int = 14,
        mode: str = "LOITER",
    ) -> None:
        self.delivery_delay = delivery_delay
        self.mode_delay = mode_delay
        self.release_delay = release_delay
        self.state: dict[str, Any] = {
            "inbox": {"unread": unread, "sent_count": sent_count, "sent": {}},
            "drone": {"mode": mode, "payload": "stowed", "battery": 87},
        }
        self.link = "ok"
        self.listeners: list[Listener] = []
        self._reads = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def subscribe(self, listener: Listener) -> None:
        """Call ``listener`` with each inbox change, as dotted keys and new values."""
        self.listeners.append(listener)

    def _push(self, values: dict[str, Any]) -> None:
        for listener in list(self.listeners):
            listener(values)

    def _later(self, delay: float, effect: Callable[[], None]) -> None:
        async def run() -> None:
            await asyncio.sleep(delay)
            effect()

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def send(self, message_id: str, to: str, subject: str) -> None:
        """Queue a message; it is delivered after ``delivery_delay``."""

        def deliver() -> None:
            inbox = self.state["inbox"]
            sent: dict[str, Any] = inbox["sent"]
            if message_id in sent:
                return
            inbox["sent_count"] += 1
            sent[message_id] = {"to": to, "subject": subject, "status": "sent"}
            changes: dict[str, Any] = {
                "inbox.sent_count": inbox["sent_count"],
                f"inbox.sent.{message_id}": sent[message_id],
            }
            while len(sent) > RECENT_SENT:
                oldest = next(iter(sent))
                del sent[oldest]
                changes[f"inbox.sent.{oldest}"] = None
            self._push(changes)

        self._later(self.delivery_delay, deliver)

    def set_mode(self, mode: str) -> None:
        """Switch the drone's flight mode after ``mode_delay``."""

        def switch() -> None:
            self.state["drone"]["mode"] = mode

        self._later(self.mode_delay, switch)

    def release_payload(self) -> None:
        """Drop the payload after ``release_delay``. There is no way back."""

        def release() -> None:
            self.state["drone"]["payload"] = "released"

        self._later(self.release_delay, release)

    def telemetry(self) -> dict[str, Any] | None:
        """The drone's state, or ``None`` when the link loses this read."""
        self._reads += 1
        if self.link == "down" or (self.link == "flaky" and self._reads % 2 == 0):
            return None
        drone: dict[str, Any] = copy.deepcopy(self.state["drone"])
        return drone

    @property
    def routes(self) -> list[Route]:
        """The HTTP API."""
        return [
            Route("/state", self._get_state, methods=["GET"]),
            Route("/drone/telemetry", self._get_telemetry, methods=["GET"]),
            Route("/inbox/send", self._post_send, methods=["POST"]),
            Route("/inbox/mark-all-read", self._post_mark_all_read, methods=["POST"]),
            Route("/drone/mode", self._post_mode, methods=["POST"]),
            Route("/drone/release-payload", self._post_release, methods=["POST"]),
            Route("/drone/link", self._post_link, methods=["POST"]),
        ]

    def asgi(self) -> Starlette:
        """The application as an ASGI app."""
        return Starlette(routes=self.routes)

    async def _get_state(self, request: Request) -> JSONResponse:
        return JSONResponse(self.state)

    async def _get_telemetry(self, request: Request) -> JSONResponse:
        drone = self.telemetry()
        if drone is None:
            return JSONResponse({"error": f"telemetry link {self.link}"}, status_code=503)
        return JSONResponse(drone)

    async def _post_send(self, request: Request) -> JSONResponse:
        body = await _json(request)
        message_id, to = body.get("message_id"), body.get("to")
        if not isinstance(message_id, str) or not isinstance(to, str):
            return JSONResponse({"error": "message_id and to are strings"}, status_code=400)
        self.send(message_id, to, str(body.get("subject", "")))
        return JSONResponse({"queued": message_id}, status_code=202)

    async def _post_mark_all_read(self, request: Request) -> JSONResponse:
        return JSONResponse({"ok": True})  # the bug: nothing is marked

    async def _post_mode(self, request: Request) -> JSONResponse:
        mode = (await _json(request)).get("mode")
        if mode not in MODES:
            return JSONResponse({"error": f"mode is one of {', '.join(MODES)}"}, status_code=400)
        self.set_mode(mode)
        return JSONResponse({"requested": mode}, status_code=202)

    async def _post_release(self, request: Request) -> JSONResponse:
        self.release_payload()
        return JSONResponse({"requested": "release"}, status_code=202)

    async def _post_link(self, request: Request) -> JSONResponse:
        link = (await _json(request)).get("link")
        if link not in LINKS:
            return JSONResponse({"error": f"link is one of {', '.join(LINKS)}"}, status_code=400)
        self.link = link
        return JSONResponse({"link": link})


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}
