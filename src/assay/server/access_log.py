"""The access log writes paths, never query values: a token sent as ``?token=...`` (or any
secret a client put in a query) would otherwise sit in the daemon's log for good.

uvicorn's access logger formats ``(client, method, path with query, version, status)``;
``QueryValues`` rewrites the path's query to keep each parameter's name and withhold its
value (``/v1/state?token=***&keys=***``), before anything is written.
"""

from __future__ import annotations

import logging
from typing import Final

ACCESS_LOGGER: Final = "uvicorn.access"
WITHHELD: Final = "***"


def mask_query(path: str) -> str:
    """``path`` with every query value withheld, the names kept (``?a=***&b``)."""
    route, mark, query = path.partition("?")
    if not mark:
        return path
    names = (part.partition("=") for part in query.split("&"))
    masked = "&".join(f"{name}={WITHHELD}" if equals else name for name, equals, _ in names)
    return f"{route}?{masked}"


class QueryValues(logging.Filter):
    """Withholds the query values of the access log's path argument."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            record.args = (*args[:2], mask_query(args[2]), *args[3:])
        return True


def withhold_query_values() -> None:
    """Install ``QueryValues`` on uvicorn's access logger, once."""
    logger = logging.getLogger(ACCESS_LOGGER)
    if not any(isinstance(existing, QueryValues) for existing in logger.filters):
        logger.addFilter(QueryValues())
