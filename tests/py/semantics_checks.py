"""Behaviour beyond single collectives, checked on one rank of a spawned job.

`semantics_job` runs every check in CHECKS in order and returns {name: None or the
failure}, so that one job (one set of process start-ups) serves many tests. The
checks use the default group (the backend under test); a gloo group is used only
to compare or to agree on results.
"""

from __future__ import annotations

import functools
import operator
import threading
import time
import traceback
from collections.abc import Callable
from datetime import timedelta

import torch
import torch.distributed as dist
from harness import COLLECTIVE_TIMEOUT


def check_barrier(ctx) -> None:
    """A barrier releases nobody before the last rank arrives: rank 0 comes late and
    marks, in the store, that it is about to enter; every rank the barrier releases
    must see the mark. (The delay only makes an early release likely to show.)"""
    store = dist.distributed_c10d._get_default_store()
    if ctx.rank == 0:
        time.sleep(0.5)
        store.set("check_barrier/rank0_entering", "1")
    dist.barrier()
    assert store.check(["check_barrier/rank0_entering"]), "the barrier released this rank before rank 0 entered it"
    sub = dist.new_group([0, 1])
    if ctx.rank in (0, 1):
        dist.barrier(group=sub)


def check_subgroups_concurrent(ctx) -> None:
    """Ops on overlapping subgroups and the default group, issued in a different order on each
    rank, all complete: groups must not wait on each other."""
    rank = ctx.rank
    g01 = dist.new_group([0, 1])
    g12 = dist.new_group([1, 2])
    if rank == 1:
        assert dist.get_rank(g12) == 0 and dist.get_world_size(g12) == 2
    if rank == 0:
        assert dist.get_rank(g12) == -1  # not a member

    t_all = torch.full((1000,), float(rank + 1))
    t01 = torch.full((1000,), float(rank + 1))
    t12 = torch.full((1000,), float(rank + 1))
    order = {0: ["g01", "all"], 1: ["g12", "g01", "all"], 2: ["all", "g12"]}[rank]
    issue = {
        "all": lambda: dist.all_reduce(t_all, async_op=True),
        "g01": lambda: dist.all_reduce(t01, group=g01, async_op=True),
        "g12": lambda: dist.all_reduce(t12, group=g12, async_op=True),
    }
    works = [issue[name]() for name in order]
    for w in works:
        w.wait()
    assert torch.all(t_all == 6.0), f"default group sum: got {t_all[0].item()}, expected 6"
    if rank in (0, 1):
        assert torch.all(t01 == 3.0), f"group [0,1] sum: got {t01[0].item()}, expected 3"
    if rank in (1, 2):
        assert torch.all(t12 == 5.0), f"group [1,2] sum: got {t12[0].item()}, expected 5"

    # collectives with a root named by its global rank inside a subgroup
    if rank in (1, 2):
        b = torch.full((7,), float(rank))
        dist.broadcast(b, src=2, group=g12)
        assert torch.all(b == 2.0), f"broadcast in group [1,2] from global rank 2 gave {b.tolist()}"
        outs = [torch.zeros(3) for _ in range(2)]
        dist.all_gather(outs, torch.full((3,), float(rank)), group=g12)
        assert [o[0].item() for o in outs] == [1.0, 2.0]


def check_threads_on_two_groups(ctx) -> None:
    """Two Python threads run collectives at the same time, each on its own group."""
    other = dist.new_group(list(range(ctx.world_size)))
    errors: list[str] = []

    def loop(group, value: float) -> None:
        try:
            for i in range(20):
                t = torch.full((257,), value * (i + 1))
                dist.all_reduce(t, group=group)
                expected = value * (i + 1) * ctx.world_size
                assert torch.all(t == expected), f"iteration {i}: got {t[0].item()}, expected {expected}"
        except Exception:  # noqa: BLE001
            errors.append(traceback.format_exc())

    threads = [threading.Thread(target=loop, args=(None, 1.0)), threading.Thread(target=loop, args=(other, 2.0))]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=COLLECTIVE_TIMEOUT.total_seconds())
    assert not any(th.is_alive() for th in threads), "a thread is still inside a collective"
    assert not errors, "\n".join(errors)


def check_async_outstanding(ctx) -> None:
    """Many async ops in flight at once, waited for in reverse order."""
    world, rank = ctx.world_size, ctx.rank
    tensors = [torch.full((n,), float(rank + i)) for i, n in enumerate([1, 7, 1000, 65536, 3, 300000, 5, 16])]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    gathered = [torch.zeros(5) for _ in range(world)]
    works.append(dist.all_gather(gathered, torch.full((5,), float(rank)), async_op=True))
    bcast = torch.full((100,), float(rank))
    works.append(dist.broadcast(bcast, src=world - 1, async_op=True))
    rs_out = torch.zeros(4)
    works.append(dist.reduce_scatter_tensor(rs_out, torch.arange(4.0 * world), async_op=True))
    for i, w in reversed(list(enumerate(works))):
        assert w.wait() is not False
        # gloo's reduce_scatter_tensor work reports is_completed() False even after wait()
        if ctx.backend != "gloo" or i < len(works) - 1:
            assert w.is_completed(), f"work {i} is not completed after wait()"
    base = sum(range(world))
    for i, t in enumerate(tensors):
        expected = float(base + i * world)
        assert torch.all(t == expected), f"tensor {i}: got {t[0].item()}, expected {expected}"
    assert [g[0].item() for g in gathered] == [float(r) for r in range(world)]
    assert torch.all(bcast == float(world - 1))
    assert torch.equal(rs_out, torch.arange(4.0 * rank, 4.0 * rank + 4) * world)


def check_future_then(ctx) -> None:
    """work.get_future() completes with the output tensors; then() chains run, errors propagate."""
    world = ctx.world_size
    t = torch.ones(10)
    fut = dist.all_reduce(t, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2)
    plus_one = doubled.then(lambda f: f.value() + 1)
    assert torch.all(plus_one.wait() == 2 * world + 1)
    assert torch.all(fut.value()[0] == world)

    def fails(_f):
        raise ValueError("callback failed on purpose")

    bad = dist.all_reduce(torch.ones(3), async_op=True).get_future().then(fails)
    try:
        bad.wait()
    except Exception as e:  # noqa: BLE001
        assert "callback failed on purpose" in str(e)
    else:
        raise AssertionError("a failing then() callback did not surface its error")

    futs = [dist.all_reduce(torch.full((4,), float(i)), async_op=True).get_future() for i in range(4)]
    done = torch.futures.collect_all(futs).wait()
    assert [f.value()[0][0].item() for f in done] == [float(i * world) for i in range(4)]


def check_object_collectives(ctx) -> None:
    """Object collectives move pickled objects of different sizes on each rank."""
    rank, world = ctx.rank, ctx.world_size

    def obj(r: int):
        return {"rank": r, "text": "x" * (r * 1000 + 1), "tensor": torch.arange(r + 1), "nested": [r] * r}

    gathered: list = [None] * world
    dist.all_gather_object(gathered, obj(rank))
    for r in range(world):
        assert gathered[r]["rank"] == r and len(gathered[r]["text"]) == r * 1000 + 1
        assert torch.equal(gathered[r]["tensor"], torch.arange(r + 1))

    objs = [obj(1), "hello", 42] if rank == 1 else [None, None, None]
    dist.broadcast_object_list(objs, src=1)
    assert objs[0]["text"] == "x" * 1001 and objs[1:] == ["hello", 42]

    dst = world - 1
    out = [None] * world if rank == dst else None
    dist.gather_object(obj(rank), out, dst=dst)
    if rank == dst:
        assert [o["rank"] for o in out] == list(range(world))

    recv: list = [None]
    dist.scatter_object_list(recv, [obj(r) for r in range(world)] if rank == 0 else None, src=0)
    assert recv[0]["rank"] == rank and recv[0]["nested"] == [rank] * rank


def check_coalescing_manager(ctx) -> None:
    """Ops batched by the coalescing manager (as FSDP does) all complete correctly."""
    world = ctx.world_size
    a, b = torch.ones(5), torch.full((9,), 2.0)
    with dist._coalescing_manager(async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    assert torch.all(a == world) and torch.all(b == 2.0 * world)


def check_all_gather_coalesced(ctx) -> None:
    """all_gather_coalesced fills output_lists[r][i] with rank r's input i (torch's layout),
    for inputs of different shapes (torch requires one dtype)."""
    rank, world = ctx.rank, ctx.world_size
    inputs = [torch.full((3,), float(rank)), torch.arange(5.0) * (rank + 1), torch.zeros(0)]
    outputs = [[torch.empty_like(t) for t in inputs] for _ in range(world)]
    dist.all_gather_coalesced(outputs, inputs)
    for r in range(world):
        assert torch.equal(outputs[r][0], torch.full((3,), float(r))), (r, outputs[r][0])
        assert torch.equal(outputs[r][1], torch.arange(5.0) * (r + 1)), (r, outputs[r][1])
        assert outputs[r][2].numel() == 0


def check_recv_any_source(ctx) -> None:
    """recv without src takes each sender's message once and reports its rank, blocking
    and through irecv; the message from a rank that sends late is not confused with another."""
    rank, world = ctx.rank, ctx.world_size
    for round_ in range(2):
        if rank == 0:
            seen = {}
            for _ in range(world - 1):
                t = torch.empty(4)
                if round_ == 0:
                    src = dist.recv(t)
                else:
                    w = dist.irecv(t)
                    w.wait()
                    src = w._source_rank()
                seen[src] = t.clone()
            assert sorted(seen) == list(range(1, world)), sorted(seen)
            for src, t in seen.items():
                assert torch.equal(t, torch.full((4,), float(src * 10 + round_))), (src, t)
        else:
            time.sleep(0.01 * rank)  # senders arrive at different times
            dist.send(torch.full((4,), float(rank * 10 + round_)), dst=0)
        dist.barrier()


def check_narrow_dtypes(ctx) -> None:
    """uint16 reduces exactly (wrapping, unsigned order); float8 tensors move bit for bit and
    their reductions are refused by name."""
    rank, world = ctx.rank, ctx.world_size
    values = [(r * 30011 + 7) % 65536 for r in range(world)]
    for op, ref in (
        (dist.ReduceOp.SUM, sum(values) % 65536),
        (dist.ReduceOp.MAX, max(values)),
        (dist.ReduceOp.BXOR, functools.reduce(operator.xor, values)),
    ):
        t = torch.tensor([values[rank]] * 5, dtype=torch.int32).to(torch.uint16)
        dist.all_reduce(t, op=op)
        got = t.to(torch.int32).tolist()
        assert got == [ref] * 5, (op, got, ref)

    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        bits = (torch.arange(7, dtype=torch.int32) * 37 + rank).to(torch.uint8)
        mine = bits.view(dtype)
        out = [torch.empty(7, dtype=dtype) for _ in range(world)]
        dist.all_gather(out, mine)
        for r in range(world):
            assert torch.equal(out[r].view(torch.uint8), (torch.arange(7, dtype=torch.int32) * 37 + r).to(torch.uint8))
        b = mine.clone()
        dist.broadcast(b, src=world - 1)
        assert torch.equal(b.view(torch.uint8), (torch.arange(7, dtype=torch.int32) * 37 + world - 1).to(torch.uint8))
    _expect_error(
        "all_reduce of a float8 tensor",
        lambda: dist.all_reduce(torch.zeros(4, dtype=torch.float8_e5m2)),
        ("float8_e5m2",),
    )
    dist.barrier()  # the refusal left the group usable


def _sparse_input(rank: int, case: int, shape: tuple[int, ...], sparse_dim: int, dtype) -> torch.Tensor:
    """Rank `rank`'s input of a case: random entries, some indices repeated (uncoalesced),
    none at all on rank 1 of the odd cases."""
    g = torch.Generator().manual_seed(1000 * case + rank)
    nnz = 0 if (case % 2 and rank == 1) else int(torch.randint(1, 7, (1,), generator=g))
    idx = torch.stack([torch.randint(0, shape[d], (nnz,), generator=g) for d in range(sparse_dim)])
    vals_shape = (nnz, *shape[sparse_dim:])
    if dtype.is_floating_point:
        vals = torch.randn(vals_shape, generator=g, dtype=torch.float64).to(dtype)
    else:
        vals = torch.randint(-50, 50, vals_shape, generator=g).to(dtype)
    return torch.sparse_coo_tensor(idx.reshape(sparse_dim, nnz), vals, shape, check_invariants=True)


def check_sparse_all_reduce(ctx) -> None:
    """all_reduce of sparse COO tensors sums every rank's entries (inputs uncoalesced, with
    dense dimensions, with no entries on some ranks or on all), the same bits on every rank;
    other reduce ops and ranks whose shapes differ get an error naming the problem."""
    rank, world = ctx.rank, ctx.world_size
    cases = [
        ((10,), 1, torch.float32),
        ((6, 5), 2, torch.float64),
        ((6, 3), 1, torch.bfloat16),
        ((4, 3, 2), 1, torch.int64),
        ((5, 5), 1, torch.float16),
        ((7, 2), 2, torch.int32),
    ]
    for case, (shape, sparse_dim, dtype) in enumerate(cases):
        t = _sparse_input(rank, case, shape, sparse_dim, dtype)
        dist.all_reduce(t)
        assert t.is_sparse and t.is_coalesced(), (case, t)
        want = sum(_sparse_input(r, case, shape, sparse_dim, dtype).to_dense().to(torch.float64) for r in range(world))
        got = t.to_dense()
        tol = 0.05 if dtype in (torch.bfloat16, torch.float16) else 1e-5
        assert torch.allclose(got.to(want.dtype), want, atol=tol, rtol=tol), (case, got, want)
        # Every rank holds the same bits.
        bits = got.reshape(-1).contiguous().view(torch.uint8)
        seen = [torch.empty_like(bits) for _ in range(world)]
        dist.all_gather(seen, bits)
        assert all(torch.equal(s, seen[0]) for s in seen), f"case {case}: ranks differ"
    empty = torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(0), (4,), check_invariants=True)
    dist.all_reduce(empty)
    assert empty._nnz() == 0 and empty.shape == (4,)
    async_t = _sparse_input(rank, 0, (10,), 1, torch.float32)
    dist.all_reduce(async_t, async_op=True).wait()
    assert async_t.is_coalesced()

    _expect_error(
        "all_reduce of a sparse tensor with MAX",
        lambda: dist.all_reduce(torch.ones(3, 3).to_sparse(), op=dist.ReduceOp.MAX),
        ("sum",),
    )
    _expect_error(
        "all_reduce of sparse tensors whose shapes differ between ranks",
        lambda: dist.all_reduce(torch.ones(3, 3 + (rank == 0)).to_sparse()),
        ("shape",),
    )
    _expect_error(
        "all_reduce of sparse tensors whose dtypes differ between ranks",
        lambda: dist.all_reduce(torch.ones(3, dtype=torch.float64 if rank == 0 else torch.float32).to_sparse()),
        ("dtype",),
    )
    dist.barrier()  # the refusals left the group usable


def check_wait_timeout_and_monitored_barrier(ctx) -> None:
    """work.wait(timeout) shorter than the op timeout ends at that timeout (the op keeps
    running and completes later); monitored_barrier passes when every rank comes."""
    rank = ctx.rank
    if rank == 0:
        got = torch.zeros(1)
        w = dist.irecv(got, src=1, tag=77)
        t0 = time.time()
        try:
            w.wait(timeout=timedelta(milliseconds=300))
            raise AssertionError("the wait passed with nothing sent")
        except RuntimeError as e:
            assert "timed out" in str(e), e
        took = time.time() - t0
        assert took < 5, f"a 0.3 s wait took {took:.1f} s"
    dist.barrier()
    if rank == 1:
        dist.send(torch.ones(1), dst=0, tag=77)
    if rank == 0:
        w.wait()
        assert got.item() == 1.0
    dist.monitored_barrier(timeout=timedelta(seconds=30))
    dist.monitored_barrier(timeout=timedelta(seconds=30), wait_all_ranks=True)


def _expect_error(what: str, fn: Callable, keywords: tuple[str, ...]) -> str:
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip()
        assert msg, f"{what}: raised {type(e).__name__} with an empty message"
        low = msg.lower()
        assert any(k in low for k in keywords), f"{what}: message names none of {keywords}: {msg[:300]}"
        return f"{what}: {type(e).__name__}: {msg.splitlines()[0][:200]}"
    raise AssertionError(f"{what}: no exception raised")


# A send to or receive from a rank that does not
# exist waits for that rank's address in the store until the timeout.
GLOO_ACCEPTS = {
    "send to dst = world size",
    "backend send to dstRank = world size",
    "backend recv from srcRank = -2",
}


def check_bad_inputs(ctx) -> list[str]:
    """Bad arguments raise a Python exception that says what is wrong, and the job goes on."""
    world, rank = ctx.world_size, ctx.rank
    pg = dist.distributed_c10d._get_default_group()
    x = torch.ones(4)
    messages = []

    def still_works() -> None:
        t = torch.ones(3)
        dist.all_reduce(t)
        assert torch.all(t == world), "an all_reduce after a rejected call gave a wrong result"

    cases: list[tuple[str, Callable, tuple[str, ...]]] = [
        (
            "all_gather with a float64 tensor among float32 outputs",
            lambda: dist.all_gather(
                [torch.zeros(4) for _ in range(world - 1)] + [torch.zeros(4, dtype=torch.float64)], x
            ),
            ("dtype", "type"),
        ),
        (
            "backend allgather with a float64 tensor among float32 outputs",
            lambda: pg.allgather(
                [[torch.zeros(4) for _ in range(world - 1)] + [torch.zeros(4, dtype=torch.float64)]], [x]
            ).wait(),
            ("dtype", "type"),
        ),
        (
            "all_gather with world-1 output tensors",
            lambda: dist.all_gather([torch.zeros(4) for _ in range(world - 1)], x),
            ("size", "number", "count", "world", "length", "expect"),
        ),
        (
            "all_gather_into_tensor with an output one element too long",
            lambda: dist.all_gather_into_tensor(torch.zeros(4 * world + 1), x),
            ("size", "numel", "count", "shape", "world", "expect"),
        ),
        (
            "reduce_scatter_tensor with an input one element too short",
            lambda: dist.reduce_scatter_tensor(torch.zeros(4), torch.zeros(4 * world - 1)),
            ("size", "numel", "count", "shape", "world", "expect"),
        ),
        (
            "all_to_all_single with splits that do not add up",
            lambda: dist.all_to_all_single(torch.zeros(2 * world), torch.zeros(2 * world), [3] * world, [2] * world),
            ("split", "size", "sum", "numel", "count"),
        ),
        (
            "all_reduce of an unsupported dtype (float8_e5m2)",
            lambda: dist.all_reduce(torch.zeros(4, dtype=torch.float8_e5m2)),
            ("dtype", "type", "float8"),
        ),
        (
            "broadcast from src = world size",
            lambda: dist.broadcast(torch.zeros(4), src=world),
            ("rank", "src", "root", "range", "group"),
        ),
        (
            "backend broadcast with rootRank = world size",
            lambda: pg.broadcast([torch.zeros(4)], _opts(dist.BroadcastOptions, rootRank=world)).wait(),
            ("rank", "root", "range"),
        ),
        (
            "backend reduce with rootRank = -1",
            lambda: pg.reduce([torch.zeros(4)], _opts(dist.ReduceOptions, rootRank=-1)).wait(),
            ("rank", "root", "range"),
        ),
        (
            "send to dst = world size",
            lambda: dist.send(torch.zeros(4), dst=world),
            ("rank", "dst", "range", "group"),
        ),
        (
            "backend send to dstRank = world size",
            lambda: pg.send([torch.zeros(4)], world, 0).wait(),
            ("rank", "dst", "range", "peer"),
        ),
        (
            "backend recv from srcRank = -2",
            lambda: pg.recv([torch.zeros(4)], -2, 0).wait(),
            ("rank", "src", "range", "peer"),
        ),
    ]
    for what, fn, keywords in cases:
        if ctx.backend == "gloo" and what in GLOO_ACCEPTS:
            continue
        ctx.progress(f"bad input: {what}")
        messages.append(_expect_error(what, fn, keywords))
        still_works()
    del rank
    return messages


def _opts(cls, **fields):
    opts = cls()
    for k, v in fields.items():
        setattr(opts, k, v)
    return opts


def check_non_contiguous(ctx) -> None:
    """A non-contiguous tensor is either reduced correctly or rejected with a clear message."""
    t = torch.arange(12.0).reshape(3, 4).t()
    try:
        dist.all_reduce(t)
    except Exception as e:  # noqa: BLE001
        assert "contiguous" in str(e).lower(), f"unclear error for a non-contiguous tensor: {e}"
        return
    assert torch.equal(t, torch.arange(12.0).reshape(3, 4).t() * ctx.world_size)


def check_destroy_and_reinit(ctx) -> None:
    """destroy_process_group, then init again in the same process, three times over."""
    for round_ in range(3):
        dist.destroy_process_group()
        assert not dist.is_initialized()
        ctx.init_process_group()
        t = torch.full((100,), float(round_ + ctx.rank))
        dist.all_reduce(t)
        expected = float(round_ * ctx.world_size + sum(range(ctx.world_size)))
        assert torch.all(t == expected), f"round {round_}: got {t[0].item()}, expected {expected}"
        sub = dist.new_group([0, 1])
        if ctx.rank in (0, 1):
            s = torch.ones(2)
            dist.all_reduce(s, group=sub)
            assert torch.all(s == 2.0)


def check_collective_inside_then_callback(ctx) -> None:
    """A then() callback may run another collective and wait for it, as DDP's PowerSGD hook
    does: the thread that completes futures must not be the one the next op needs."""
    a, b = torch.ones(4), torch.ones(4)

    def callback(fut):
        inner = dist.all_reduce(b, async_op=True).get_future().wait()[0]
        return fut.value()[0] + inner

    chained = dist.all_reduce(a, async_op=True).get_future().then(callback)
    box: list = []
    done = threading.Event()

    def waiter() -> None:
        try:
            box.append(chained.wait())
        except Exception as e:  # noqa: BLE001
            box.append(e)
        done.set()

    threading.Thread(target=waiter, daemon=True).start()
    if not done.wait(20):
        raise AssertionError(
            "deadlock: a then() callback that waits for another all_reduce never finished (20 s); "
            "callbacks seem to run on the thread that must complete the inner op"
        )
    if isinstance(box[0], Exception):
        raise box[0]
    assert torch.all(box[0] == 2 * ctx.world_size), f"got {box[0].tolist()}"


def check_listen_options(ctx) -> list[str]:
    """Options(listen_addr=...) and Options(socket_ifname=...) reach the group's listener: a
    group listens where listen_addr says (IPv6 loopback when the host has it, else IPv4), and a
    socket_ifname that selects no interface fails the creation on every rank, naming it."""
    if ctx.backend != "hccl_go":
        return ["hccl_go's own options"]
    import socket

    import torch_hccl_go

    try:
        socket.create_server(("::1", 0), family=socket.AF_INET6).close()
        host, want = "[::1]", "[::1]:"
    except OSError:
        host, want = "127.0.0.2", "127.0.0.2:"
    group = dist.new_group(backend="hccl_go", pg_options=torch_hccl_go.Options(listen_addr=f"{host}:0"))
    addrs = torch_hccl_go.comm_info(group)["addrs"]
    assert len(addrs) == ctx.world_size and all(a.startswith(want) for a in addrs), addrs
    t = torch.ones(8)
    dist.all_reduce(t, group=group)
    assert torch.all(t == ctx.world_size)
    dist.destroy_process_group(group)
    msg = _expect_error(
        "socket_ifname naming no interface",
        lambda: dist.new_group(backend="hccl_go", pg_options=torch_hccl_go.Options(socket_ifname="=nonexistent0")),
        ("hccl_go_socket_ifname==nonexistent0 selects no interface",),
    )
    return [f"listen_addr={host}:0 published {addrs}", msg]


# Run in this order. destroy-and-reinit comes late; the callback check comes last,
# since a deadlock there leaves the group stuck.
CHECKS: list[Callable] = [
    check_barrier,
    check_subgroups_concurrent,
    check_threads_on_two_groups,
    check_async_outstanding,
    check_future_then,
    check_object_collectives,
    check_coalescing_manager,
    check_all_gather_coalesced,
    check_recv_any_source,
    check_narrow_dtypes,
    check_sparse_all_reduce,
    check_wait_timeout_and_monitored_barrier,
    check_bad_inputs,
    check_non_contiguous,
    check_listen_options,
    check_destroy_and_reinit,
    check_collective_inside_then_callback,
]


CHECK_SECONDS = 60  # each check takes a few seconds; more means it hung


def semantics_job(ctx) -> dict[str, object]:
    """{check name: ("ok", what it returned) or ("failed", traceback)}."""
    return ctx.run_checks(CHECKS, CHECK_SECONDS)
