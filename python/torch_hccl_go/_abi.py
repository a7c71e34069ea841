"""How an extension build is named after the torch minor version whose C++ ABI
it was compiled against. Imports nothing from torch or this package, so that
setup.py can load it too."""

from __future__ import annotations

import re

# _C_torch2_15.cpython-311-x86_64-linux-gnu.so
EXTENSION_FILE = re.compile(r"^_C_torch(\d+)_(\d+)\.")


def torch_minor(version: str) -> tuple[int, int]:
    """(2, 15) for "2.15.0+cu130"."""
    major, minor = version.split("+")[0].split(".")[:2]
    return int(major), int(minor)


def extension_name(minor: tuple[int, int]) -> str:
    """The extension module built against torch `minor`: _C_torch2_15."""
    return f"_C_torch{minor[0]}_{minor[1]}"


def extension_minor(filename: str) -> tuple[int, int] | None:
    """(2, 15) for a built extension's file name, None for any other file."""
    m = EXTENSION_FILE.match(filename)
    return (int(m[1]), int(m[2])) if m else None
