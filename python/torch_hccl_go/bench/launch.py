"""Starting the ranks: spawned by this process (a FileStore in a temporary directory, so no
port is opened for the rendezvous), or this process is one rank under torchrun (RANK and
WORLD_SIZE set; rendezvous through MASTER_ADDR/MASTER_PORT as usual)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as torch_mp

from .config import BenchConfig
from .history import CONDITIONS
from .json_out import command_line, write_json
from .plot import write_plot
from .progress import make_progress
from .report import exit_code, print_report
from .report_history import print_history
from .runner import Sweep, cases
from .sizes import format_size


def under_torchrun() -> bool:
    return "RANK" in os.environ and "WORLD_SIZE" in os.environ


def launch(cfg: BenchConfig) -> int:
    """Runs the benchmark on all ranks; the exit code of the command."""
    world = int(os.environ["WORLD_SIZE"]) if under_torchrun() else cfg.world_size
    if cfg.root >= world:
        print(f"hccl_go bench: --root {cfg.root} is not a rank of a world of {world}", file=sys.stderr)
        return 2
    if under_torchrun():
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        dist.init_process_group("gloo", timeout=timedelta(seconds=cfg.timeout))
        code = run_rank(cfg, rank, world)
        return code if rank == 0 else 0
    with tempfile.TemporaryDirectory(prefix="hccl_go_bench_") as tmp:
        try:
            torch_mp.start_processes(_spawned_rank, args=(cfg, tmp), nprocs=cfg.world_size, start_method="spawn")
        except (torch_mp.ProcessRaisedException, torch_mp.ProcessExitedException) as e:
            print(f"hccl_go bench: a rank failed:\n{e}", file=sys.stderr)
            return 1
        return int(Path(tmp, "exit_code").read_text())


def _spawned_rank(rank: int, cfg: BenchConfig, tmp: str) -> None:
    store = dist.FileStore(os.path.join(tmp, "store"), cfg.world_size)
    dist.init_process_group(
        "gloo", store=store, rank=rank, world_size=cfg.world_size, timeout=timedelta(seconds=cfg.timeout)
    )
    code = run_rank(cfg, rank, cfg.world_size)
    if rank == 0:
        Path(tmp, "exit_code").write_text(str(code))


def run_rank(cfg: BenchConfig, rank: int, world: int) -> int:
    """The sweep on this rank (the default group is initialised: it is the control group);
    rank 0 prints the report and writes the files. Returns the exit code (0 off rank 0)."""
    torch.set_num_threads(cfg.threads)
    sweep = Sweep(cfg, rank, world)
    info = sweep.backend_info()
    if rank == 0:
        print_header(cfg, world, info)
    progress = make_progress(sum(1 for _ in cases(cfg, world)), enabled=rank == 0 and cfg.progress)
    try:
        results = sweep.run(progress)
    finally:
        progress.close()
        sweep.close()
    dist.destroy_process_group()
    if rank != 0:
        return 0
    print_report(results, cfg.backends, sys.stdout)
    if cfg.history:
        print_history(results, cfg.backends, sys.stdout)
    if cfg.json_path:
        write_json(cfg.json_path, cfg, world, info, results)
        print(f"# figures written to {cfg.json_path}")
    if cfg.plot_path and write_plot(cfg.plot_path, results, cfg.backends):
        print(f"# plot written to {cfg.plot_path}")
    sys.stdout.flush()
    return exit_code(results)


def print_header(cfg: BenchConfig, world: int, info: dict[str, dict]) -> None:
    iters = f"{cfg.iters} per size" if cfg.iters else f"auto, about {cfg.max_time:g} s per size and backend"
    sizes = (
        ", ".join(format_size(s) for s in cfg.sizes)
        if len(cfg.sizes) <= 4
        else f"{format_size(cfg.sizes[0])} .. {format_size(cfg.sizes[-1])} ({len(cfg.sizes)} sizes)"
    )
    print(f"# {command_line(cfg)}")
    print(f"# torch {torch.__version__}, world {world}, threads per rank {cfg.threads}, cpus {os.cpu_count()}")
    print(f"# backends {','.join(cfg.backends)}; ops {','.join(cfg.ops)}; dtypes {','.join(cfg.dtypes)}; sizes {sizes}")
    print(f"# warm-up {cfg.warmup}, iterations {iters}, check {'on' if cfg.check else 'off'}")
    if cfg.jobs is not None or cfg.peers:
        jobs = f"{cfg.jobs} per library, each alone" if cfg.jobs else "one for the backends together, one per peer"
        print(f"# jobs: {jobs}, interleaved; peers {','.join(cfg.peers) or 'none'}")
    if cfg.history:
        print("# history: single ops after " + ", ".join(c.name for c in CONDITIONS))
    for backend, details in info.items():
        shown = {k: v for k, v in details.items() if k not in ("rank", "sequence")}
        print(f"# {backend}: {json.dumps(shown, separators=(',', ':'))}")
    sys.stdout.flush()
