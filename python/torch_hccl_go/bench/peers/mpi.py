"""Open MPI as a peer: `--peers mpi` runs mpi_program.py under mpirun, one process per rank,
over shared memory (pml ob1, btl self,vader; --bind-to none, as the torch bench's ranks are
not pinned either), with the sweep's sizes and timing settings.

Needs Open MPI's mpirun and mpi4py built against it in this Python
(scripts/mpi_bench.sh installs both: Debian's openmpi-bin and libopenmpi-dev, then
`pip install --no-binary mpi4py mpi4py`). The program measures every op of the bench
(all_reduce, all_gather, reduce_scatter, broadcast, all_to_all, reduce; reductions with
sum) on float32.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from ..config import BenchConfig

NAME = "mpi"
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all", "reduce")
REDUCING = ("all_reduce", "reduce_scatter", "reduce")  # timed with sum only
DTYPE = "float32"
PROGRAM = Path(__file__).with_name("mpi_program.py")
INSTALL_HINT = "scripts/mpi_bench.sh installs Open MPI and mpi4py"


class MpiPeer:
    name = NAME

    def skip_reason(self, cfg: BenchConfig) -> str | None:
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            return f"mpirun is not installed ({INSTALL_HINT})"
        try:
            version = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"mpirun --version failed: {e}"
        if "Open MPI" not in version:
            first = version.strip().splitlines()[0] if version.strip() else "no version"
            return f"mpirun is not Open MPI's ({first})"
        if importlib.util.find_spec("mpi4py") is None:
            return f"mpi4py is not installed in {sys.executable} ({INSTALL_HINT})"
        if not _ops(cfg):
            return (
                f"mpi_program.py times {', '.join(OPS)} (the reductions with sum); "
                f"--ops asks for {','.join(cfg.ops)} with --redop {cfg.redop}"
            )
        if DTYPE not in cfg.dtypes:
            return f"mpi_program.py times float32; --dtypes asks for {','.join(cfg.dtypes)}"
        return None

    def command(self, cfg: BenchConfig, json_path: str) -> list[str]:
        launcher = ["mpirun", "-n", str(cfg.world_size), "--bind-to", "none"]
        launcher += ["--mca", "pml", "ob1", "--mca", "btl", "self,vader"]
        if os.geteuid() == 0:
            launcher.append("--allow-run-as-root")
        if cfg.world_size > (os.cpu_count() or 1):
            launcher.append("--oversubscribe")
        program = [sys.executable, str(PROGRAM), "--ops", ",".join(_ops(cfg))]
        program += ["--sizes", ",".join(str(s) for s in cfg.sizes), "--root", str(cfg.root)]
        program += ["--warmup", str(cfg.warmup), "--iters", "auto" if cfg.iters is None else str(cfg.iters)]
        program += ["--max-time", repr(cfg.max_time), "--rewarm-ms", repr(cfg.rewarm_ms)]
        program += ["--check" if cfg.check else "--no-check", "--history" if cfg.history else "--no-history"]
        return [*launcher, *program, "--json", json_path]

    def env(self, cfg: BenchConfig) -> dict[str, str]:
        # numpy's BLAS (--history compute bursts) on as many threads as torch's ranks use.
        return {"OMP_NUM_THREADS": str(cfg.threads), "OPENBLAS_NUM_THREADS": str(cfg.threads)}


def _ops(cfg: BenchConfig) -> list[str]:
    return [op for op in cfg.ops if op in OPS and (op not in REDUCING or cfg.redop == "sum")]
