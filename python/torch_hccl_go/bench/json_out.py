"""--json PATH: the configuration, the machine and every figure of every result."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import socket
import sys

import torch

from .config import BenchConfig
from .results import Result


def write_json(path: str, cfg: BenchConfig, world: int, backend_info: dict, results: list[Result]) -> None:
    doc = {
        "command": command_line(cfg),
        "config": dataclasses.asdict(cfg),
        "world_size": world,
        "environment": environment(),
        "backend_info": backend_info,
        "units": {
            "size": "bytes",
            "time_us": "microseconds, median over batches of the slowest rank",
            "algbw_GBps": "1e9 bytes/s",
            "busbw_GBps": "algbw x bus_factor (nccl-tests)",
        },
        "results": [r.to_json() for r in results],
    }
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
