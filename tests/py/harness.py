"""Run a function on N ranks, each in its own spawned process, with a hard timeout.

    results = run_ranks(job, world_size=2)             # [job's return value on rank 0, rank 1]

`job(ctx, *args)` is a module-level function (spawned processes import it by
name). Before it runs, the default process group is initialised with the backend
under test (HCCL_GO_TEST_BACKEND, default "hccl_go") over a FileStore in a fresh
temporary directory, so no port is ever opened for the rendezvous.

The parent waits for every rank. When a rank raises, its traceback is reported;
when a rank dies, its exit code; when the deadline passes, every process is killed
and the error names the ranks that had not finished and the last step each one
announced with ctx.progress(...). Starting torch costs ~2 s per process, so put
many checks into one job rather than many jobs.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

BACKEND = os.environ.get("HCCL_GO_TEST_BACKEND", "hccl_go")
"""The backend under test; "gloo" runs the same tests against PyTorch's own backend."""

COLLECTIVE_TIMEOUT = timedelta(seconds=float(os.environ.get("HCCL_GO_TEST_OP_TIMEOUT", "60")))
"""Timeout given to init_process_group/new_group: a stuck collective fails after this long."""


class RankFailure(AssertionError):
    """Raised in the parent when a rank raised, crashed or did not finish in time.

    `partial` holds what each rank had recorded with ctx.record before the failure:
    {rank: {key: value}}."""

    def __init__(self, message: str, partial: dict[int, dict] | None = None) -> None:
        super().__init__(message)
        self.partial = partial or {}


def import_backend(backend: str) -> None:
    """Imports the package that registers `backend` with torch.distributed, if it needs one."""
    if backend == "hccl_go":
        import torch_hccl_go  # noqa: F401


@dataclass
class RankContext:
    """What a job gets on its rank."""

    rank: int
    world_size: int
    backend: str
    store_dir: str
    _queue: Any = field(repr=False)
    _stores_made: int = 0

    def progress(self, step: str) -> None:
        """Announces the step this rank is about to run; a timeout report names the last one."""
        self._queue.put(("progress", self.rank, step))

    def record(self, key: str, value: Any) -> None:
        """Sends one finished result to the parent at once, so it survives a later hang or crash."""
        self._queue.put(("partial", self.rank, (key, value)))

    @contextlib.contextmanager
    def watchdog(self, key: str, seconds: float):
        """Bounds one check: if the block has not finished after `seconds`, records
        ("failed", why) under `key` and ends this process, so a hang costs `seconds`
        instead of the whole job's timeout."""

        def expire() -> None:
            self.record(key, ("failed", f"{key} did not finish within {seconds:.0f} s (hung); process ended"))
            self._queue.close()
            self._queue.join_thread()  # make sure the record reaches the parent
            os._exit(3)

        timer = threading.Timer(seconds, expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def run_checks(self, checks: list[Callable[[RankContext], Any]], seconds: float) -> dict[str, object]:
        """Runs each check in turn, each under a watchdog of `seconds`, recording its outcome
        at once: {check name: ("ok", what it returned) or ("failed", traceback)}."""
        results: dict[str, object] = {}
        for check in checks:
            self.progress(check.__name__)
            try:
                with self.watchdog(check.__name__, seconds):
                    results[check.__name__] = ("ok", check(self))
            except Exception:  # noqa: BLE001
                results[check.__name__] = ("failed", traceback.format_exc())
            self.record(check.__name__, results[check.__name__])
        return results

    def new_store(self):
        """A FileStore shared by all ranks; the n-th call returns the same store on every rank."""
        import torch.distributed as dist

        self._stores_made += 1
        path = os.path.join(self.store_dir, f"store{self._stores_made}")
        return dist.FileStore(path, self.world_size)

    def init_process_group(self, backend: str | None = None) -> None:
        """Initialises the default process group on a fresh store (used again after a destroy)."""
        import torch.distributed as dist

        backend = backend or self.backend
        import_backend(backend)
        dist.init_process_group(
            backend,
            store=self.new_store(),
            rank=self.rank,
            world_size=self.world_size,
            timeout=COLLECTIVE_TIMEOUT,
        )


def _rank_main(job, rank, world_size, backend, store_dir, q, args, init) -> None:
    ctx = RankContext(rank, world_size, backend, store_dir, q)
    try:
        if init:
            import torch

            torch.set_num_threads(1)  # several ranks share two cores
            ctx.init_process_group()
        result = job(ctx, *args)
        if "torch" in sys.modules:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
        q.put(("ok", rank, result))
    except BaseException:  # noqa: BLE001  (everything goes back to the parent)
        q.put(("error", rank, traceback.format_exc()))


def run_ranks(
    job: Callable[..., Any],
    world_size: int,
    *,
    args: tuple = (),
    backend: str = BACKEND,
    timeout: float = 120.0,
    init: bool = True,
    env: dict[str, str] | None = None,
    grace: float = 10.0,
) -> list[Any]:
    """Runs job(ctx, *args) on ranks 0..world_size-1 and returns their results in rank order.

    Raises RankFailure naming the rank(s) and what went wrong. `env` is set in the
    parent's environment while the processes start (spawned children inherit it).
    After one rank fails, the others get `grace` seconds to report before all are killed.
    """
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    store_dir = tempfile.mkdtemp(prefix="hccl_go_test_")
    saved_env = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    procs = []
    try:
        for rank in range(world_size):
            p = ctx.Process(
                target=_rank_main,
                args=(job, rank, world_size, backend, store_dir, q, args, init),
                name=f"rank{rank}",
                daemon=True,
            )
            p.start()
            procs.append(p)
        return _collect(job, procs, q, timeout, grace)
    finally:
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _kill_all(procs)
        q.close()
        shutil.rmtree(store_dir, ignore_errors=True)


def _collect(job, procs, q, timeout: float, grace: float) -> list[Any]:
    world_size = len(procs)
    name = getattr(job, "__name__", str(job))
    results: dict[int, Any] = {}
    errors: dict[int, str] = {}
    last_step: dict[int, str] = {}
    partial: dict[int, dict] = {}
    deadline = time.monotonic() + timeout
    first_error_at: float | None = None
    while len(results) + len(errors) < world_size:
        now = time.monotonic()
        # Once a rank failed, its peers are likely stuck in a collective: give them a
        # short grace to report their own error, then stop.
        if first_error_at is not None and now > first_error_at + grace:
            break
        if now > deadline:
            break
        try:
            kind, rank, payload = q.get(timeout=0.2)
        except queue.Empty:
            for rank, p in enumerate(procs):
                if rank in results or rank in errors or p.is_alive():
                    continue
                # A process can exit right after queueing its result: look once more.
                try:
                    kind, r, payload = q.get(timeout=1.0)
                except queue.Empty:
                    errors[rank] = f"process died with exit code {p.exitcode} (no result)"
                    first_error_at = first_error_at or time.monotonic()
                    break
                _record(kind, r, payload, results, errors, last_step, partial)
                if kind == "error":
                    first_error_at = first_error_at or time.monotonic()
                break
            continue
        _record(kind, rank, payload, results, errors, last_step, partial)
        if kind == "error":
            first_error_at = first_error_at or time.monotonic()

    if len(results) == world_size:
        return [results[r] for r in range(world_size)]

    missing = [r for r in range(world_size) if r not in results and r not in errors]
    lines = [f"{name} on {world_size} ranks failed"]
    for rank, tb in sorted(errors.items()):
        lines.append(f"--- rank {rank} raised (last step: {last_step.get(rank, 'none')}):\n{tb}")
    if missing:
        why = "after another rank failed" if errors else f"within the {timeout:.0f} s timeout"
        lines.append(f"--- ranks {missing} did not finish {why}; last steps:")
        for rank in missing:
            lines.append(f"    rank {rank}: {last_step.get(rank, 'none (still starting)')}")
    raise RankFailure("\n".join(lines), partial)


def _record(kind, rank, payload, results, errors, last_step, partial) -> None:
    if kind == "progress":
        last_step[rank] = payload
    elif kind == "partial":
        key, value = payload
        partial.setdefault(rank, {})[key] = value
    elif kind == "ok":
        results[rank] = payload
    else:
        errors[rank] = payload


def _kill_all(procs) -> None:
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_torchrun(target: list[str], *, cwd: str, nproc: int = 2, timeout: float = 240):
    """torchrun on this host (nproc ranks, rendezvous on 127.0.0.1, one OpenMP thread each)
    of target: a script and its arguments, or ["-m", module, ...]. Returns the completed
    process and its stdout and stderr joined."""
    import subprocess

    cmd = [
        sys.executable, "-m", "torch.distributed.run",
        "--nnodes=1", f"--nproc_per_node={nproc}",
        "--master_addr=127.0.0.1", f"--master_port={free_port()}",
        *target,
    ]  # fmt: skip
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd)
    return proc, proc.stdout + proc.stderr


# --- jobs made of named checks ---

_check_jobs: dict = {}


def run_checks(job: Callable[..., dict], world_size: int, *, timeout: float, **kwargs) -> tuple[dict, Any]:
    """Runs a job whose ranks record one ("ok", value) or ("failed", traceback) per check name
    (with ctx.record) and return them all as a dict. Runs once per (job, world size), then
    cached. Returns ({rank: {check: outcome}}, the RankFailure or None): when the job failed,
    the checks finished before the failure keep their outcomes."""
    key = (job.__module__, job.__name__, world_size)
    if key not in _check_jobs:
        try:
            results = run_ranks(job, world_size, timeout=timeout, **kwargs)
            _check_jobs[key] = (dict(enumerate(results)), None)
        except RankFailure as e:
            _check_jobs[key] = (e.partial, e)
    return _check_jobs[key]


def assert_check_passed(job: Callable[..., dict], world_size: int, check: str, *, timeout: float) -> dict:
    """Fails the calling test unless `check` passed on every rank; returns {rank: outcome value}."""
    import pytest

    per_rank, failure = run_checks(job, world_size, timeout=timeout)
    missing = [r for r in range(world_size) if check not in per_rank.get(r, {})]
    if missing:
        pytest.fail(f"{check} did not finish on ranks {missing}:\n{failure}", pytrace=False)
    failed = [(r, per_rank[r][check][1]) for r in range(world_size) if per_rank[r][check][0] != "ok"]
    if failed:
        pytest.fail("\n".join(f"--- rank {r}:\n{tb}" for r, tb in failed), pytrace=False)
    return {r: per_rank[r][check][1] for r in range(world_size)}
