"""torch_hccl_go.all_reduce (the direct op, in place and synchronous, without c10d's
dispatch) and the synchronous dist.all_reduce, which both run the library's blocking
all_reduce and, up to 256 KiB at 2 ranks, its fast lane:

- every dtype and reduce op, sizes 0, 1, odd, inline, data-half and past the fast lane,
  bitwise equal to a local reference that reduces in rank order with the dtype's
  rounding, on the default group and on a subgroup (new_group);
- bad input raises a clear Python exception (wrong device, non-contiguous, a group whose
  backend is not hccl_go, a placeholder group, an op the dtype does not have);
- ranks that call different ops fail alike and the group goes on;
- a peer that dies while a rank waits in the direct op becomes an error naming it;
- the op works under torch.compile (fullgraph) as the custom op hccl_go::all_reduce_
  (there with a dist.ReduceOp.<NAME>; the custom op itself takes PREMUL_SUM's factor).
"""

from __future__ import annotations

import os

import pytest
from harness import BACKEND
from reliability_launch import launch

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="torch_hccl_go.all_reduce is hccl_go's")

PREMUL_FACTOR = 0.75


def bitwise_reference(inputs, op: str):
    """The all_reduce of inputs (one tensor per rank) as the library computes it: in rank
    order, each step rounded in the dtype (16-bit floats computed in float32 and rounded
    once), PREMUL_SUM scaling each input first, AVG dividing the sum once."""
    import torch
    from reference import PREMUL_FACTOR as factor
    from reference import reduce_reference

    dtype = inputs[0].dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        return reduce_reference(inputs, op)[0]  # exact: wrapped integers, bools
    wide = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    def rounded(x):
        return x.to(dtype)

    xs = [x.to(wide) for x in inputs]
    if op == "PREMUL_SUM":
        xs = [rounded(x * torch.tensor(factor, dtype=wide)).to(wide) for x in xs]
    binary = {
        "SUM": torch.add, "AVG": torch.add, "PREMUL_SUM": torch.add,
        "PRODUCT": torch.mul, "MIN": torch.minimum, "MAX": torch.maximum,
    }[op]
    acc = xs[0]
    for x in xs[1:]:
        acc = rounded(binary(acc, x)).to(wide)
    if op == "AVG":
        acc = acc / torch.tensor(len(inputs), dtype=wide)
    return rounded(acc)


def _cases(world):
    import torch
    from reference import ALL_DTYPES, REDUCE_OPS, op_is_tested, op_is_valid

    for dtype in ALL_DTYPES + (torch.complex64,):
        es = torch.empty(0, dtype=dtype).element_size()
        # empty, one, odd, a full inline slot, a data half, the fast lane's limit at two
        # ranks and past it (one-shot in Go), the pipeline.
        counts = [0, 1, 7, 4096 // es, 4096 // es + 1, (256 << 10) // es - 1, (256 << 10) // es + 3, 300007]
        for op in REDUCE_OPS:
            if not (op_is_valid(dtype, op) and op_is_tested(dtype, op)):
                continue
            if dtype.is_complex and op != "SUM":
                continue  # complex AVG and PREMUL_SUM round differently in torch's own arithmetic
            for n in counts:
                yield dtype, op, n


def _input(rank: int, dtype, n: int, kind: str):
    """reference.make_input, and complex inputs from two real ones."""
    import torch
    from reference import make_input

    if dtype.is_complex:
        return torch.complex(make_input(rank, torch.float32, n, kind), make_input(rank + 64, torch.float32, n, kind))
    return make_input(rank, dtype, n, kind)


def _reduce_op(op: str):
    import torch.distributed as dist

    if op == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(PREMUL_FACTOR)
    return getattr(dist.ReduceOp, op)


def _results_job(rank, world, workdir):
    """Both entries, on the default group and on a subgroup of ranks 0 and 2 (world 3),
    against the bitwise reference; returns the cases that differ."""
    import torch
    import torch.distributed as dist
    import torch_hccl_go
    from reference import dtype_name, mismatch

    groups = {"world": (None, list(range(world)))}
    if world > 2:
        members = [0, world - 1]
        sub = dist.new_group(members)
        if rank in members:
            groups["subgroup"] = (sub, members)
    failures = []
    for dtype, op, n in _cases(world):
        kind = "product" if op == "PRODUCT" else "any"
        for gname, (group, members) in groups.items():
            inputs = [_input(r, dtype, n, kind) for r in members]
            want = bitwise_reference(inputs, op)
            for entry in ("direct", "dist"):
                t = _input(rank, dtype, n, kind)
                if entry == "direct":
                    torch_hccl_go.all_reduce(t, op=_reduce_op(op), group=group)
                else:
                    dist.all_reduce(t, op=_reduce_op(op), group=group)
                if t.dtype.is_complex:
                    t, w = torch.view_as_real(t), torch.view_as_real(want)
                else:
                    w = want
                bad = mismatch(t, w)
                if bad:
                    failures.append(f"{entry} {gname} {dtype_name(dtype)} {op} n={n}: {bad}")
    info = torch_hccl_go.comm_info()
    return {"failures": failures, "fast_lane": info["fast_lane"]}


def _go_path_on_rank0(rank, world, workdir):
    if rank == 0:
        os.environ["HCCL_GO_FAST_LANE"] = "0"


def test_c_lane_meets_go_path_bitwise():
    """Rank 0 runs every all_reduce on Go's path (HCCL_GO_FAST_LANE=0), rank 1 in the C
    lane (one-shot, and the pipeline beyond 256 KiB): same epochs, same results."""
    results, errors, codes = launch(
        _results_job, 2, op_timeout_s=60, deadline_s=600, before_init=_go_path_on_rank0
    )
    assert not errors and sorted(results) == [0, 1], (errors, codes)
    assert [results[r]["fast_lane"] for r in (0, 1)] == ["off", "c"], results
    for rank, r in results.items():
        assert not r["failures"], f"rank {rank}: {len(r['failures'])} cases differ:\n" + "\n".join(r["failures"][:20])


@pytest.mark.parametrize("world", [2, 3])
def test_direct_and_dist_all_reduce_are_bitwise_right(world):
    results, errors, codes = launch(_results_job, world, op_timeout_s=60, deadline_s=600)
    assert not errors and sorted(results) == list(range(world)), (errors, codes)
    for rank, r in results.items():
        assert r["fast_lane"] == "c", f"rank {rank}: comm_info says fast_lane={r['fast_lane']}"
        assert not r["failures"], f"rank {rank}: {len(r['failures'])} cases differ:\n" + "\n".join(r["failures"][:20])


def _refusals_job(rank, world, workdir):
    """Every bad call raises at once, with a message saying what is wrong; the group then
    still works. Returns {case: (exception type, message)}."""
    import torch
    import torch.distributed as dist
    import torch_hccl_go

    gloo = dist.new_group(backend="gloo")
    pair = dist.new_group([0, 1])
    cases = {
        "non-contiguous": lambda: torch_hccl_go.all_reduce(torch.ones(4, 4)[:, ::2]),
        "device": lambda: torch_hccl_go.all_reduce(torch.ones(4, device="meta")),
        "gloo group": lambda: torch_hccl_go.all_reduce(torch.ones(4), group=gloo),
        "op for dtype": lambda: torch_hccl_go.all_reduce(torch.ones(4), op=dist.ReduceOp.BXOR),
        "not a tensor": lambda: torch_hccl_go.all_reduce([1.0, 2.0]),
        "not a group": lambda: torch_hccl_go.all_reduce(torch.ones(4), group="world"),
    }
    if rank == 2:  # not a member of pair: new_group gave it a placeholder
        cases["placeholder group"] = lambda: torch_hccl_go.all_reduce(torch.ones(4), group=pair)
    out = {}
    for name, call in cases.items():
        try:
            call()
            out[name] = None
        except Exception as e:  # noqa: BLE001  (the type is part of the check)
            out[name] = (type(e).__name__, str(e))
    t = torch.ones(3)
    torch_hccl_go.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(world))), t
    return out


def test_direct_refuses_bad_input_clearly():
    results, errors, codes = launch(_refusals_job, 3, op_timeout_s=30, deadline_s=120)
    assert not errors and sorted(results) == [0, 1, 2], (errors, codes)
    want = {
        "non-contiguous": ("ValueError", "is not contiguous"),
        "device": ("ValueError", "on meta; hccl_go reduces CPU tensors"),
        "gloo group": ("ValueError", "serves CPU tensors with gloo, not hccl_go"),
        "op for dtype": ("ValueError", "BXOR needs an integer or bool tensor"),
        "not a tensor": ("TypeError", "tensor must be a torch.Tensor"),
        "not a group": ("TypeError", "group must be a ProcessGroup"),
        "placeholder group": ("TypeError", "group must be a ProcessGroup"),
    }
    for rank, out in results.items():
        for case, got in out.items():
            kind, text = want[case]
            assert got is not None, f"rank {rank}: {case} raised nothing"
            assert got[0] == kind and text in got[1], f"rank {rank}: {case}: {got}"
    assert "placeholder group" in results[2]


def _mismatch_job(rank, world, workdir):
    import torch
    import torch_hccl_go

    out = []
    # In an inline slot, in the data halves, in the pipeline (1 MiB of float32).
    for n in ((2, 4), (4096, 8192), (1 << 18, (1 << 18) + 8)):
        try:
            torch_hccl_go.all_reduce(torch.ones(n[rank]))
            out.append(None)
        except RuntimeError as e:
            out.append(str(e))
        t = torch.ones(3)
        torch_hccl_go.all_reduce(t)  # still in step
        assert torch.equal(t, torch.full((3,), float(world))), t
    return out


def test_direct_mismatch_fails_every_rank_alike():
    results, errors, codes = launch(_mismatch_job, 2, op_timeout_s=30, deadline_s=120)
    assert not errors and sorted(results) == [0, 1], (errors, codes)
    for rank, out in results.items():
        for msg in out:
            assert msg and "ranks called different collectives" in msg, (rank, msg)
    assert "rank 1 has 16 bytes, this rank 8" in results[0][0], results[0][0]


def _dead_peer_job(rank, world, workdir, n=4):
    import time

    import torch
    import torch_hccl_go

    t = torch.ones(n)
    torch_hccl_go.all_reduce(t)
    if rank == 1:
        time.sleep(0.3)
        os._exit(0)  # gone without a word, while rank 0 waits in the direct op
    t0 = time.time()
    try:
        torch_hccl_go.all_reduce(t)
        return {"error": None}
    except RuntimeError as e:
        return {"error": str(e), "waited": time.time() - t0}


@pytest.mark.parametrize("n", [4, 1 << 20], ids=["one-shot", "pipeline"])
def test_direct_dead_peer_becomes_an_error_naming_it(n):
    results, errors, codes = launch(_dead_peer_job, 2, args=(n,), op_timeout_s=60, deadline_s=120)
    assert not errors and 0 in results, (errors, codes)
    msg = results[0]["error"]
    assert msg and "rank 1" in msg and "allreduce seq 2" in msg, msg
    assert "timed out" not in msg, f"the death was not noticed, the op timed out: {msg}"


def _compile_job(rank, world, workdir):
    import torch
    import torch.distributed as dist
    import torch_hccl_go

    pair = dist.new_group([0, 1])

    def step(x, op, group):
        y = x * 2
        torch_hccl_go.all_reduce(y, op=op, group=group)
        return y + 1

    out = {}
    for backend in ("eager", "aot_eager"):
        for name in ("SUM", "MAX", "AVG"):
            op = getattr(dist.ReduceOp, name)
            torch._dynamo.reset()  # one compilation per case: no recompilation limit to hit
            f = torch.compile(step, fullgraph=True, backend=backend)
            got = f(torch.full((5,), float(rank + 1)), op, None)
            sub = f(torch.full((5,), float(rank + 1)), op, pair) if rank in (0, 1) else None
            out[f"{backend}/{name}"] = (got.tolist(), None if sub is None else sub.tolist())
    # The custom op itself takes PREMUL_SUM's factor.
    y = torch.full((5,), float(rank + 1))
    world_name = dist.group.WORLD.group_name
    torch.compile(lambda t: torch.ops.hccl_go.all_reduce_(t, int(dist.ReduceOp.PREMUL_SUM), 0.5, world_name),
                  fullgraph=True, backend="aot_eager")(y)
    out["op/PREMUL_SUM"] = (y.tolist(), None)
    try:
        torch._dynamo.reset()
        torch.compile(step, fullgraph=True, backend="eager")(torch.ones(5), dist._make_nccl_premul_sum(0.5), None)
        out["premul object"] = "no error"
    except Exception as e:  # noqa: BLE001
        out["premul object"] = str(e)
    return out


def test_direct_op_under_torch_compile():
    results, errors, codes = launch(_compile_job, 3, op_timeout_s=120, deadline_s=600)
    assert not errors and sorted(results) == [0, 1, 2], (errors, codes)
    # Rank r holds 2(r+1) before the reduction; world 3, pair of ranks 0 and 1.
    expect = {"SUM": (12, 6), "MAX": (6, 4), "AVG": (4, 3)}
    for rank, out in results.items():
        assert "PREMUL_SUM scale the tensor and use SUM" in out.pop("premul object"), out
        assert out.pop("op/PREMUL_SUM")[0] == [0.5 * 6] * 5, rank
        for case, (got, sub) in out.items():
            world_want, pair_want = expect[case.split("/")[1]]
            assert got == [world_want + 1.0] * 5, (rank, case, got)
            if rank in (0, 1):
                assert sub == [pair_want + 1.0] * 5, (rank, case, sub)
