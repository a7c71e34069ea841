"""--json PATH: the configuration, the machine and every figure of every result; with
--jobs/--peers, every job's own figures too."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
import sys

import torch

from .config import BenchConfig
from .jobs import JobRun
from .results import Result

UNITS = {
    "size": "bytes",
    "time_us": "microseconds, median over batches of the slowest rank",
    "algbw_GBps": "1e9 bytes/s",
    "busbw_GBps": "algbw x bus_factor (nccl-tests)",
    "history_us": "--history: microseconds of one op after each condition, one per repetition (history.py)",
}


def write_json(path: str, cfg: BenchConfig, world: int, backend_info: dict, results: list[Result]) -> None:
    doc = {
        "command": command_line(cfg),
        "config": dataclasses.asdict(cfg),
        "world_size": world,
        "environment": environment(),
        "backend_info": backend_info,
        "units": UNITS,
        "results": [r.to_json() for r in results],
    }
    _write(path, doc)


def write_jobs_json(
    path: str, cfg: BenchConfig, runs: list[JobRun], skipped: dict[str, str], summary: list[Result]
) -> None:
    """jobs: every job's command, outcome and its own result rows; summary: one row per
    library and case over its jobs (spread.summary_results: batch_times_us are the per-job
    medians, time_us their median)."""
    doc = {
        "command": command_line(cfg),
        "config": dataclasses.asdict(cfg),
        "world_size": cfg.world_size,
        "environment": environment(),
        "units": {**UNITS, "summary.time_us": "microseconds, median over jobs of each job's time_us"},
        "skipped": skipped,
        "jobs": [
            {
                "name": run.spec.name,
                "number": run.spec.number,
                "command": list(run.spec.argv),
                "status": run.status,
                "reason": run.reason,
                "wall_s": run.wall_s,
                "backend_info": run.backend_info,
                "output_tail": "" if run.ok else run.output_tail,
                "results": [r.to_json() for r in run.results],
            }
            for run in runs
        ],
        "summary": [r.to_json() for r in summary],
    }
    _write(path, doc)


def _write(path: str, doc: dict) -> None:
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def command_line(cfg: BenchConfig) -> str:
    return " ".join(["python -m torch_hccl_go.bench", *cfg.argv])


def environment() -> dict:
    env = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "hccl_go_env": {k: v for k, v in os.environ.items() if k.startswith("HCCL_GO_")},
    }
    try:
        import torch_hccl_go

        env["torch_hccl_go"] = getattr(torch_hccl_go, "__version__", None)
    except ImportError:
        env["torch_hccl_go"] = None
    return env
