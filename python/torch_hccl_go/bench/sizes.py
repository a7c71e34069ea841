"""Message sizes: parsing "8B:512MiB:4" or "1K,64KiB,16M", and printing them back.

Units are binary, as in nccl-tests: K, KB and KiB all mean 1024 bytes (M, G likewise).
"""

from __future__ import annotations

import re

_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(I?B)?\s*$", re.IGNORECASE)

DEFAULT_SIZES = "8B:512MiB:4"


def parse_size(text: str) -> int:
    """Bytes in "8", "8B", "64K", "64KB", "64KiB", "1G" (binary units)."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"bad size {text!r}: want a number with an optional unit B, K, KiB, M, MiB, G, GiB")
    number, unit = int(match.group(1)), match.group(2).upper()
    return number * _UNITS[unit]


def parse_sizes(text: str) -> list[int]:
    """Sizes in bytes from "start:stop[:factor]" (geometric, factor 2 by default) or "a,b,c".

    Both forms can be combined with commas: "8:1K:4,1M". The result is sorted and
    without duplicates.
    """
    sizes: set[int] = set()
    for part in text.split(","):
        if not part.strip():
            continue
        if ":" in part:
            sizes.update(_geometric(part))
        else:
            sizes.add(parse_size(part))
    if not sizes:
        raise ValueError(f"no sizes in {text!r}")
    if min(sizes) <= 0:
        raise ValueError(f"sizes must be positive: {text!r}")
    return sorted(sizes)


def _geometric(part: str) -> list[int]:
    fields = part.split(":")
    if len(fields) not in (2, 3):
        raise ValueError(f"bad size range {part!r}: want start:stop[:factor]")
    start, stop = parse_size(fields[0]), parse_size(fields[1])
    factor = int(fields[2]) if len(fields) == 3 else 2
    if factor < 2 or start <= 0 or stop < start:
        raise ValueError(f"bad size range {part!r}: want 0 < start <= stop and factor >= 2")
    out = []
    size = start
    while size <= stop:
        out.append(size)
        size *= factor
    return out


def format_size(nbytes: int) -> str:
    """Short human form: 8B, 64KiB, 512MiB, 1.5MiB."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f}{unit}" if value == int(value) else f"{value:.3g}{unit}"
    return f"{nbytes}B"
