"""One rank of the torchrun jobs that test_torchrun_netns.py runs across two emulated hosts.

    torchrun ... torchrun_netns_worker.py checks OUT_DIR
    torchrun ... torchrun_netns_worker.py dead-host OUT_DIR

The rank initialises the default group from what torchrun sets (env://) with the backend
named in $BACKEND, and writes what it found to OUT_DIR/<phase>-rank<r>.json; the test reads
and judges those files (the hosts share the file system).

checks: the collective matrix of collective_matrix.py over the default group (every
  collective against a local reference, results that must agree hashed and compared across
  ranks); barrier, the object collectives and subgroups spanning both hosts, checked here;
  then DDP, whose parameters must end bitwise alike on every rank and equal to a
  single-process reference.
dead-host: all_reduces in a loop, on a group with a 10 s timeout, until one fails. Each
  rank writes OUT_DIR/ready-rank<r> after a few iterations; the test then kills every
  process of the second host, and the survivors record their error and when it came.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
from collective_matrix import COLLECTIVES, Matrix
from harness import COLLECTIVE_TIMEOUT, import_backend
from reference import digest, make_input, mismatch, reduce_reference
from training_checks import DDP_VARIANTS, compare_params, same_on_all_ranks, train_ddp, train_reference

# The matrix across hosts: a few dtypes, empty to a few MiB ("huge": 9 MiB, for the
# float dtypes of collective_matrix.HUGE_DTYPES), odd counts in between.
MATRIX_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int64)
MATRIX_SIZES = (0, 1, 7, 999, "big", "huge")
DDP_CHECKED = ("mlp", "many_small_buckets")
DDP_STEPS = 10
DEAD_HOST_TIMEOUT = timedelta(seconds=10)  # the timeout of the group that loses a host
READY_AFTER = 20  # all_reduces before a rank says it is ready to lose a host


class Progress:
    """What collective_matrix.Matrix needs of the harness's RankContext, for a rank that
    torchrun started: its rank, world size and backend, and a file that always holds the
    step it is in (the test shows it when the job hangs)."""

    def __init__(self, rank: int, world_size: int, backend: str, out: Path) -> None:
        self.rank, self.world_size, self.backend = rank, world_size, backend
        self._path = out / f"progress-rank{rank}"

    def progress(self, step: str) -> None:
        self._path.write_text(step)


def checks(ctx: Progress, out: Path) -> dict:
    """{check name: list of failures} for every check of this rank, and its comm_info."""
    failures: dict[str, list[str]] = {}
    seconds: dict[str, float] = {}
    matrix = Matrix(ctx, COLLECTIVES, MATRIX_SIZES, MATRIX_DTYPES, with_gloo=False)
    report = matrix.run()
    seconds["matrix"] = report.seconds
    for (coll, dtype), msgs in report.failures.items():
        failures[f"{coll} {dtype}"] = msgs
    gloo = matrix.gloo  # a gloo group of every rank, to compare results without trusting the backend
    for name, check in (
        ("barrier", lambda: check_barrier(ctx, out)),
        ("object collectives", lambda: check_objects(ctx)),
        ("subgroups across hosts", lambda: check_subgroups(ctx, gloo)),
        *((f"ddp {v}", lambda v=v: check_ddp(ctx, v, gloo)) for v in DDP_CHECKED),
    ):
        ctx.progress(name)
        t0 = time.perf_counter()
        try:
            check()
            failures.setdefault(name, [])
        except Exception:  # noqa: BLE001  (reported by the test, named)
            failures[name] = [traceback.format_exc()]
        seconds[name] = time.perf_counter() - t0
    info = {}
    if ctx.backend == "hccl_go":
        import torch_hccl_go

        info = torch_hccl_go.comm_info()
    return {"failures": failures, "cases": sum(report.cases.values()), "seconds": seconds, "info": info}


def check_barrier(ctx: Progress, out: Path) -> None:
    """No rank leaves a barrier before every rank has entered it: each rank leaves a mark
    before it enters, and looks for every rank's mark after it leaves."""
    for round_ in range(3):
        (out / f"barrier{round_}-rank{ctx.rank}").touch()
        dist.barrier()
        missing = [r for r in range(ctx.world_size) if not (out / f"barrier{round_}-rank{r}").exists()]
        assert not missing, f"barrier {round_}: left it before ranks {missing} entered"


def check_objects(ctx: Progress) -> None:
    rank, world = ctx.rank, ctx.world_size

    def obj(r: int) -> dict:
        return {"rank": r, "host": os.environ.get("HCCL_GO_HOST_ID", ""), "data": list(range(r * 3))}

    # Each rank knows only its own host id: compare what does not depend on it.
    def key(o: dict) -> tuple:
        return o["rank"], o["data"]

    everyone: list = [None] * world
    dist.all_gather_object(everyone, obj(rank))
    assert [key(o) for o in everyone] == [key(obj(r)) for r in range(world)], f"all_gather_object: {everyone}"
    hosts = {o["host"] for o in everyone}
    assert len(hosts) == 2, f"all_gather_object: ranks report hosts {hosts}, expected two"
    for root in range(world):
        lst = [obj(root), "tail"] if rank == root else [None, None]
        dist.broadcast_object_list(lst, src=root)
        assert key(lst[0]) == key(obj(root)) and lst[1] == "tail", f"broadcast_object_list from {root}: {lst}"
        gathered = [None] * world if rank == root else None
        dist.gather_object(obj(rank), gathered, dst=root)
        if rank == root:
            assert [key(o) for o in gathered] == [key(obj(r)) for r in range(world)], f"gather_object to {root}"
        got: list = [None]
        dist.scatter_object_list(got, [obj(r) for r in range(world)] if rank == root else None, src=root)
        assert key(got[0]) == key(obj(rank)), f"scatter_object_list from {root}: {got}"


def check_subgroups(ctx: Progress, gloo) -> None:
    """Groups with ranks on both hosts (global ranks 0,1 on the first host, 2,3 on the
    second): all_reduce, broadcast and all_gather against the reference, and bitwise alike
    on every member."""
    rank = ctx.rank
    for members in ([1, 2], [0, 2, 3], [3, 0]):
        group = dist.new_group(members, timeout=COLLECTIVE_TIMEOUT)  # every rank calls new_group
        ranks = sorted(members)
        hashes = {}
        if rank in ranks:
            n = 1001
            xs = [make_input(r, torch.float32, n) for r in ranks]
            mine = xs[ranks.index(rank)]
            t = mine.clone()
            dist.all_reduce(t, group=group)
            expected, bound = reduce_reference(xs, "SUM")
            if (msg := mismatch(t, expected, bound)) is not None:
                raise AssertionError(f"all_reduce on {members}: {msg}")
            hashes["all_reduce"] = digest(t)
            root = ranks[-1]
            b = mine.clone() if rank == root else torch.zeros(n)
            dist.broadcast(b, src=root, group=group)
            if (msg := mismatch(b, xs[-1])) is not None:
                raise AssertionError(f"broadcast from {root} on {members}: {msg}")
            g = torch.zeros(n * len(ranks))
            dist.all_gather_into_tensor(g, mine, group=group)
            if (msg := mismatch(g, torch.cat(xs))) is not None:
                raise AssertionError(f"all_gather_into_tensor on {members}: {msg}")
        everyone: list = [None] * ctx.world_size
        dist.all_gather_object(everyone, hashes, group=gloo)
        seen = {json.dumps(everyone[r], sort_keys=True) for r in ranks}
        assert len(seen) == 1, f"results differ bitwise across {members}: {[everyone[r] for r in ranks]}"
        dist.destroy_process_group(group)


def check_ddp(ctx: Progress, name: str, gloo) -> None:
    (v,) = [v for v in DDP_VARIANTS if v.name == name]
    got = train_ddp(v, None, DDP_STEPS, ctx.rank)
    same_on_all_ranks(got, gloo, ctx.world_size, f"DDP {name} on {ctx.backend}")
    ref = train_reference(v.factory, v.data, DDP_STEPS, ctx.world_size, v.micro_steps)
    compare_params(got, ref, v.ref_tol, f"DDP {name}: {ctx.backend} vs single-process reference")


def dead_host(ctx: Progress, out: Path) -> dict:
    """all_reduces on a group of every rank with a short timeout until one fails (or 120 s
    pass): {"error": its message, "iterations", "error_at": time.time() of the failure}."""
    group = dist.new_group(timeout=DEAD_HOST_TIMEOUT)
    t = torch.ones(1 << 16)
    deadline = time.monotonic() + 120
    i = 0
    try:
        while time.monotonic() < deadline:
            ctx.progress(f"all_reduce {i}")
            dist.all_reduce(t, group=group)
            i += 1
            if i == READY_AFTER:
                (out / f"ready-rank{ctx.rank}").touch()
    except Exception as e:  # noqa: BLE001  (the error is the result)
        return {"error": str(e), "iterations": i, "error_at": time.time()}
    return {"error": None, "iterations": i, "error_at": None}


def main() -> None:
    phase, out = sys.argv[1], Path(sys.argv[2])
    backend = os.environ.get("BACKEND", "hccl_go")
    torch.set_num_threads(1)  # four ranks share two cores
    import_backend(backend)
    started = time.time()
    dist.init_process_group(backend, timeout=COLLECTIVE_TIMEOUT)
    ctx = Progress(dist.get_rank(), dist.get_world_size(), backend, out)
    result = {"rank": ctx.rank, "host": os.environ.get("HCCL_GO_HOST_ID", ""), "init_s": time.time() - started}
    try:
        result |= checks(ctx, out) if phase == "checks" else dead_host(ctx, out)
    except Exception:  # noqa: BLE001
        result["crashed"] = traceback.format_exc()
    (out / f"{phase}-rank{ctx.rank}.json").write_text(json.dumps(result))
    if phase == "checks":
        dist.destroy_process_group()
    else:
        # The group lost a host: fail, as a training script would, without the collective
        # goodbye of a destroy. (A rank that exits 0 makes its torchrun wait for the dead
        # host's torchrun at its exit barrier.)
        os._exit(1 if result.get("error") or "crashed" in result else 0)


if __name__ == "__main__":
    main()
