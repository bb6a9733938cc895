"""Request bodies are JSON text: half a surrogate pair is refused where the body is parsed.

JSON may escape a string's characters as ``\\uXXXX``, and ``JSON.stringify`` writes a string
broken between the two halves of a surrogate pair as ``"\\ud800"``. Python's ``json`` reads
that into a ``str`` no UTF-8 text can hold: accepted into the state it would make every later
answer that includes it fail to encode. The daemon's hot path parses with pydantic, which
refuses it; ``JSONRoute`` refuses it on every other route, as FastAPI refuses text that is not
JSON: 400, ``json_invalid``, at the position of the escape. A body nested too deeply for
Python's parser is ``json_invalid`` too, saying so, where FastAPI would say only that the body
could not be parsed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Coroutine
from typing import Any, Final

from fastapi import Request, Response
from fastapi.routing import APIRoute

from assay.state.canonical import HALF_SURROGATE_PAIR, holds_half_surrogate_pair

_TOO_DEEP: Final = (
    "it nests too deeply to read (JSON nested hundreds of levels deep); send a flatter body"
)
# An escaped surrogate (\uD800-\uDFFF), or one encoded as UTF-8 bytes, which json.loads
# also reads: only a body holding one of these can hold half of a pair.
_SURROGATE: Final = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")


class JSONRoute(APIRoute):
    """An ``APIRoute`` whose JSON body may not hold half a surrogate pair."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def handler(request: Request) -> Response:
            return await handle(_JSONRequest(request.scope, request.receive))

        return handler


class _JSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                value = json.loads(body)
            except RecursionError:
                raise json.JSONDecodeError(_TOO_DEEP, body.decode("latin-1"), 0) from None
            sign = _SURROGATE.search(body)
            if sign is not None and holds_half_surrogate_pair(value):
                raise json.JSONDecodeError(
                    HALF_SURROGATE_PAIR, body.decode("latin-1"), sign.start()
                )
            self._json = value
        return self._json
