"""Where libhccl_go.so lies, and which build of the extension fits the torch in use.

The C++ extension is compiled against one torch minor version's C++ ABI, so
it is named after it (_C_torch2_15); a wheel may carry one per torch minor
version it supports, beside the one libhccl_go.so they all use. load_extension
imports the build for the torch in use as torch_hccl_go._C.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import torch

from ._abi import extension_minor, extension_name, torch_minor

_PKG_DIR = Path(__file__).resolve().parent
_LIB_DIR = _PKG_DIR / "lib"


def packaged_library_path() -> str:
    """Absolute path of the libhccl_go.so shipped in this package."""
    return str(_LIB_DIR / "libhccl_go.so")


def library_path() -> str:
    """Absolute path of the libhccl_go.so in use (the packaged one unless
    LD_LIBRARY_PATH points elsewhere)."""
    from . import _C

    return os.path.realpath(_C.loaded_library_path() or packaged_library_path())


def built_torch_versions() -> list[str]:
    """The torch minor versions this installation has an extension for ("2.15")."""
    found = sorted({m for p in _PKG_DIR.iterdir() if (m := extension_minor(p.name))})
    return [f"{major}.{minor}" for major, minor in found]


def load_extension() -> ModuleType:
    """Imports the extension built for the torch in use (which loads libhccl_go.so
    and starts the Go runtime) and registers it as torch_hccl_go._C."""
    name = extension_name(torch_minor(torch.__version__))
    package = __name__.rpartition(".")[0]
    try:
        module = importlib.import_module(f".{name}", package)
    except ModuleNotFoundError as e:
        if e.name != f"{package}.{name}":
            raise
        built = ", ".join(built_torch_versions()) or "none"
        raise ImportError(
            f"torch_hccl_go has no extension for torch {torch.__version__} (built for torch: {built}); "
            "install a torch_hccl_go built for this torch, or build one here: pip install --no-build-isolation ."
        ) from None
    sys.modules[f"{package}._C"] = module
    return module
