"""Smoke test of the hccl_go backend on 2 ranks: one job touching every
kind of call once (collectives, p2p, futures, non-contiguous tensors, a few
DDP steps, errors, comm_info, destroy + re-init). The thorough checks live
in the other tests of this directory; this one is quick to run after a build:

    .venv/bin/python -m pytest tests/py/test_smoke_backend.py -q
"""

from __future__ import annotations

import time

import pytest
import torch
from harness import BACKEND, run_ranks

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="checks hccl_go specifics")


def _collectives(ctx) -> None:
    import torch.distributed as dist

    rank, ws = ctx.rank, ctx.world_size

    ctx.progress("all_reduce")
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((5,), float(sum(range(1, ws + 1)))))
    for op, want in [(dist.ReduceOp.MAX, ws), (dist.ReduceOp.MIN, 1), (dist.ReduceOp.AVG, (ws + 1) / 2)]:
        t = torch.full((3,), float(rank + 1))
        dist.all_reduce(t, op=op)
        assert torch.allclose(t, torch.full((3,), float(want))), (op, t)
    t = torch.ones(4)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(0.5))
    assert torch.allclose(t, torch.full((4,), 0.5 * ws))
    b = torch.tensor([rank + 1, 3], dtype=torch.int32)
    dist.all_reduce(b, op=dist.ReduceOp.BOR)
    assert b.tolist() == [3, 3] if ws == 2 else True

    ctx.progress("non-contiguous all_reduce")
    base = torch.arange(12.0).reshape(3, 4)
    view = base[:, ::2]
    dist.all_reduce(view)
    assert torch.equal(base[:, ::2], torch.arange(12.0).reshape(3, 4)[:, ::2] * ws)
    assert torch.equal(base[:, 1::2], torch.arange(12.0).reshape(3, 4)[:, 1::2])

    ctx.progress("dtypes")
    for dtype in [torch.float16, torch.bfloat16, torch.float64, torch.int8, torch.int64, torch.uint8]:
        t = torch.ones(7, dtype=dtype)
        dist.all_reduce(t)
        assert torch.equal(t, torch.full((7,), ws, dtype=dtype)), dtype
    c = torch.full((3,), 1 + 2j, dtype=torch.complex64)
    dist.all_reduce(c)
    assert torch.equal(c, torch.full((3,), ws * (1 + 2j), dtype=torch.complex64))

    ctx.progress("broadcast")
    t = torch.arange(6.0) if rank == 1 else torch.zeros(6)
    dist.broadcast(t, src=1)
    assert torch.equal(t, torch.arange(6.0))

    ctx.progress("all_gather")
    outs = [torch.zeros(3) for _ in range(ws)]
    dist.all_gather(outs, torch.full((3,), float(rank)))
    assert all(torch.equal(o, torch.full((3,), float(i))) for i, o in enumerate(outs))
    objs = [None] * ws
    dist.all_gather_object(objs, {"rank": rank, "pad": "x" * rank * 10})
    assert [o["rank"] for o in objs] == list(range(ws))

    ctx.progress("all_gather_into_tensor")
    out = torch.zeros(ws * 4)
    dist.all_gather_into_tensor(out, torch.full((4,), float(rank)))
    assert torch.equal(out, torch.arange(ws).float().repeat_interleave(4))
    out = torch.zeros(ws * 4)
    out[rank * 4 : rank * 4 + 4] = float(rank) + 10  # in place, as FSDP does
    dist.all_gather_into_tensor(out, out[rank * 4 : rank * 4 + 4])
    assert torch.equal(out, (torch.arange(ws).float() + 10).repeat_interleave(4))

    ctx.progress("reduce_scatter_tensor")
    inp = torch.arange(ws * 2, dtype=torch.float32) * (rank + 1)
    out = torch.zeros(2)
    dist.reduce_scatter_tensor(out, inp)
    factor = sum(range(1, ws + 1))
    assert torch.equal(out, torch.arange(rank * 2, rank * 2 + 2).float() * factor)
    outs = torch.zeros(2)
    dist.reduce_scatter(outs, [torch.full((2,), float(i)) for i in range(ws)])
    assert torch.equal(outs, torch.full((2,), float(rank * ws)))

    ctx.progress("reduce, gather, scatter")
    t = torch.full((2,), float(rank + 1))
    dist.reduce(t, dst=0)
    if rank == 0:
        assert torch.equal(t, torch.full((2,), float(factor)))
    g = [torch.zeros(2) for _ in range(ws)] if rank == 0 else None
    dist.gather(torch.full((2,), float(rank)), gather_list=g, dst=0)
    if rank == 0:
        assert all(torch.equal(x, torch.full((2,), float(i))) for i, x in enumerate(g))
    out = torch.zeros(3)
    dist.scatter(out, [torch.full((3,), float(i)) for i in range(ws)] if rank == 1 else None, src=1)
    assert torch.equal(out, torch.full((3,), float(rank)))

    ctx.progress("all_to_all_single (uneven)")
    # rank r sends r+1+i rows to rank i
    in_splits = [rank + 1 + i for i in range(ws)]
    out_splits = [i + 1 + rank for i in range(ws)]
    inp = torch.full((sum(in_splits), 2), float(rank))
    out = torch.zeros(sum(out_splits), 2)
    dist.all_to_all_single(out, inp, out_splits, in_splits)
    want = torch.cat([torch.full((out_splits[i], 2), float(i)) for i in range(ws)])
    assert torch.equal(out, want)
    outs = [torch.zeros(i + 1) for i in range(ws)]
    dist.all_to_all(outs, [torch.full((rank + 1,), float(rank)) for _ in range(ws)])
    assert all(torch.equal(o, torch.full((i + 1,), float(i))) for i, o in enumerate(outs))

    ctx.progress("barrier")
    dist.barrier()


def _p2p_and_async(ctx) -> None:
    import torch.distributed as dist

    rank, ws = ctx.rank, ctx.world_size
    peer = (rank + 1) % ws
    prev = (rank - 1) % ws

    ctx.progress("send/recv")
    if rank == 0:
        dist.send(torch.arange(4.0), dst=1)
        back = torch.zeros(4)
        dist.recv(back, src=1)
        assert torch.equal(back, torch.arange(4.0) * 2)
    elif rank == 1:
        t = torch.zeros(4)
        dist.recv(t, src=0)
        dist.send(t * 2, dst=0)

    ctx.progress("batch_isend_irecv")
    send = torch.full((1000,), float(rank))
    recv = torch.zeros(1000)
    ops = [dist.P2POp(dist.irecv, recv, prev), dist.P2POp(dist.isend, send, peer)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert torch.equal(recv, torch.full((1000,), float(prev)))

    ctx.progress("async work and futures")
    t = torch.ones(1 << 16)
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future().then(lambda f: f.value()[0].sum().item())
    assert work.wait()
    assert work.is_completed()
    assert fut.wait() == float(ws * (1 << 16))

    ctx.progress("futures complete without wait(), in issue order (DDP's pattern)")
    bufs = [torch.full((n,), float(rank + 1)) for n in (3, 1 << 10, 1 << 18)]
    futs = [dist.all_reduce(b, async_op=True).get_future() for b in bufs]
    deadline = time.monotonic() + 20
    while not all(f.done() for f in futs):
        assert time.monotonic() < deadline, "a Future never completed without wait() (20 s)"
        time.sleep(0.001)
    expect = float(ws * (ws + 1) // 2)
    for f, b in zip(futs, bufs, strict=True):
        assert torch.equal(f.value()[0], torch.full_like(b, expect))

    ctx.progress("collective inside a Future callback (as PowerSGD does)")
    # The callbacks issue on their own group: on the group the main thread is
    # still issuing on, the two threads would race for the order of ops, which
    # can then differ between ranks (with gloo too; README, "Ordering").
    callbacks_group = dist.new_group(list(range(ws)))

    def nested(f):
        inner = torch.ones(8)
        dist.all_reduce(inner, group=callbacks_group, async_op=True).get_future().wait()  # blocks a completion thread
        return f.value()[0].sum().item() + inner.sum().item()

    futs = [dist.all_reduce(torch.ones(4), async_op=True).get_future().then(nested) for _ in range(3)]
    assert [f.wait() for f in futs] == [4.0 * ws + 8.0 * ws] * 3

    ctx.progress("bad input")
    with pytest.raises(ValueError, match="BXOR needs an integer"):
        dist.all_reduce(torch.ones(2), op=dist.ReduceOp.BXOR)
    with pytest.raises(ValueError, match="supported dtypes"):
        dist.all_reduce(torch.empty(2, dtype=torch.bits16))
    with pytest.raises(ValueError, match="float8_e5m2"):
        dist.all_reduce(torch.ones(2).to(torch.float8_e5m2))

    ctx.progress("comm_info")
    import torch_hccl_go

    info = torch_hccl_go.comm_info()
    assert info["rank"] == rank and info["size"] == ws


def _ddp(ctx) -> list[float]:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    ctx.progress("DDP")
    torch.manual_seed(0)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(ctx.rank)
    for _ in range(3):
        x, y = torch.randn(4, 8, generator=gen), torch.randn(4, 1, generator=gen)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    params = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(params) for _ in range(ctx.world_size)]
    dist.all_gather(gathered, params)
    assert all(torch.equal(g, gathered[0]) for g in gathered), "replicas diverged"
    return params[:4].tolist()


def _smoke_job(ctx) -> list[float]:
    import torch.distributed as dist

    _collectives(ctx)
    _p2p_and_async(ctx)
    weights = _ddp(ctx)

    ctx.progress("destroy and re-init")
    dist.destroy_process_group()
    ctx.init_process_group()
    t = torch.ones(3)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((3,), float(ctx.world_size)))
    return weights


def test_smoke_two_ranks():
    results = run_ranks(_smoke_job, world_size=2, timeout=120)
    assert results[0] == results[1]


def _flight_recorder_job(ctx) -> list[bool]:
    """Whether torch hooked its flight recorder onto the default group (HCCL_GO_TORCH_FLIGHT_RECORDER
    unset) and onto a group made with it set to 1; both groups must work."""
    import os

    import torch.distributed as dist
    import torch.distributed.distributed_c10d as c10d

    hooked = [dist.group.WORLD in c10d._world.pg_flight_recorder_hooks]
    os.environ["HCCL_GO_TORCH_FLIGHT_RECORDER"] = "1"
    g = dist.new_group(backend="hccl_go")
    del os.environ["HCCL_GO_TORCH_FLIGHT_RECORDER"]
    hooked.append(g in c10d._world.pg_flight_recorder_hooks)
    for group in (None, g):
        t = torch.ones(2)
        dist.all_reduce(t, group=group)
        assert torch.equal(t, torch.full((2,), float(ctx.world_size)))
    # torch's hook is handed every Work: a group with it returns one for synchronous calls too.
    cpu = torch.device("cpu")
    assert dist.group.WORLD._get_backend(cpu).sync_returns_none
    assert not g._get_backend(cpu).sync_returns_none
    opts = dist.AllreduceOptions()
    opts.asyncOp = False
    work = g.allreduce([torch.ones(2)], opts)
    assert work is not None and work.is_completed()
    return hooked


def test_torch_flight_recorder_hook_is_opt_in():
    import torch.distributed.distributed_c10d as c10d

    if not hasattr(c10d, "_FR_SELF_RECORDING_BACKENDS"):
        pytest.skip("this torch hooks no flight recorder onto out-of-tree backends")
    results = run_ranks(_flight_recorder_job, world_size=2, timeout=60)
    assert results == [[False, True], [False, True]]


def _synchronous_calls_job(ctx) -> None:
    """asyncOp=False (what torch.distributed's functions pass unless async_op=True): the op has
    completed when the call returns, which then returns no Work; errors surface from the call."""
    import torch.distributed as dist

    pg, n = dist.group.WORLD, ctx.world_size
    sync, asynchronous = dist.AllreduceOptions(), dist.AllreduceOptions()
    sync.asyncOp = False
    t = torch.ones(3)
    assert pg.allreduce([t], sync) is None
    assert torch.equal(t, torch.full((3,), float(n)))
    work = pg.allreduce([t], asynchronous)
    assert work is not None
    work.wait()
    assert torch.equal(t, torch.full((3,), float(n * n)))
    # A non-contiguous tensor: the result is copied back before the call returns.
    m = torch.ones(4, 6)[:, ::2]
    assert dist.all_reduce(m) is None
    assert torch.equal(m, torch.full((4, 3), float(n)))
    # A synchronous op queued behind an asynchronous one waits for it.
    a, b = torch.ones(1000), torch.ones(2)
    work = dist.all_reduce(a, async_op=True)
    dist.all_reduce(b)
    assert torch.equal(b, torch.full((2,), float(n)))
    work.wait()
    assert torch.equal(a, torch.full((1000,), float(n)))
    # Inside a coalescing group nothing blocks until the group ends.
    xs = [torch.ones(5), torch.ones(7)]
    with dist._coalescing_manager():
        for x in xs:
            dist.all_reduce(x)
    assert all(torch.equal(x, torch.full_like(x, float(n))) for x in xs)
    # A refusal from the library names the op and leaves the group usable.
    backend = pg._get_backend(torch.device("cpu"))
    backend.stream = 99
    with pytest.raises(Exception, match=r"all_reduce \(op #\d+\) failed: .*stream"):
        dist.all_reduce(torch.ones(2))
    backend.stream = 0
    b = torch.ones(2)
    dist.broadcast(b, src=0)
    dist.all_reduce(b)
    assert torch.equal(b, torch.full((2,), float(n)))


def test_synchronous_calls_block_and_return_no_work():
    run_ranks(_synchronous_calls_job, world_size=2, timeout=60)


def _gomaxprocs_job(ctx) -> tuple[int, int]:
    """GOMAXPROCS (comm_info) after synchronous calls from the main thread, then after an op
    followed through its Future, which a completion thread drives: one more calling thread."""
    import torch.distributed as dist
    import torch_hccl_go

    t = torch.ones(2)
    dist.all_reduce(t)
    before = torch_hccl_go.comm_info()["gomaxprocs"]
    dist.all_reduce(t, async_op=True).get_future().wait()
    return before, torch_hccl_go.comm_info()["gomaxprocs"]


def test_gomaxprocs_keeps_a_processor_to_spare():
    """HCCL_GO_MAXPROCS=auto keeps one Go processor more than the threads that have called into
    the library (export/maxprocs.go): with the main thread and a completion thread, at least 3."""
    import os

    if os.environ.get("HCCL_GO_MAXPROCS", "auto") not in ("", "auto"):
        pytest.skip("HCCL_GO_MAXPROCS is set")
    for before, after in run_ranks(_gomaxprocs_job, world_size=2, timeout=60):
        assert before >= 2
        assert after >= 3 and after >= before


def _gomaxprocs_threads_job(ctx) -> tuple[int, int, int]:
    """GOMAXPROCS (comm_info) before, while and after 40 more threads that each issued a
    collective are alive: they wait together until the main thread has looked, then exit."""
    import threading

    import torch.distributed as dist
    import torch_hccl_go

    def gomaxprocs() -> int:
        return torch_hccl_go.comm_info()["gomaxprocs"]

    t = torch.ones(2)
    dist.all_reduce(t)
    dist.all_reduce(t, async_op=True).get_future().wait()  # a completion thread calls in too
    before = gomaxprocs()

    n = 40
    issue = threading.Lock()  # one collective at a time: the ranks' ops pair up in order
    alive, looked = threading.Barrier(n + 1, timeout=60), threading.Barrier(n + 1, timeout=60)

    def call_and_wait() -> None:
        x = torch.ones(2)
        with issue:
            # An all_to_all enters Go; a small all_reduce, broadcast, all_gather, reduce,
            # reduce_scatter or barrier would take the C fast lane, whose threads need no Go
            # processor.
            dist.all_to_all_single(x, x.clone())
        alive.wait()
        looked.wait()

    threads = [threading.Thread(target=call_and_wait) for _ in range(n)]
    for th in threads:
        th.start()
    alive.wait()
    during = gomaxprocs()
    looked.wait()
    for th in threads:
        th.join(timeout=60)
        assert not th.is_alive()

    # Back down once the policy's shrink windows (1 s each) have passed.
    deadline = time.monotonic() + 30
    after = gomaxprocs()
    while after > before and time.monotonic() < deadline:
        time.sleep(0.05)
        after = gomaxprocs()
    return before, during, after


def test_gomaxprocs_follows_the_threads_alive():
    """HCCL_GO_MAXPROCS=auto sizes GOMAXPROCS for the calling threads alive: 40 more threads
    that have called in raise it to the cap (32), and once they have exited it comes back to
    what it was before them."""
    import os

    if os.environ.get("HCCL_GO_MAXPROCS", "auto") not in ("", "auto"):
        pytest.skip("HCCL_GO_MAXPROCS is set")
    for before, during, after in run_ranks(_gomaxprocs_threads_job, world_size=2, timeout=120):
        assert before < 32
        assert during == 32
        assert after <= before


_EXIT_SCRIPT = """
import sys, tempfile, torch, torch.distributed as dist
import torch_hccl_go
dist.init_process_group("hccl_go", rank=0, world_size=1, store=dist.FileStore(tempfile.mktemp(), 1))
t = torch.ones(2)
pg, opts = dist.group.WORLD, dist.AllreduceOptions()
for _ in range(20000):
    pg.allreduce([t], opts)  # never waited for: completions still run as Python exits
print("issued")
"""


def test_exit_with_completions_in_flight():
    """Python exits (no destroy_process_group) while completion threads still finish Works
    whose tensors Python owns: torch_hccl_go's atexit drain must keep that from aborting
    ("terminate called without an active exception"; without the drain, ~40 % of runs)."""
    import subprocess
    import sys

    for _ in range(3):
        p = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "terminate" not in p.stderr, (p.returncode, p.stderr[-2000:])
        assert "issued" in p.stdout
