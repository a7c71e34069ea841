"""Wire compression, sparse all_reduce, the sparse DDP hooks and the traffic counters.

Multi-rank checks run in spawned jobs (harness.run_ranks) over TCP
(HCCL_GO_TRANSPORT=tcp: on one host the shared-memory arena would carry the
all_reduce, uncompressed and without messages to count). The error-feedback
invariant is checked locally.
"""

from __future__ import annotations

import math

import pytest
import torch
from harness import BACKEND, run_ranks

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go features (compression, sparse, stats)")

WORLD = 2
TCP = {"HCCL_GO_TRANSPORT": "tcp"}
UNIT_ROUNDOFF = {"none": 0.0, "fp16": 2.0**-11, "bf16": 2.0**-8}


def _inputs(rank: int, n: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(1000 + rank)
    return torch.randn(n, generator=g) * 1e-3


def wire_job(ctx, n: int) -> dict:
    """all_reduce (sum, avg) on one group per compression; returns per compression the
    worst error relative to the bound, whether ranks agree, and the bytes sent."""
    import torch.distributed as dist
    import torch_hccl_go
    from torch_hccl_go.stats import delta, stats

    groups = {
        c: dist.new_group(backend="hccl_go", pg_options=torch_hccl_go.Options(compression=c))
        for c in ("none", "fp16", "bf16")
    }
    inputs = [_inputs(r, n).double() for r in range(ctx.world_size)]
    exact = torch.stack(inputs).sum(0)
    magnitude = torch.stack(inputs).abs().sum(0)
    out = {}
    for c, group in groups.items():
        before = stats(group)
        worst = 0.0
        agree = True
        for op, div in ((dist.ReduceOp.SUM, 1), (dist.ReduceOp.AVG, ctx.world_size)):
            t = _inputs(ctx.rank, n)
            dist.all_reduce(t, op=op, group=group)
            bound = (ctx.world_size * UNIT_ROUNDOFF[c] + 4 * 2.0**-24) * magnitude / div + 1e-30
            worst = max(worst, ((t.double() - exact / div).abs() / bound).max().item())
            gathered = [torch.empty_like(t) for _ in range(ctx.world_size)]
            dist.all_gather(gathered, t, group=group)
            agree = agree and all(torch.equal(gathered[0], g) for g in gathered)
        moved = delta(before, stats(group))
        out[c] = {"worst": worst, "agree": agree, "sent": moved["ops"]["allreduce"]["bytes_sent"],
                  "compression": moved["compression"]}
    return out


def test_wire_compression_within_bound_and_halves_bytes():
    n = 100_003
    results = run_ranks(wire_job, WORLD, args=(n,), env=TCP, timeout=120)
    for rank, res in enumerate(results):
        for c in ("none", "fp16", "bf16"):
            assert res[c]["compression"] == c
            assert res[c]["agree"], f"{c}: ranks differ"
            assert res[c]["worst"] <= 1.0, f"rank {rank} {c}: error {res[c]['worst']:.2f} x the bound"
        # Two all_reduces of n float32: 2 * 2(p-1)/p * 4n bytes uncompressed.
        assert res["none"]["sent"] == 2 * 4 * n
        for c in ("fp16", "bf16"):
            assert res["none"]["sent"] / res[c]["sent"] == pytest.approx(2.0, rel=0.01)


def sparse_job(ctx) -> dict:
    """Sparse all_reduce against the dense all_reduce of the same pairs."""
    import torch.distributed as dist
    from torch_hccl_go.sparse import sparse_all_reduce
    from torch_hccl_go.stats import delta, stats

    out = {}
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        for n, nnz in ((1, 0), (10, 3), (10_000, 50), (10_000, 9_000)):
            g = torch.Generator().manual_seed(ctx.rank * 7 + nnz)
            idx = torch.randint(0, n, (nnz,), generator=g)
            vals = torch.randint(-100, 100, (nnz,), generator=g).to(dtype)
            before = stats()
            got = sparse_all_reduce(idx, vals, n)
            sent = delta(before, stats())["ops"]["sparse_allreduce"]["bytes_sent"]
            dense = torch.zeros(n, dtype=dtype).index_add_(0, idx, vals)
            dist.all_reduce(dense)
            out[f"{dtype}/{n}/{nnz}"] = (torch.equal(got, dense), sent, n * dense.element_size())
    # The asynchronous form, into a given tensor.
    res = torch.full((4,), 9.0)
    fut = sparse_all_reduce(torch.tensor([ctx.rank]), torch.tensor([1.5]), 4, out=res, async_op=True)
    out["async"] = fut.wait().tolist()
    return out


def test_sparse_all_reduce_equals_dense_exactly():
    results = run_ranks(sparse_job, WORLD, env=TCP, timeout=120)
    for rank, res in enumerate(results):
        assert res.pop("async") == [1.5, 1.5, 0.0, 0.0]
        for case, (equal, sent, dense_bytes) in res.items():
            assert equal, f"rank {rank} {case}: sparse differs from dense"
            nnz = int(case.split("/")[2])
            if nnz == 9_000:  # together 18000 pairs > 10000 elements: the dense all_reduce
                assert sent >= dense_bytes, f"{case}: {sent} bytes, the dense switch did not happen"
            elif nnz == 50:
                assert sent < dense_bytes / 10, f"{case}: {sent} bytes for a sparse exchange"


def test_error_feedback_preserves_the_gradient_sum():
    from torch_hccl_go.hooks import ThresholdState, TopKState

    for state, select in (
        (TopKState(ratio=0.1), lambda g: torch.topk(g.abs(), 10).indices),
        (ThresholdState(threshold=20.0), lambda g: (g.abs() > 20).nonzero().reshape(-1)),
    ):
        g = torch.Generator().manual_seed(3)
        total_grad = torch.zeros(100)
        total_sent = torch.zeros(100)
        for _ in range(30):
            grad = torch.randint(-9, 10, (100,), generator=g).float()  # sums stay exact
            total_grad += grad
            indices, values = state.sparsify(0, grad, select)
            total_sent.index_add_(0, indices, values)
            assert torch.equal(total_sent + state.residuals[0], total_grad)
        assert 0 < state.density() < 1


def hooks_job(ctx) -> dict:
    """DDP with the sparse hooks: sending everything equals DDP's own all_reduce
    exactly; top-k 1% moves a small fraction of the bytes and still trains."""
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch_hccl_go.hooks import ThresholdState, TopKState, threshold_hook, topk_hook
    from torch_hccl_go.stats import delta, stats


    def grads_after_step(hook=None, state=None):
        torch.manual_seed(0)
        model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4)))
        if hook is not None:
            model.register_comm_hook(state, hook)
        g = torch.Generator().manual_seed(ctx.rank)
        x, y = torch.randn(16, 32, generator=g), torch.randint(0, 4, (16,), generator=g)
        nn.functional.cross_entropy(model(x), y).backward()
        return [p.grad.clone() for p in model.parameters()]

    out = {}
    reference = grads_after_step()
    for name, hook, state in (
        ("topk_all", topk_hook, TopKState(ratio=1.0)),
        ("threshold_0", threshold_hook, ThresholdState(threshold=0.0)),
        ("topk_all_dense_fallback", topk_hook, TopKState(ratio=1.0, native=False)),
    ):
        got = grads_after_step(hook, state)
        out[name] = all(torch.allclose(a, b, rtol=0, atol=1e-7) for a, b in zip(got, reference, strict=True))

    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)))
    state = TopKState(ratio=0.01)
    model.register_comm_hook(state, topk_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(ctx.rank)
    x, y = torch.randn(64, 256, generator=g), torch.randint(0, 10, (64,), generator=g)
    before = stats()
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    moved = delta(before, stats())
    params = sum(p.numel() for p in model.parameters())
    out["topk_bytes_per_step"] = moved["ops"]["sparse_allreduce"]["bytes_sent"] / 20
    out["dense_bytes_per_step"] = 2 * (ctx.world_size - 1) / ctx.world_size * 4 * params
    out["losses"] = (losses[0], losses[-1])
    out["density"] = state.density()
    dist.barrier()
    return out


def test_sparse_hooks_in_ddp():
    results = run_ranks(hooks_job, WORLD, env=TCP, timeout=150)
    for rank, res in enumerate(results):
        assert res["topk_all"], f"rank {rank}: top-k with ratio 1 differs from DDP's all_reduce"
        assert res["threshold_0"], f"rank {rank}: threshold 0 differs from DDP's all_reduce"
        assert res["topk_all_dense_fallback"], f"rank {rank}: the dense fallback differs from DDP's all_reduce"
        assert res["density"] == pytest.approx(0.01, rel=0.05)
        ratio = res["dense_bytes_per_step"] / res["topk_bytes_per_step"]
        assert ratio >= 20, f"top-k 1% sent only {ratio:.1f}x fewer bytes than dense"
        first, last = res["losses"]
        assert math.isfinite(last) and last < first, f"loss {first} -> {last}"
