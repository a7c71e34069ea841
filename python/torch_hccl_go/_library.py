"""Where libhccl_go.so lies, and a check that the extension matches torch."""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

_LIB_DIR = Path(__file__).resolve().parent / "lib"


def packaged_library_path() -> str:
    """Absolute path of the libhccl_go.so shipped in this package."""
    return str(_LIB_DIR / "libhccl_go.so")


def library_path() -> str:
    """Absolute path of the libhccl_go.so in use (the packaged one unless
    LD_LIBRARY_PATH points elsewhere)."""
    from . import _C

    return os.path.realpath(_C.loaded_library_path() or packaged_library_path())


def built_torch_version() -> str | None:
    """The torch version the extension was compiled against (None if unknown)."""
    try:
        return json.loads((_LIB_DIR / "build_info.json").read_text())["torch_version"]
    except (OSError, ValueError, KeyError):
        return None


def _minor(version: str) -> tuple[str, ...]:
    return tuple(version.split("+")[0].split(".")[:2])


def check_torch_version() -> None:
    """Raises ImportError if the extension was built for another torch minor version."""
    built = built_torch_version()
    if built is not None and _minor(built) != _minor(torch.__version__):
        raise ImportError(
            f"torch_hccl_go was compiled against torch {built} but torch {torch.__version__} is installed; "
            "rebuild it: pip install --no-build-isolation ."
        )
