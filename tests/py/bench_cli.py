"""Runs `python -m torch_hccl_go.bench` in a subprocess for the benchmark's tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def run_bench(args: list[str], timeout: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "torch_hccl_go.bench", "--no-progress", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})


def output(p: subprocess.CompletedProcess) -> str:
    """What a failed assertion shows: the header and job lines, the end of the report, stderr."""
    head, tail = p.stdout[:2500], p.stdout[2500:][-3000:]
    return f"exit status {p.returncode}\n{head}\n[...]\n{tail}\n--- stderr ---\n{p.stderr[-3000:]}"


def load(path: Path) -> dict:
    return json.loads(path.read_text())
