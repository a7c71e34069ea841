"""Two ranks of one host that land on one CPU move apart, also when only small all_reduces run:
those go through the C fast lane (export/lane.c), whose waits note their CPU in the arena's
place words as Go's waits do (transport/arena/placement.go, docs/overlap.md "Ranks on one
CPU"). Without that, a job whose ranks were put on one CPU (by another library's barrier, say)
stays there through every small op and pays for it in the next large one."""

from __future__ import annotations

import os

import pytest
from harness import run_ranks

CPUS = sorted(os.sched_getaffinity(0))


def colocate_then_small_ops(ctx, rounds: int, ops: int) -> dict:
    import torch
    import torch.distributed as dist
    from torch_hccl_go import comm_info
    from torch_hccl_go.stats import stats

    allowed = os.sched_getaffinity(0)
    first = min(allowed)
    t = torch.ones(2)
    wrong = 0
    for _ in range(rounds):
        # Both ranks onto one CPU, then back to the whole set: the threads stay where they
        # are until something moves them.
        os.sched_setaffinity(0, {first})
        dist.all_reduce(t.fill_(1))
        os.sched_setaffinity(0, allowed)
        for _ in range(ops):
            dist.all_reduce(t.fill_(ctx.rank + 1))
            wrong += int(t.tolist() != [3.0, 3.0])
        moved = torch.tensor([float(stats()["placement_moves"])])
        dist.all_reduce(moved)  # every rank leaves the loop together
        if moved.item() > 0:
            break
    return {"moves": stats()["placement_moves"], "wrong": wrong, "fast_lane": comm_info()["fast_lane"]}


@pytest.mark.skipif(len(CPUS) < 2, reason="needs at least 2 CPUs to move a rank to another one")
def test_small_ops_in_the_c_lane_move_colocated_ranks_apart() -> None:
    results = run_ranks(colocate_then_small_ops, 2, args=(5, 200), timeout=120)
    assert [r["wrong"] for r in results] == [0, 0]
    assert results[0]["fast_lane"] == "c", f"the small ops did not take the C lane: {results[0]}"
    # The rank with the higher local index moves (placement.go): at least one move in all.
    assert sum(r["moves"] for r in results) >= 1, f"no rank moved off the shared CPU: {results}"
