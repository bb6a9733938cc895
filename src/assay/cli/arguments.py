"""Argument checks shared by the commands, refused with a message that names the value and
what is accepted (exit 2, as every usage error): whole numbers with a floor, and arguments
that must be Unicode text."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from typing import Final

_UNDECODED: Final = re.compile("[\udc80-\udcff]")
"""How Python holds an argument's bytes that are not UTF-8 (surrogateescape)."""


def refuse_undecodable(arguments: Sequence[str]) -> str | None:
    """What is wrong with the first of ``arguments`` holding bytes that are not UTF-8 (which
    Python keeps as lone surrogates, text no answer or ledger entry can carry), if one does."""
    for number, text in enumerate(arguments, start=1):
        undecoded = _UNDECODED.search(text)
        if undecoded is not None:
            byte = ord(undecoded.group()) - 0xDC00
            return (
                f"argument {number} is not UTF-8 text: it holds the byte 0x{byte:02x} at "
                f"character {undecoded.start()}; check the terminal's or the script's encoding"
            )
    return None


def whole_number(
    unit: str, *, at_least: int = 0, at_most: Callable[[], tuple[int, str]] | None = None
) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number of ``unit`` no smaller than ``at_least`` and,
    given ``at_most``, no larger than the bound it answers with the reason for it (asked
    only when a value is parsed, so a bound held by a module that is slow to load costs the
    parser nothing)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number of {unit}, got {text!r}"
            ) from None
        if at_most is not None:
            ceiling, why = at_most()
            if not at_least <= value <= ceiling:
                raise argparse.ArgumentTypeError(
                    f"expected {at_least} to {ceiling} {unit} ({why}), got {value}"
                )
        if value < at_least:
            floor = "zero" if at_least == 0 else str(at_least)
            raise argparse.ArgumentTypeError(f"expected {floor} or more {unit}, got {value}")
        return value

    return parse
