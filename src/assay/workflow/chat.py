"""The chat models the model verifier asks: an OpenAI-compatible endpoint, or a GGUF model
file run in this process by llama-cpp-python (SPEC §8: "an adapter for OpenAI-compatible
endpoints … and a local in-process model").

Both take the same chat and the same JSON schema, answer a ``Completion`` (the text and the
tokens spent), and raise ``ModelError`` saying where when they cannot answer at all. A model
file is loaded once per process and path, on first use, and asked by one caller at a time.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from assay.errors import ModelError
from assay.workflow.definition import ModelSettings

if TYPE_CHECKING:
    import openai


class Completion(NamedTuple):
    """What a model answered (``None`` if it wrote nothing) and the tokens it spent."""

    content: str | None
    tokens: int


class ChatModel(Protocol):
    """A model that answers a chat with JSON constrained to ``schema``."""

    def complete(self, messages: list[Any], schema: dict[str, Any]) -> Completion:
        """The model's answer; ``ModelError`` if it could not be asked."""
        ...


def chat_model(settings: ModelSettings, *, client: openai.OpenAI | None = None) -> ChatModel:
    """The model ``settings`` name: the endpoint at ``base_url`` (through ``client`` when
    given), or the model file at ``path``."""
    if settings.path is not None:
        return LocalModel(settings)
    return EndpointModel(settings, client=client)


class EndpointModel:
    """A model behind an OpenAI-compatible chat completions endpoint. Each completion opens a
    client of its own and closes it, unless ``client`` is given (then it is the caller's to
    close); the client never retries on its own, so the workflow's bounds are the only ones."""

    def __init__(self, settings: ModelSettings, *, client: openai.OpenAI | None = None) -> None:
        self.settings = settings
        self.client = client

    def complete(self, messages: list[Any], schema: dict[str, Any]) -> Completion:
        import openai  # imported when first needed: it is slow to import

        if self.settings.response_format == "json_object":
            response_format: Any = {"type": "json_object", "schema": schema}
        else:
            response_format = {
                "type": "json_schema",
                "json_schema": {"name": "verdict", "schema": schema, "strict": True},
            }
        settings = self.settings
        api_key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        try:
            with contextlib.ExitStack() as stack:
                client = self.client or stack.enter_context(
                    openai.OpenAI(
                        base_url=settings.base_url,
                        api_key=api_key or "not-needed",
                        timeout=settings.timeout_s,
                        max_retries=0,
                    )
                )
                response = client.chat.completions.create(
                    model=settings.model,
                    messages=messages,
                    response_format=response_format,
                    max_tokens=settings.max_tokens,
                    temperature=0,
                )
        except openai.OpenAIError as error:
            raise ModelError(
                f"{settings.where} did not answer: {error}", where=settings.where
            ) from error
        tokens = response.usage.total_tokens if response.usage else 0
        content = response.choices[0].message.content if response.choices else None
        return Completion(content, tokens)


class LocalModel:
    """A GGUF model file run in this process by llama-cpp-python, its answer constrained to
    the schema by a grammar, at temperature 0."""

    def __init__(self, settings: ModelSettings) -> None:
        assert settings.path is not None  # chat_model chose this model for its path
        self.settings = settings
        self.path = settings.path

    def complete(self, messages: list[Any], schema: dict[str, Any]) -> Completion:
        with _loading:  # one load per file, however many steps ask at once
            llama, lock = _loaded(self.path, self.settings.context_tokens)
        with lock:
            try:
                response = llama.create_chat_completion(
                    messages=messages,
                    response_format={"type": "json_object", "schema": schema},
                    max_tokens=self.settings.max_tokens,
                    temperature=0,
                )
            except (ValueError, RuntimeError) as error:  # e.g. a chat beyond the context
                where = self.settings.where
                raise ModelError(f"{where} could not answer: {error}", where=where) from error
        usage = response.get("usage") or {}
        choices = response.get("choices") or []
        content = choices[0]["message"].get("content") if choices else None
        return Completion(content, int(usage.get("total_tokens", 0)))


_loading = threading.Lock()
_GGUF_MAGIC = b"GGUF"
_models: dict[tuple[str, int], tuple[Any, threading.Lock]] = {}


def _loaded(path: str, context_tokens: int) -> tuple[Any, threading.Lock]:
    """The model at ``path``, loaded once per process (``_loading`` held), and the lock its
    callers take turns on (a llama.cpp context serves one completion at a time)."""
    found = _models.get((path, context_tokens))
    if found is None:
        found = _models[(path, context_tokens)] = (_load(path, context_tokens), threading.Lock())
    return found


@atexit.register
def _close_models() -> None:
    """Free every loaded model while the interpreter can still run llama-cpp-python's code
    (left to the garbage collector at exit, its clean-up prints a traceback).

    Each is freed once its lock is free: a verifier's daemon thread that a wall bound stopped
    waiting for may still be running a completion on it (bounded by ``max_tokens``).
    """
    with _loading:
        for llama, lock in _models.values():
            with lock:
                llama.close()
        _models.clear()


_LLAMA_LOG_ERROR: Final = 4
_LLAMA_LOG_CONTINUED: Final = 5
"""llama.cpp's log levels (``ggml_log_level``: none 0, debug 1, info 2, warn 3, error 4, and 5
for a line continuing the last message)."""
_llama_log: list[Any] = []  # the callback llama.cpp holds, and the last level it was given


def _print_llama_errors_only(llama_cpp: Any) -> None:
    """Have llama.cpp's log print its errors only (to stderr), once per process.

    llama-cpp-python's own callback reads the levels by an older numbering, in which a
    warning is an error, so with ``verbose=False`` it still prints warnings (such as a
    context smaller than the model was trained with, which a verifier's short chats do not
    need). The callback is llama.cpp's, so it is this process's for every model.
    """
    if _llama_log:
        return

    @llama_cpp.llama_log_callback  # type: ignore[untyped-decorator]
    def errors_only(level: int, text: bytes, _user_data: Any) -> None:
        if level != _LLAMA_LOG_CONTINUED:
            _llama_log[1] = level
        if _llama_log[1] == _LLAMA_LOG_ERROR:
            sys.stderr.write(text.decode("utf-8", "replace"))

    _llama_log[:] = [errors_only, 0]
    llama_cpp.llama_log_set(errors_only, ctypes.c_void_p(0))


def _load(path: str, context_tokens: int) -> Any:
    """The model at ``path``, loaded; ``ModelError`` saying what is wrong if it cannot be."""
    where = f"the model {path}"
    try:
        import llama_cpp
    except ImportError as error:
        raise ModelError(
            f"{where} cannot be run: llama-cpp-python is not installed ({error}); install "
            "assay[local-model], or give base_url to ask a model server instead",
            where=where,
        ) from None
    _print_llama_errors_only(llama_cpp)
    try:
        with Path(path).open("rb") as file:
            magic = file.read(4)
    except OSError as error:
        raise ModelError(
            f"{where} cannot be run: {error.strerror or error}; give the path of a GGUF model file",
            where=where,
        ) from None
    if magic != _GGUF_MAGIC:
        # Checked here because llama.cpp, refusing such a file, also prints a traceback.
        raise ModelError(
            f"{where} cannot be run: it is not a GGUF model file (it does not begin with "
            f"{_GGUF_MAGIC.decode()}); give the path of one",
            where=where,
        )
    try:
        llama = llama_cpp.Llama(
            model_path=path, n_ctx=context_tokens, n_threads=os.cpu_count(), seed=7, verbose=False
        )
    except (ValueError, RuntimeError) as error:
        raise ModelError(
            f"{where} cannot be run: llama.cpp could not load it ({error}); check that it is a "
            "GGUF model file",
            where=where,
        ) from None
    return llama
