"""Builds torch_hccl_go, the hccl_go backend for torch.distributed.

Three artefacts end up in the package:
  torch_hccl_go/lib/libhccl_go.so        the Go library (go build -buildmode=c-shared ./export)
  torch_hccl_go/lib/libhccl_go_probe.so  the benchmark's cross-CPU probe (csrc/handoff_probe.c;
                                         plain C, loaded with ctypes, no torch or Go)
  torch_hccl_go/_C_torch2_15*.so         the C++ c10d::Backend for one torch minor version,
                                         linked against it (rpath $ORIGIN/lib)

The extension is compiled against the torch already installed, so install
without build isolation:

    pip install --no-build-isolation .        # or -e . for development

A wheel for several torch minor versions carries one extension per version,
built in their own environments: scripts/wheel.sh.

Environment:
  HCCL_GO_PREBUILT_LIB=/path/libhccl_go.so  use this library instead of running go build
  HCCL_GO_WHEEL_EXTENSIONS=a.so:b.so        extensions built against other torch minor
                                            versions (with the same libhccl_go.so) to ship too;
                                            the torch requirement then covers them all
  MAX_JOBS=N                                parallel C++ compile jobs (torch's ninja build)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).parent.resolve()
PKG_DIR = ROOT / "python" / "torch_hccl_go"
LIB_DIR = PKG_DIR / "lib"
LIB_NAME = "libhccl_go.so"
PROBE_NAME = "libhccl_go_probe.so"

try:
    import torch
    from torch.utils.cpp_extension import BuildExtension, CppExtension
except ImportError:
    sys.exit(
        "torch_hccl_go is compiled against the installed torch, and torch is not importable here.\n"
        "Install torch first, then build without isolation: pip install --no-build-isolation ."
    )


def _load(name: str) -> dict:
    """The names a module of the package defines, without importing the package
    (which needs the extension this builds)."""
    ns: dict = {"__name__": f"torch_hccl_go.{name}"}
    exec((PKG_DIR / f"{name}.py").read_text(), ns)
    return ns


def _version() -> str:
    return _load("_version")["__version__"]


_abi = _load("_abi")  # how extensions are named after their torch minor version


def _find_go() -> str:
    go = shutil.which("go")
    if go is None and Path("/usr/local/go/bin/go").exists():
        go = "/usr/local/go/bin/go"
    if go is None:
        sys.exit(
            "torch_hccl_go: the Go toolchain ('go') is not on PATH; it is needed to build libhccl_go.so.\n"
            "Install Go (https://go.dev/dl/) or set HCCL_GO_PREBUILT_LIB to an already built libhccl_go.so."
        )
    return go


_go_library_built = False


@contextlib.contextmanager
def _build_lock():
    """Serializes builds of this tree: concurrent pip installs would write the
    same libhccl_go.so and object files at once."""
    (ROOT / "build").mkdir(exist_ok=True)
    with open(ROOT / "build" / ".build.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build_go_library() -> Path:
    """Builds (or copies) libhccl_go.so into python/torch_hccl_go/lib/, once per run."""
    global _go_library_built
    out = LIB_DIR / LIB_NAME
    if _go_library_built:
        return out
    LIB_DIR.mkdir(exist_ok=True)
    # Build into a temporary file and rename it over the old library: running
    # processes keep their mapping of the old file intact (rewriting a mapped
    # library in place crashes them).
    tmp = LIB_DIR / (LIB_NAME + ".tmp")
    prebuilt = os.environ.get("HCCL_GO_PREBUILT_LIB")
    if prebuilt:
        print(f"torch_hccl_go: using the prebuilt {prebuilt}", flush=True)
        shutil.copy2(prebuilt, tmp)
    else:
        cmd = [
            _find_go(),
            "build",
            "-buildmode=c-shared",
            "-trimpath",
            f"-ldflags=-extldflags=-Wl,-soname,{LIB_NAME}",
            "-o",
            str(tmp),
            "./export",
        ]
        print("torch_hccl_go: " + " ".join(cmd), flush=True)
        try:
            subprocess.run(cmd, cwd=ROOT, env=dict(os.environ, CGO_ENABLED="1"), check=True)
        except subprocess.CalledProcessError as e:
            sys.exit(f"torch_hccl_go: building libhccl_go.so failed (go build exited with {e.returncode})")
        # go build writes its own header beside the library; include/hccl_go.h is the API.
        (LIB_DIR / (LIB_NAME + ".h")).unlink(missing_ok=True)  # named after libhccl_go.so.tmp
    os.replace(tmp, out)
    _go_library_built = True
    return out


def build_probe_library() -> Path:
    """Compiles the benchmark's probe (csrc/handoff_probe.c) into python/torch_hccl_go/lib/."""
    out = LIB_DIR / PROBE_NAME
    LIB_DIR.mkdir(exist_ok=True)
    tmp = LIB_DIR / (PROBE_NAME + ".tmp")
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or "cc"
    cmd = [cc, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(PKG_DIR / "csrc" / "handoff_probe.c")]
    print("torch_hccl_go: " + " ".join(cmd), flush=True)
    try:
        subprocess.run(cmd, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        sys.exit(f"torch_hccl_go: building {PROBE_NAME} failed: {e}")
    os.replace(tmp, out)
    return out


class BuildPy(build_py):
    """Builds the Go library first, so that package data picks it up."""

    def run(self) -> None:
        with _build_lock():
            build_go_library()
            build_probe_library()
        super().run()


class BuildExt(BuildExtension):
    """Builds the Go library, the extension against it, and ships both."""

    def run(self) -> None:
        # A fixed object directory (pip would use a fresh temporary one) lets
        # ninja skip the compile when no C++ source changed since last time.
        tag = f"torch{torch.__version__}-py{sys.version_info.major}{sys.version_info.minor}"
        self.build_temp = str(ROOT / "build" / f"temp-{tag}")
        with _build_lock():
            lib = build_go_library()
            probe = build_probe_library()
            super().run()
        if not self.inplace and not getattr(self, "editable_mode", False):
            dest = Path(self.build_lib) / "torch_hccl_go"
            (dest / "lib").mkdir(parents=True, exist_ok=True)
            shutil.copy2(lib, dest / "lib" / lib.name)
            shutil.copy2(probe, dest / "lib" / probe.name)
            for f in _EXTRA_EXTENSIONS.values():
                shutil.copy2(f, dest / f.name)


def _extra_extensions() -> dict[tuple[int, int], Path]:
    """HCCL_GO_WHEEL_EXTENSIONS: extensions for other torch minor versions, by version."""
    found = {}
    for p in (Path(p).resolve() for p in os.environ.get("HCCL_GO_WHEEL_EXTENSIONS", "").split(":") if p):
        minor = _abi["extension_minor"](p.name)
        if not p.is_file() or minor is None:
            sys.exit(f"torch_hccl_go: HCCL_GO_WHEEL_EXTENSIONS: {p} is not a built _C_torchX_Y extension")
        found[minor] = p
    return found


def _torch_requirement(minors: set[tuple[int, int]]) -> str:
    """torch>=2.14,<2.16 for {2.14, 2.15}: exactly the minor versions built."""
    lo, hi = min(minors), max(minors)
    if lo[0] != hi[0] or len(minors) != hi[1] - lo[1] + 1:
        sys.exit(f"torch_hccl_go: extensions for torch {sorted(minors)} leave a gap; build consecutive minor versions")
    return f"torch>={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}"


_TORCH = _abi["torch_minor"](torch.__version__)
_EXTRA_EXTENSIONS = _extra_extensions()
if _TORCH in _EXTRA_EXTENSIONS:
    sys.exit(
        f"torch_hccl_go: HCCL_GO_WHEEL_EXTENSIONS holds one for torch {torch.__version__}, the torch building this"
    )

extension = CppExtension(
    # Named after the torch minor version whose C++ ABI it is built against
    # (torch_hccl_go/_library.py loads the one that fits).
    name="torch_hccl_go." + _abi["extension_name"](_TORCH),
    # One translation unit that includes every csrc/*.cpp (see extension.cpp).
    sources=[str((PKG_DIR / "csrc" / "extension.cpp").relative_to(ROOT))],
    include_dirs=[str(ROOT / "include"), str(PKG_DIR / "csrc")],
    library_dirs=[str(LIB_DIR)],
    libraries=["hccl_go"],
    # -g0 overrides the -g of Python's CFLAGS: debug info triples compile time.
    extra_compile_args={"cxx": ["-O2", "-g0", "-fvisibility=hidden", "-Wall", "-Wno-unused-parameter"]},
    # The extension sits in torch_hccl_go/, the library in torch_hccl_go/lib/.
    extra_link_args=["-Wl,-rpath,$ORIGIN/lib"],
)

setup(
    name="torch_hccl_go",
    version=_version(),
    description="hccl_go: a collective-communication backend for torch.distributed, written in Go",
    package_dir={"": "python"},
    packages=find_packages("python"),
    package_data={"torch_hccl_go": ["lib/*.so"]},
    ext_modules=[extension],
    cmdclass={"build_py": BuildPy, "build_ext": BuildExt.with_options(use_ninja=True)},
    python_requires=">=3.9",
    # Each extension's C++ ABI is that of the torch it was compiled against: a wheel
    # installs only beside the torch minor versions it carries an extension for.
    install_requires=[_torch_requirement({_TORCH, *_EXTRA_EXTENSIONS})],
    extras_require={"bench": ["matplotlib", "tqdm"]},
    entry_points={"console_scripts": ["hccl-go-bench = torch_hccl_go.bench.cli:main"]},
    zip_safe=False,
)
