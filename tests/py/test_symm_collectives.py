"""All_reduce on symmetric tensors (torch_hccl_go.symm.empty) of 256 KiB or more reads every
rank's input where it lies and writes every rank's output (route "symmetric" in the flight
recorder), smaller ones take the arena: results equal a rank-order reference bit for bit on
every rank, for dtypes and ops, sizes 0, 1 and counts the ranks do not divide, whole tensors
and views at the same offset, blocking and async; PREMUL_SUM takes the arena, and views at
different offsets fail every rank alike."""

from __future__ import annotations

import json
import os

import pytest
from harness import run_ranks

pytestmark = pytest.mark.skipif(
    os.environ.get("HCCL_GO_TEST_BACKEND", "hccl_go") != "hccl_go", reason="symmetric memory is hccl_go's"
)

SIZES = (0, 1, 7, 1031, 300007)


# pgbackend.SymmetricMinBytes and SymmetricBlockMinBytes (all_gather's output, reduce_scatter's
# input): smaller ops take the arena.
MIN_BYTES = 256 << 10
BLOCK_MIN_BYTES = 1 << 20


def _routes(path: str) -> list[tuple[str, int, str]]:
    with open(path) as f:
        return [(op["op"], op["bytes"], op["route"]) for op in json.load(f)["ops"]]


def _job_allreduce(ctx):
    import torch
    import torch.distributed as dist
    import torch_hccl_go
    import torch_hccl_go.symm as symm

    r, p = ctx.rank, ctx.world_size
    cases = [
        (torch.float32, dist.ReduceOp.SUM),
        (torch.float32, dist.ReduceOp.AVG),
        (torch.bfloat16, dist.ReduceOp.MAX),
        (torch.float64, dist.ReduceOp.MIN),
        (torch.int32, dist.ReduceOp.PRODUCT),
        (torch.int64, dist.ReduceOp.BXOR),
        (torch.uint8, dist.ReduceOp.SUM),
    ]
    checked = 0
    for dtype, op in cases:
        big = symm.empty(max(SIZES) + 16, dtype=dtype)
        for n in SIZES:
            every = []
            for q in range(p):
                g = torch.Generator().manual_seed(1000 * n + q)
                x = torch.randint(-3, 4, (n,), generator=g)
                if op == dist.ReduceOp.PRODUCT:
                    x = 2 ** torch.randint(0, 2, (n,), generator=g)
                every.append(
                    x.to(dtype) if dtype != torch.uint8 else torch.randint(0, 256, (n,), generator=g).to(dtype)
                )
            want = every[0].clone()
            for x in every[1:]:
                if op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG):
                    want = want + x
                elif op == dist.ReduceOp.MAX:
                    want = torch.maximum(want, x)
                elif op == dist.ReduceOp.MIN:
                    want = torch.minimum(want, x)
                elif op == dist.ReduceOp.PRODUCT:
                    want = want * x
                else:
                    want = want ^ x
            if op == dist.ReduceOp.AVG:
                want = want / p
            for at, async_op in ((0, False), (5, True)):  # the whole head, then a view at offset 5
                t = big[at : at + n]
                t.copy_(every[r])
                w = dist.all_reduce(t, op=op, async_op=async_op)
                if async_op:
                    w.wait()
                assert torch.equal(t, want), f"{dtype} {op} n={n} at {at}: {t[:6]} want {want[:6]}"
                checked += 1
        del big
    path = torch_hccl_go.dump_trace(None, os.path.join(ctx.store_dir, f"trace{r}.json"))
    routes = [(nbytes, route) for kind, nbytes, route in _routes(path) if kind == "allreduce" and nbytes > 0]
    for nbytes, route in routes:
        want = "symmetric" if nbytes >= MIN_BYTES else "arena"
        assert route == want, f"an all_reduce of {nbytes} bytes took {route}: {routes}"
    symmetric = sum(route == "symmetric" for _, route in routes)
    assert symmetric == 2 * len(cases), f"routes {routes}"

    # PREMUL_SUM is not in place: the arena runs it, on every rank alike.
    t = symm.empty(MIN_BYTES, dtype=torch.float32)
    t.fill_(float(r + 1))
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    assert torch.equal(t, torch.full_like(t, 0.5 * p * (p + 1) / 2)), t[:4]
    path = torch_hccl_go.dump_trace(None, os.path.join(ctx.store_dir, f"trace{r}b.json"))
    assert _routes(path)[-1][::2] == ("allreduce", "arena"), _routes(path)[-3:]
    return {"checked": checked, "symmetric": symmetric}


def test_symm_allreduce_world2():
    print(run_ranks(_job_allreduce, 2, timeout=300))


def test_symm_allreduce_world3():
    print(run_ranks(_job_allreduce, 3, timeout=300))


def _job_mismatch(ctx):
    """Views at different offsets: every rank fails at once, naming the disagreement."""
    import torch
    import torch.distributed as dist
    import torch_hccl_go.symm as symm

    n = MIN_BYTES // 4
    t = symm.empty(2 * n, dtype=torch.float32)
    view = t[ctx.rank : ctx.rank + n]
    with pytest.raises(RuntimeError, match="disagree"):
        dist.all_reduce(view)
    return "ok"


def test_symm_allreduce_mismatch():
    assert run_ranks(_job_mismatch, 2, timeout=120) == ["ok"] * 2


def _job_movement(ctx):
    """Broadcast into symmetric tensors of 256 KiB or more, all_gather_into_tensor into
    symmetric outputs and reduce_scatter_tensor from symmetric inputs of 1 MiB or more run in
    place, from any root, from an ordinary input and into an ordinary
    output or the input's own block; smaller ones run in the arena."""
    import torch
    import torch.distributed as dist
    import torch_hccl_go
    import torch_hccl_go.symm as symm

    r, p = ctx.rank, ctx.world_size
    for n in (7, MIN_BYTES // 4 + 3, BLOCK_MIN_BYTES // 4 // p + 5):
        t = symm.empty(n, dtype=torch.float32)
        for root in range(p):
            t.fill_(float(r))
            dist.broadcast(t, src=root)
            assert bool((t == float(root)).all()), f"broadcast n={n} root {root}: {t[:4]}"
        out = symm.empty(p * n, dtype=torch.float32)
        mine = torch.full((n,), float(r + 10))
        dist.all_gather_into_tensor(out, mine)
        want = torch.cat([torch.full((n,), float(q + 10)) for q in range(p)])
        assert torch.equal(out, want), f"all_gather n={n}"
        own = out[r * n : (r + 1) * n]
        own.fill_(float(r + 20))
        dist.all_gather_into_tensor(out, own)  # in place: the input is this rank's block
        assert torch.equal(out, want + 10), f"all_gather in place n={n}"
        # reduce_scatter from a symmetric input, into an ordinary output and into this rank's
        # own block of the input.
        for into_own in (False, True):
            out.copy_(torch.cat([torch.full((n,), float(q + r)) for q in range(p)]))
            dst = out[r * n : (r + 1) * n] if into_own else torch.empty(n)
            dist.reduce_scatter_tensor(dst, out)
            want_block = torch.full((n,), float(sum(r + q for q in range(p))))
            assert torch.equal(dst, want_block), f"reduce_scatter n={n} into_own={into_own}: {dst[:4]}"
        path = torch_hccl_go.dump_trace(None, os.path.join(ctx.store_dir, f"trace{r}-{n}.json"))
        ours = {("broadcast", 4 * n), ("allgather", 4 * p * n), ("reducescatter", 4 * p * n)}
        routes = [(kind, nbytes, route) for kind, nbytes, route in _routes(path) if (kind, nbytes) in ours]
        assert len(routes) == p + 4, routes
        for kind, nbytes, route in routes:
            least = BLOCK_MIN_BYTES if kind in ("allgather", "reducescatter") else MIN_BYTES
            want_route = "symmetric" if nbytes >= least else "arena"
            assert route == want_route, f"{kind} of {nbytes} bytes took {route}"
    return "ok"


def test_symm_broadcast_allgather_reducescatter_world3():
    assert run_ranks(_job_movement, 3, timeout=300) == ["ok"] * 3


def _job_ddp(ctx):
    """symm.DistributedDataParallel: its buckets live in symmetric memory (after the rebuild
    too), their all_reduces run in place, and the parameters match plain DDP's bit for bit
    after a few steps on the same data."""
    import torch
    import torch.distributed as dist
    import torch_hccl_go
    import torch_hccl_go.symm as symm
    from torch.nn.parallel import DistributedDataParallel as DDP

    r = ctx.rank

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))

    params = {}
    for kind, wrap in (("plain", DDP), ("symmetric", symm.DistributedDataParallel)):
        net = wrap(model(), bucket_cap_mb=1)
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        for step in range(4):
            torch.manual_seed(100 * step + r)
            opt.zero_grad(set_to_none=False)
            net(torch.randn(8, 256)).square().mean().backward()
            opt.step()
        params[kind] = [p.detach().clone() for p in net.parameters()]
        if kind == "symmetric":
            path = torch_hccl_go.dump_trace(None, os.path.join(ctx.store_dir, f"ddp{r}.json"))
            big = [route for kind_, nbytes, route in _routes(path)[-6:] if kind_ == "allreduce" and nbytes >= MIN_BYTES]
            assert big and set(big) == {"symmetric"}, _routes(path)[-8:]
        del net, opt
    for a, b in zip(params["plain"], params["symmetric"], strict=True):
        assert torch.equal(a, b), "symmetric buckets changed the result"
    dist.barrier()
    return "ok"


def test_symm_ddp_buckets():
    assert run_ranks(_job_ddp, 2, timeout=300) == ["ok"] * 2
