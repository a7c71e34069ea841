"""One job: a fresh command (this benchmark for some backends, or a peer's program under
its own launcher) that launches its ranks, writes its figures to a --json file, and is
read back here. Its printed output is kept only to show when it fails."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace

from .config import BenchConfig, to_argv
from .results import Result

OUTPUT_TAIL = 3000  # characters of a failed job's output shown in the report
TERM_GRACE_S = 10.0  # after SIGTERM, before SIGKILL


@dataclass(frozen=True)
class JobSpec:
    name: str  # the backend or peer it times; "hccl_go,gloo" when backends share a job
    number: int  # 1..N: which of this name's jobs
    argv: tuple[str, ...]
    json_path: str
    env: dict[str, str] = field(default_factory=dict)  # added to this process's environment


@dataclass
class JobRun:
    spec: JobSpec
    status: str  # "ok", "failed" (exit status not 0) or "timeout"
    reason: str = ""
    wall_s: float = 0.0
    results: list[Result] = field(default_factory=list)
    backend_info: dict = field(default_factory=dict)
    output_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def bench_command(cfg: BenchConfig, json_path: str) -> list[str]:
    """This benchmark as one job of cfg's backends: no jobs or peers of its own."""
    job = replace(cfg, jobs=None, peers=(), json_path=json_path, plot_path=None, progress=False)
    return [sys.executable, "-m", "torch_hccl_go.bench", *to_argv(job)]


def run_job(spec: JobSpec, timeout_s: float) -> JobRun:
    """Runs the job to its end or for at most timeout_s, then ends its whole process group:
    the launcher and every rank it started. The job has a session of its own, so a Ctrl-C
    reaches only this process, which ends the job the same way before it stops."""
    started = time.monotonic()
    proc = subprocess.Popen(
        spec.argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **spec.env},
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        output = _end_process_group(proc)
        run = JobRun(spec, "timeout", f"still running after {timeout_s:.0f} s; killed")
    except BaseException:
        _end_process_group(proc)
        raise
    else:
        run = JobRun(spec, "ok" if proc.returncode == 0 else "failed")
        if proc.returncode != 0:
            run.reason = f"exit status {proc.returncode}"
    run.wall_s = time.monotonic() - started
    run.output_tail = output[-OUTPUT_TAIL:]
    try:
        with open(spec.json_path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        if run.ok:
            run.status, run.reason = "failed", f"no figures in {spec.json_path}: {e}"
        return run
    run.results = [Result.from_json(row) for row in doc.get("results", [])]
    run.backend_info = doc.get("backend_info", {})
    return run


def _end_process_group(proc: subprocess.Popen) -> str:
    """Ends a job that ran past its time: SIGTERM to its process group (the launcher and the
    ranks it started; mpirun also passes it on to its ranks), SIGKILL if anything is left
    after TERM_GRACE_S. Returns what the job printed."""
    output = ""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            output, _ = proc.communicate(timeout=TERM_GRACE_S)
            if sig == signal.SIGKILL or _group_is_gone(proc.pid):
                break
        except subprocess.TimeoutExpired:
            continue
    return output or ""


def _group_is_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False
