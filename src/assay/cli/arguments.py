"""Argument types shared by the commands: whole numbers with a floor, refused by argparse
with a message that names the value and what is accepted (exit 2, as every usage error)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def whole_number(unit: str, *, at_least: int = 0) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number of ``unit`` no smaller than ``at_least``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a whole number of {unit}, got {text!r}"
            ) from None
        if value < at_least:
            floor = "zero" if at_least == 0 else str(at_least)
            raise argparse.ArgumentTypeError(f"expected {floor} or more {unit}, got {value}")
        return value

    return parse
