"""Entry point of `python -m torch_hccl_go.bench` and of the hccl-go-bench console script."""

from __future__ import annotations

import sys

from .config import parse_args
from .launch import launch
from .orchestrate import orchestrate


def main(argv: list[str] | None = None) -> int:
    """Parses argv (default sys.argv[1:]), runs the benchmark, returns the exit code: one job
    in these processes, or with --jobs/--peers a series of fresh jobs."""
    cfg = parse_args(sys.argv[1:] if argv is None else argv)
    if cfg.jobs is not None or cfg.peers:
        return orchestrate(cfg)
    return launch(cfg)
