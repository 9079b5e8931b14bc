"""The argument types of ``python -m watermark``: window sizes, bounded integers and
``SECTION.FIELD=VALUE`` settings; each refuses a bad value with one line."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable


def window_list(text: str) -> list[int]:
    """argparse type: comma-separated span sizes >= 2, e.g. ``128,256``; ``off``: none."""
    if text.strip().lower() == "off":
        return []
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 128,256, got {text!r}") from None
    if not sizes or min(sizes) < 2:
        raise argparse.ArgumentTypeError(f"sizes must be >= 2, got {text!r}")
    return sizes


def at_least(minimum: int) -> Callable[[str], int]:
    """argparse type: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected an integer >= {minimum}, got {text!r}"
            ) from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    return parse


positive_int = at_least(1)
count = at_least(0)


def setting(text: str) -> tuple[str, object]:
    """``SECTION.FIELD=VALUE`` as (name, value), the value read as JSON (else a string)."""
    name, sep, raw = text.partition("=")
    if not sep or "." not in name:
        raise argparse.ArgumentTypeError(f"expected SECTION.FIELD=VALUE, got {text!r}")
    try:
        return name.strip(), json.loads(raw)
    except json.JSONDecodeError:
        return name.strip(), raw
