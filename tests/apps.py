"""A small real application for tests: an HTTP server whose state changes land late.

``GET /state`` returns the state as JSON. ``POST /send`` increments ``inbox.sent_count``
after ``delay`` seconds (a timer thread, like a mail queue); ``POST /noop`` accepts and does
nothing (a silent no-op); ``POST /mode/<name>`` sets ``drone.mode`` after ``delay``.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class DelayedApp:
    """The application's own state, guarded by a lock, with effects that land late."""

    def __init__(self, delay: float = 0.3) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.state: dict[str, Any] = {
            "inbox": {"sent_count": 0, "folders": ["inbox", "sent"]},
            "drone": {"mode": "LOITER", "armed": False},
        }
        self.timers: list[threading.Timer] = []

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return copy.deepcopy(self.state)

    def later(self, effect: Any) -> None:
        def apply() -> None:
            with self.lock:
                effect(self.state)

        timer = threading.Timer(self.delay, apply)
        timer.daemon = True
        self.timers.append(timer)
        timer.start()

    def act(self, path: str) -> bool:
        if path == "/send":
            self.later(lambda s: s["inbox"].__setitem__("sent_count", s["inbox"]["sent_count"] + 1))
            return True
        if path == "/noop":
            return True
        if path.startswith("/mode/"):
            mode = path.removeprefix("/mode/")
            self.later(lambda s: s["drone"].__setitem__("mode", mode))
            return True
        return False


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        if self.path == "/state":
            self._json(200, self.server.app.snapshot())
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.server.app.act(self.path):
            self._json(200, {"accepted": True})
        else:
            self._json(404, {"error": "not found"})

    def _json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, app: DelayedApp) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.app = app


@contextmanager
def serve(app: DelayedApp) -> Iterator[str]:
    """Serve ``app`` on a free loopback port; yields its base URL."""
    server = _Server(app)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        for timer in app.timers:
            timer.cancel()
