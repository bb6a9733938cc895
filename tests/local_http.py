"""A real HTTP server on a free loopback port, in a thread, for tests that probe one.

``serve(Handler, app)`` runs ``Handler`` (a ``QuietHandler``, which reaches ``app`` as
``self.server.app``) and yields the base URL; on the way out ``release()`` runs first (to
free a handler blocked on the test), then the server stops and its thread is joined.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class AppServer(ThreadingHTTPServer):
    """A threading server whose handlers reach the test's ``app``."""

    daemon_threads = True

    def __init__(self, handler: type[BaseHTTPRequestHandler], app: Any) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.app = app


class QuietHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers a whole body in one call, with
    ``always`` among its headers."""

    server: AppServer
    always: dict[str, str] = {}  # noqa: RUF012 (read only)

    def send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in self.always.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read what matters from the probe."""


@contextmanager
def serve(
    handler: type[BaseHTTPRequestHandler], app: Any, release: Callable[[], object] = lambda: None
) -> Iterator[str]:
    """Serve ``handler`` for ``app`` until the block ends; yields ``http://127.0.0.1:PORT``."""
    server = AppServer(handler, app)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        release()
        server.shutdown()
        server.server_close()
        thread.join()
