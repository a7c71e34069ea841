"""A launcher for jobs whose ranks may die on purpose (kill -9 tests).

harness.run_ranks treats a dead rank as a failure and spawns a fresh interpreter
per rank (~2-4 s each on a busy host). The reliability tests kill ranks on
purpose and run many short trials, so this launcher forks ranks from a
forkserver that has torch imported already (hccl_go itself, and with it the Go
runtime, is only loaded in the rank: the Go runtime does not survive fork),
collects whatever each rank put in the queue, and never waits past a hard
deadline.

A forked rank does not see environment changes the parent made after the
forkserver started: pass them as `env`; the rank sets them in os.environ and
passes the HCCL_GO_* ones to the communicator as options.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

_context = None


def _mp_context():
    global _context
    if _context is None:
        _context = mp.get_context("forkserver")
        _context.set_forkserver_preload(["torch", "torch.distributed"])
    return _context


def hccl_go_options(env: dict[str, str]):
    """torch_hccl_go.Options carrying env's HCCL_GO_* settings. The Go runtime reads
    the environment of the process as it was at exec (the loader hands it envp), so
    variables set from Python after start-up never reach it: options do."""
    import torch_hccl_go

    extra = {k[len("HCCL_GO_") :].lower(): v for k, v in env.items() if k.startswith("HCCL_GO_")}
    return torch_hccl_go.Options(extra=extra)


def _rank_main(job, rank, world, workdir, env, timeout_s, q, args, before_init) -> None:
    os.environ.update(env)
    try:
        if before_init is not None:
            before_init(rank, world, workdir)
        import torch
        import torch.distributed as dist
        import torch_hccl_go  # noqa: F401  (loads the Go runtime in this process only)

        torch.set_num_threads(1)
        store = dist.FileStore(os.path.join(workdir, "store"), world)
        dist.init_process_group(
            "hccl_go",
            store=store,
            rank=rank,
            world_size=world,
            timeout=timedelta(seconds=timeout_s),
            pg_options=hccl_go_options(env),
        )
        result = job(rank, world, workdir, *args)
        q.put(("ok", rank, result))
    except BaseException as e:  # noqa: BLE001  (everything goes back to the parent)
        import traceback

        q.put(("error", rank, f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
    finally:
        try:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()
        except Exception:  # noqa: BLE001  (a failed communicator may refuse; the result is in)
            pass
        q.close()
        q.join_thread()


def launch(
    job: Callable[..., Any],
    world: int,
    *,
    args: tuple = (),
    env: dict[str, str] | None = None,
    op_timeout_s: float = 10.0,
    deadline_s: float = 60.0,
    before_init: Callable[[int, int, str], None] | None = None,
) -> tuple[dict[int, Any], dict[int, str], dict[int, int | None]]:
    """Runs job(rank, world, workdir, *args) on each rank after init_process_group
    (hccl_go, FileStore in workdir, timeout op_timeout_s), and before_init(rank,
    world, workdir) before it. Returns (results, errors,
    exit codes) by rank; ranks still running at the deadline are killed (exit code
    None in the report means it had to be killed)."""
    ctx = _mp_context()
    q = ctx.Queue()
    workdir = tempfile.mkdtemp(prefix="hccl_go_rel_")
    procs = []
    results: dict[int, Any] = {}
    errors: dict[int, str] = {}
    codes: dict[int, int | None] = {}
    try:
        for rank in range(world):
            p = ctx.Process(
                target=_rank_main,
                args=(job, rank, world, workdir, dict(env or {}), op_timeout_s, q, args, before_init),
                daemon=True,
            )
            p.start()
            procs.append(p)
        end = time.monotonic() + deadline_s
        while time.monotonic() < end and any(p.is_alive() for p in procs):
            try:
                kind, rank, payload = q.get(timeout=0.1)
            except queue.Empty:
                continue
            (results if kind == "ok" else errors)[rank] = payload
        while True:  # what was queued just before the last exits
            try:
                kind, rank, payload = q.get(timeout=0.2)
            except queue.Empty:
                break
            (results if kind == "ok" else errors)[rank] = payload
        for rank, p in enumerate(procs):
            if p.is_alive():
                p.kill()
                p.join(5)
                codes[rank] = None
            else:
                p.join()
                codes[rank] = p.exitcode
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        q.close()
        shutil.rmtree(workdir, ignore_errors=True)
    return results, errors, codes


# Segment files of transport/shm (hccl-go-<hash>-<rank>) and transport/arena
# (hccl-go-arena-<hash>-<rank>); test directories of other packages do not match.
_SEGMENT = re.compile(r"^hccl-go-(arena-)?[0-9a-f]{16}-[0-9]+$")


def shm_entries() -> set[str]:
    """The hccl_go segment files in /dev/shm now."""
    try:
        return {n for n in os.listdir("/dev/shm") if _SEGMENT.match(n)}
    except OSError:
        return set()


def leftover_shm(before: set[str], settle_s: float = 2.0) -> set[str]:
    """Entries that appeared since `before` and are still there after settle_s (other
    jobs on this host create and unlink their own in milliseconds)."""
    new = shm_entries() - before
    if new:
        time.sleep(settle_s)
        new &= shm_entries()
    return new
