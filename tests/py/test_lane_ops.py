"""The C fast lane's other ops: a synchronous dist.broadcast, all_gather_into_tensor,
reduce_scatter_tensor, barrier and reduce on one host run in the library's C lane
(export/lane.c), chunk by chunk as the arena runs them (reduce: one-shot in one epoch, or
the reduce-scatter/all-gather pipeline); they meet ranks that run them on Go's path epoch
for epoch:

- every rank ends with the expected bytes (reductions bitwise equal to a reference that
  reduces in rank order), for several dtypes and reduce ops, sizes from empty through an
  inline slot to one chunk (1 MiB of broadcast and all_gather block, 256 KiB of
  reduce_scatter block, one-shot's 256 KiB of reduce at 2 ranks) and past it, roots first
  and last, in place and not, whether the ranks take the lane or one of them runs Go's
  path;
- the lane ran them (comm_info's fast_lane_ops counts the ops it ran from start to end);
- ranks that call different ops fail alike and the group goes on;
- a peer that dies while a rank waits in the lane becomes an error naming it.
"""

from __future__ import annotations

import os

import pytest
from harness import BACKEND
from reliability_launch import launch

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="the C lane is hccl_go's")

LIMIT = 1 << 20  # intra.LaneMoveChunk with the default arena
REDUCE_LIMIT = 256 << 10  # intra.LaneLimit at 2 ranks


def _counts(es: int) -> list[int]:
    # empty, one, odd, a full inline slot and one element more, one chunk, three chunks
    inline = 4096 // es
    return [0, 1, 7, inline, inline + 1, LIMIT // es, 2 * LIMIT // es + 3]


def _ops_job(rank, world, workdir):
    """Every case against its expected bytes; returns the failures and comm_info."""
    import torch
    import torch.distributed as dist
    import torch_hccl_go
    from reference import dtype_name, make_input, mismatch
    from test_direct import _reduce_op, bitwise_reference

    failures = []
    calls = {"broadcast": 0, "allgather": 0, "barrier": 0, "reduce": 0, "reducescatter": 0}
    for dtype in (torch.float32, torch.bfloat16, torch.int8, torch.float64):
        es = torch.empty(0, dtype=dtype).element_size()
        for n in _counts(es):
            case = f"{dtype_name(dtype)} n={n}"
            for root in (0, world - 1):
                want = make_input(root, dtype, n, "any")
                t = want.clone() if rank == root else torch.zeros(n, dtype=dtype)
                dist.broadcast(t, root)
                calls["broadcast"] += 1
                if bad := mismatch(t, want):
                    failures.append(f"broadcast root {root} {case}: {bad}")
            blocks = [make_input(r, dtype, n, "any") for r in range(world)]
            want = torch.cat(blocks)
            out = torch.zeros(world * n, dtype=dtype)
            if n % 2:  # in place: the input is this rank's block of the output
                inp = out[rank * n : (rank + 1) * n]
                inp.copy_(blocks[rank])
            else:
                inp = blocks[rank].clone()
            dist.all_gather_into_tensor(out, inp)
            calls["allgather"] += 1
            if bad := mismatch(out, want):
                failures.append(f"all_gather_into_tensor {case}: {bad}")
            dist.barrier()
            calls["barrier"] += 1
    for dtype, ops in (
        (torch.float32, ("SUM", "AVG", "PREMUL_SUM", "MAX")),
        (torch.bfloat16, ("SUM",)),
        (torch.int32, ("SUM", "BXOR")),
    ):
        es = torch.empty(0, dtype=dtype).element_size()
        for op in ops:
            for n in [0, 1, 7, 4096 // es + 1, REDUCE_LIMIT // es, REDUCE_LIMIT // es + 3, 3 * REDUCE_LIMIT // es + 5]:
                case = f"{dtype_name(dtype)} {op} n={n}"
                inputs = [make_input(r, dtype, n, "any") for r in range(world)]
                want = bitwise_reference(inputs, op)
                root = n % world
                t = inputs[rank].clone()
                dist.reduce(t, root, op=_reduce_op(op))
                calls["reduce"] += 1
                if rank == root and (bad := mismatch(t, want)):
                    failures.append(f"reduce root {root} {case}: {bad}")
                # reduce_scatter: blocks of n elements, in place on odd n.
                blocks = [make_input(r + 8, dtype, world * n, "any") for r in range(world)]
                want = bitwise_reference(blocks, op)[rank * n : (rank + 1) * n]
                send = blocks[rank].clone()
                out = send[rank * n : (rank + 1) * n] if n % 2 else torch.zeros(n, dtype=dtype)
                dist.reduce_scatter_tensor(out, send, op=_reduce_op(op))
                calls["reducescatter"] += 1
                if bad := mismatch(out, want):
                    failures.append(f"reduce_scatter_tensor {case}: {bad}")
    info = torch_hccl_go.comm_info()
    return {"failures": failures, "fast_lane": info["fast_lane"], "ran": info.get("fast_lane_ops", {}), "calls": calls}


def _go_path_on_rank0(rank, world, workdir):
    if rank == 0:
        os.environ["HCCL_GO_FAST_LANE"] = "0"


@pytest.mark.parametrize(
    ("world", "go_rank0"), [(2, False), (3, False), (2, True)], ids=["world2", "world3", "rank0-on-go"]
)
def test_lane_ops_are_right_and_run_in_c(world, go_rank0):
    results, errors, codes = launch(
        _ops_job, world, op_timeout_s=60, deadline_s=600, before_init=_go_path_on_rank0 if go_rank0 else None
    )
    assert not errors and sorted(results) == list(range(world)), (errors, codes)
    for rank, r in results.items():
        assert not r["failures"], f"rank {rank}: {len(r['failures'])} cases differ:\n" + "\n".join(r["failures"][:20])
        if go_rank0 and rank == 0:
            assert r["fast_lane"] == "off" and not r["ran"], r
            continue
        assert r["fast_lane"] == "c", r
        # Calls past the limit run in Go, and a wait that outlasts the lane's spin hands an
        # op over to Go (counted there, not here); on 2 CPUs most stay in C.
        for kind, n in r["calls"].items():
            assert r["ran"].get(kind, 0) >= n // 3, f"rank {rank}: the lane ran {r['ran']} of {r['calls']}"


def _mismatch_job(rank, world, workdir):
    import torch
    import torch.distributed as dist

    out = []
    gather, scatter = dist.all_gather_into_tensor, dist.reduce_scatter_tensor
    cases = [
        lambda: dist.broadcast(torch.ones(4), 0) if rank == 0 else gather(torch.ones(4), torch.ones(2)),
        lambda: dist.broadcast(torch.ones(4), rank),  # roots differ
        lambda: gather(torch.ones(2 * (rank + 1) * 2), torch.ones(2 * (rank + 1))),
        lambda: dist.barrier() if rank == 0 else dist.broadcast(torch.ones(2), 0),
        lambda: dist.reduce(torch.ones(4), 0) if rank == 0 else scatter(torch.ones(2), torch.ones(4)),
        lambda: scatter(torch.ones(rank + 1), torch.ones(2 * (rank + 1))),
    ]
    for case in cases:
        try:
            case()
            out.append(None)
        except RuntimeError as e:
            out.append(str(e))
        t = torch.ones(3)
        dist.all_reduce(t)  # still in step
        assert torch.equal(t, torch.full((3,), float(world))), t
    return out


def test_lane_op_mismatch_fails_every_rank_alike():
    results, errors, codes = launch(_mismatch_job, 2, op_timeout_s=30, deadline_s=120)
    assert not errors and sorted(results) == [0, 1], (errors, codes)
    for rank, out in results.items():
        for msg in out:
            assert msg and "ranks called different collectives" in msg, (rank, msg)
    assert "rank 1 called allgather, this rank broadcast" in results[0][0], results[0][0]


def _dead_peer_job(rank, world, workdir, op):
    import time

    import torch
    import torch.distributed as dist

    t = torch.ones(1024)
    out = torch.ones(2048)
    dist.barrier()
    if rank == 1:
        time.sleep(0.3)
        os._exit(0)  # gone without a word, while rank 0 waits in the lane
    t0 = time.time()
    try:
        {
            "broadcast": lambda: dist.broadcast(t, 1),
            "allgather": lambda: dist.all_gather_into_tensor(out, t),
            "barrier": dist.barrier,
            "reduce": lambda: dist.reduce(t, 1),
            "reducescatter": lambda: dist.reduce_scatter_tensor(t[:512], t),
        }[op]()
        return {"error": None}
    except RuntimeError as e:
        return {"error": str(e), "waited": time.time() - t0}


@pytest.mark.parametrize("op", ["broadcast", "allgather", "barrier", "reduce", "reducescatter"])
def test_lane_op_dead_peer_becomes_an_error_naming_it(op):
    results, errors, codes = launch(_dead_peer_job, 2, args=(op,), op_timeout_s=60, deadline_s=120)
    assert not errors and 0 in results, (errors, codes)
    msg = results[0]["error"]
    assert msg and "rank 1" in msg and f"{op} seq 2" in msg, msg
    assert "timed out" not in msg, f"the death was not noticed, the op timed out: {msg}"
