"""Groups built as splits of the default group, checked on one rank of a spawned job.

`split_job` runs every check in CHECKS in order at world size 4 and returns {name:
outcome}, as semantics_checks.py does. Results on a split are compared with the same
collective on a gloo group of the same members in the same order (the reference), and the
full collective matrix (collective_matrix.py) runs on a split spanning every rank.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable

import torch
import torch.distributed as dist
from harness import COLLECTIVE_TIMEOUT

WORLD = 4


def _split_info(group) -> dict | None:
    """The split description of a group's hccl_go communicator (None: it owns its links)."""
    return json.loads(group._get_backend(torch.device("cpu")).comm_info()).get("split")


def _counts() -> tuple[int, int]:
    return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def _gloo_twin(ranks: list[int]):
    """A gloo group of the same members in the same order (non-members call too)."""
    return dist.new_group(ranks, backend="gloo", sort_ranks=False, timeout=COLLECTIVE_TIMEOUT)


def _ops(group, rank: int) -> dict[str, object]:
    """Every collective once on group (ranks numbered as the group numbers them), with
    inputs that depend on the caller's global rank; returns what this rank ended with."""
    n = dist.get_world_size(group)
    me = dist.get_group_rank(group, rank)
    last = n - 1
    x = torch.arange(6, dtype=torch.float32) + 10 * rank
    out: dict[str, object] = {}

    t = x.clone()
    dist.all_reduce(t, group=group)
    out["all_reduce_sum"] = t
    t = x.clone()
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    out["all_reduce_max"] = t
    t = x.clone()
    dist.broadcast(t, group_src=last, group=group)
    out["broadcast"] = t
    t = x.clone()
    dist.reduce(t, group_dst=last, group=group)
    out["reduce"] = t if me == last else None
    ts = [torch.empty(6) for _ in range(n)]
    dist.all_gather(ts, x, group=group)
    out["all_gather"] = torch.stack(ts)
    t = torch.empty(6 * n)
    dist.all_gather_into_tensor(t, x, group=group)
    out["all_gather_into_tensor"] = t
    big = torch.arange(3 * n, dtype=torch.float32) * (rank + 1)
    t = torch.empty(3)
    dist.reduce_scatter_tensor(t, big, group=group)
    out["reduce_scatter_tensor"] = t
    t = torch.empty(3 * n)
    dist.all_to_all_single(t, big, group=group)
    out["all_to_all_single"] = t
    ts = [torch.empty(6) for _ in range(n)] if me == 0 else None
    dist.gather(x, ts, group_dst=0, group=group)
    out["gather"] = torch.stack(ts) if ts else None
    t = torch.empty(6)
    dist.scatter(t, [x + i for i in range(n)] if me == last else None, group_src=last, group=group)
    out["scatter"] = t
    t = torch.empty(6)
    if n > 1:
        reqs = [
            dist.isend(x, group_dst=(me + 1) % n, group=group),
            dist.irecv(t, group_src=(me - 1) % n, group=group),
        ]
        for r in reqs:
            r.wait()
    else:
        t = x.clone()
    out["send_recv_ring"] = t
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": rank}, group=group)
    out["all_gather_object"] = objs
    dist.barrier(group=group)
    return out


def _compare(got: dict, want: dict, what: str) -> None:
    for k, w in want.items():
        g = got[k]
        if isinstance(w, torch.Tensor):
            assert torch.equal(g, w), f"{what}: {k}: {g} != gloo's {w}"
        else:
            assert g == w, f"{what}: {k}: {g} != gloo's {w}"


def _check_against_gloo(ctx, group, ranks: list[int], what: str) -> None:
    """Runs _ops on the split group and on its gloo twin (created here, on every rank)."""
    twin = _gloo_twin(ranks)
    if ctx.rank not in ranks:
        return
    assert group is not None and group != dist.GroupMember.NON_GROUP_MEMBER, what
    info = _split_info(group)
    assert info is not None, f"{what}: the group is not a split of the default group"
    assert info["parent_ranks"] == ranks, f"{what}: split of {info['parent_ranks']}, expected {ranks}"
    _compare(_ops(group, ctx.rank), _ops(twin, ctx.rank), what)


def check_new_group_orders(ctx) -> None:
    """new_group in any order (sorted by torch, or kept with sort_ranks=False), with
    non-members calling too: every collective matches gloo's on the same members."""
    for ranks, sort in (([3, 1], True), ([2, 0, 3], False), ([3, 2, 1, 0], False), ([1], True)):
        g = dist.new_group(ranks, sort_ranks=sort)
        order = sorted(ranks) if sort else ranks
        _check_against_gloo(ctx, g, order, f"new_group({ranks}, sort_ranks={sort})")


def check_new_subgroups(ctx) -> None:
    """new_subgroups and new_subgroups_by_enumeration: each rank's subgroup is a split."""
    mine, _ = dist.new_subgroups(2)
    for base in (0, 2):
        _check_against_gloo(ctx, mine if ctx.rank in (base, base + 1) else None, [base, base + 1], "new_subgroups(2)")
    mine, _ = dist.new_subgroups_by_enumeration([[0, 3], [2, 1]])
    for ranks in ([0, 3], [1, 2]):
        _check_against_gloo(ctx, mine if ctx.rank in ranks else None, ranks, f"new_subgroups_by_enumeration {ranks}")


def check_split_group(ctx) -> None:
    """torch's split_group of the default group and of a split (a split of a split)."""
    split = dist.split_group(split_ranks=[[0, 1], [3, 2]])
    for ranks in ([0, 1], [3, 2]):
        _check_against_gloo(ctx, split if ctx.rank in ranks else None, ranks, f"split_group {ranks}")
    outer = dist.new_group([0, 1, 2])
    if ctx.rank in (0, 1, 2):
        inner = dist.split_group(outer, split_ranks=[[2, 0]])
    else:
        # torch counts the groups each rank makes into their names, and only the parent's
        # ranks call split_group: catch up, or later groups (gloo's too) are named apart.
        inner = None
        dist.distributed_c10d._world.group_count += 1
    _check_against_gloo(ctx, inner if ctx.rank in (0, 2) else None, [2, 0], "split_group of a split")


def check_matrix_on_split(ctx) -> None:
    """The collective matrix (every collective x dtype, small sizes, with a reference and
    gloo) on a split spanning every rank."""
    from collective_matrix import COLLECTIVES, Matrix
    from reference import ALL_DTYPES

    g = dist.new_group(list(range(ctx.world_size)))
    assert _split_info(g) is not None, "the group is not a split"
    report = Matrix(ctx, COLLECTIVES, (0, 1, 7, 1000), ALL_DTYPES, True, g).run()
    failures = [m for msgs in report.failures.values() for m in msgs]
    assert not failures, f"{len(failures)} failures, first: {failures[:5]}"
    assert sum(report.cases.values()) > 100


def check_device_mesh_fsdp(ctx) -> list[str]:
    """init_device_mesh("cpu", (2, 2)) and FSDP2 over the "dp" dimension: after a few SGD
    steps every rank holds the parameters a local run on the dp group's batches gives."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    dp = mesh["dp"]
    dp_group = dp.get_group()
    tp_group = mesh["tp"].get_group()
    notes = [f"dp {dist.get_process_group_ranks(dp_group)} tp {dist.get_process_group_ranks(tp_group)}"]
    for g in (dp_group, tp_group):
        assert _split_info(g) is not None, "mesh groups are splits"

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))

    def batch(dp_rank: int, step: int):
        g = torch.Generator().manual_seed(100 * step + dp_rank + 10 * mesh.get_local_rank("tp"))
        return torch.randn(5, 8, generator=g), torch.randn(5, 4, generator=g)

    sharded = model()
    for layer in sharded:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mesh=dp)
    fully_shard(sharded, mesh=dp)
    opt = torch.optim.SGD(sharded.parameters(), lr=0.1)
    local = model()
    local_opt = torch.optim.SGD(local.parameters(), lr=0.1)
    dp_rank = dp.get_local_rank()
    for step in range(3):
        x, y = batch(dp_rank, step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(sharded(x), y).backward()
        opt.step()
        local_opt.zero_grad()
        loss = sum(torch.nn.functional.mse_loss(local(bx), by) for bx, by in (batch(r, step) for r in range(2))) / 2
        loss.backward()
        local_opt.step()
    for (name, p), q in zip(sharded.named_parameters(), local.parameters(), strict=True):
        full = p.full_tensor()
        assert torch.allclose(full, q, atol=1e-5), f"{name}: FSDP {full.flatten()[:4]} != local {q.flatten()[:4]}"
    return notes


def check_cost_per_group(ctx) -> dict[str, float]:
    """Ten more splits (and an op on each) cost this rank at most 2 file descriptors each
    and no thread."""
    g = dist.new_group(list(range(ctx.world_size)))
    t = torch.ones(4)
    dist.all_reduce(t, group=g)
    before = _counts()
    start = time.perf_counter()
    groups = [dist.new_group([r for r in range(ctx.world_size) if r != i % ctx.world_size]) for i in range(10)]
    for g in groups:
        if g != dist.GroupMember.NON_GROUP_MEMBER:
            dist.all_reduce(t, group=g)
    seconds = time.perf_counter() - start
    after = _counts()
    fds, threads = after[0] - before[0], after[1] - before[1]
    assert fds <= 2 * len(groups), f"{fds} more file descriptors after {len(groups)} groups"
    assert threads <= 1, f"{threads} more threads after {len(groups)} groups"
    return {"fds": fds, "threads": threads, "seconds": round(seconds, 4)}


def _expect_failure(fn: Callable, keywords: tuple[str, ...], within: float) -> str:
    start = time.monotonic()
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        msg = str(e)
        took = time.monotonic() - start
        assert took < within, f"the error took {took:.1f} s: {msg}"
        missing = [k for k in keywords if k not in msg]
        assert not missing, f"error lacks {missing}: {msg}"
        return msg.splitlines()[0][:400]
    raise AssertionError("no error")


def check_bad_member_lists(ctx) -> list[str]:
    """new_group called with different member lists on different ranks (torch names the
    group alike on all of them): the members that see each other's lists fail at once,
    naming the rank that disagrees; members waiting for a rank that does not take part
    fail within the connect timeout, naming it. Every member gets an error; the default
    group stays usable."""
    from datetime import timedelta

    import torch_hccl_go

    opts = torch_hccl_go.Options(connect_timeout=timedelta(seconds=3))
    notes = []
    # Rank 1 orders the members differently; rank 3 is no member in anyone's list.
    ranks, sort = ([0, 2, 1], False) if ctx.rank == 1 else ([0, 1, 2], True)
    if ctx.rank == 3:
        dist.new_group(ranks, pg_options=opts)
    else:
        notes.append(
            _expect_failure(
                lambda: dist.new_group(ranks, sort_ranks=sort, pg_options=opts), ("same ranks, in the same order",), 2.5
            )
        )
    dist.barrier()
    # Ranks 0 and 1 list rank 3, which sees a group without itself; rank 2 lists 0 and 1,
    # which do not list it.
    ranks = [0, 1, 3] if ctx.rank in (0, 1) else [0, 1, 2]
    if ctx.rank == 3:
        dist.new_group(ranks, pg_options=opts)
    else:
        missing = "[3]" if ctx.rank in (0, 1) else "[0 1]"
        notes.append(
            _expect_failure(
                lambda: dist.new_group(ranks, pg_options=opts), (f"parent ranks {missing} did not join",), 10
            )
        )
    t = torch.ones(2)
    dist.all_reduce(t)
    assert t.tolist() == [ctx.world_size] * 2
    return notes


def check_parent_destroyed(ctx) -> list[str]:
    """The default group's backend shut down while a split lives: the split's next op fails
    on every member with an error that says so, without waiting for its timeout. Last: it
    ends the default group."""
    g = dist.new_group(list(range(ctx.world_size)))
    t = torch.ones(2)
    dist.all_reduce(t, group=g)
    dist.barrier()
    dist.distributed_c10d._get_default_group()._get_backend(torch.device("cpu")).shutdown()
    msg = _expect_failure(lambda: dist.all_reduce(t, group=g), ("split from was destroyed",), 5)
    g._get_backend(torch.device("cpu")).shutdown()  # ends cleanly
    return [msg]


CHECKS: list[Callable] = [
    check_new_group_orders,
    check_new_subgroups,
    check_split_group,
    check_matrix_on_split,
    check_device_mesh_fsdp,
    check_cost_per_group,
    check_bad_member_lists,
    check_parent_destroyed,
]

CHECK_SECONDS = 90


def split_job(ctx) -> dict[str, object]:
    """{check name: ("ok", what it returned) or ("failed", traceback)}."""
    # Every group a split, whatever its members' hosts.
    os.environ["HCCL_GO_SPLIT_GROUPS"] = "1"
    results = ctx.run_checks(CHECKS, CHECK_SECONDS)
    # The default group was shut down by the last check: torch's destroy must still end.
    done = threading.Event()
    threading.Thread(target=lambda: (dist.destroy_process_group(), done.set()), daemon=True).start()
    assert done.wait(30), "destroy_process_group hung after the parent was shut down"
    return results
