"""torch_hccl_go.symm: symmetric CPU tensors, peer buffers, put/get, signals, barrier,
bad arguments, a dead peer while waiting, fork and kill -9 hygiene, ranks of another
host; and examples/symm_ring.py under torchrun."""

from __future__ import annotations

import glob
import os
import signal
import time
from pathlib import Path

import pytest
from harness import RankFailure, run_ranks, run_torchrun

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    os.environ.get("HCCL_GO_TEST_BACKEND", "hccl_go") != "hccl_go", reason="symmetric memory is hccl_go's"
)


def _segments() -> set[str]:
    return set(glob.glob("/dev/shm/hccl-go-symm-*"))


def _job_calls(ctx):
    """Every call, and the errors of wrong arguments (nothing written out of bounds)."""
    import torch
    import torch.distributed as dist
    import torch_hccl_go.symm as symm

    r, n = ctx.rank, ctx.world_size
    nxt, prv = (r + 1) % n, (r - 1) % n
    t = symm.empty((4, 8), dtype=torch.float32)
    assert t.shape == (4, 8) and t.dtype == torch.float32 and t.device.type == "cpu"
    assert bool((t == 0).all()), "zero-filled"
    t.fill_(float(r))
    h = symm.rendezvous(t)
    assert (h.rank, h.world_size) == (r, n)
    h.barrier()

    # get_buffer: views of every rank's memory, loads and stores straight to it.
    for p in range(n):
        b = h.get_buffer(p, (32,), torch.float32)
        assert bool((b == float(p)).all()), f"rank {p}'s buffer reads {b[:4]}"
    h.barrier()
    mine = h.get_buffer(nxt, (8,), torch.float32, storage_offset=8 * r % 32)
    mine.fill_(100.0 + r)  # into the next rank's row r % 4
    h.barrier()
    assert bool((t[prv % 4] == 100.0 + prv).all()), f"row {prv % 4} is {t[prv % 4]}"
    # Another dtype over the same bytes.
    as_int = h.get_buffer(r, (2, 4), torch.int32, storage_offset=24)
    assert as_int.shape == (2, 4) and as_int.data_ptr() == t.data_ptr() + 96
    h.barrier()

    # put / get with offsets in elements, then signals.
    t.zero_()
    h.barrier()
    src = torch.arange(5, dtype=torch.float32) + 10 * r
    h.put(src, nxt, offset=3)
    h.put_signal(nxt)
    h.wait_signal(prv)
    assert torch.equal(t.view(-1)[3:8], torch.arange(5, dtype=torch.float32) + 10 * prv)
    h.barrier()  # every rank has received
    got = torch.empty(5)
    h.get(got, prv, offset=3)  # what rank prv received from its own previous rank
    assert torch.equal(got, torch.arange(5, dtype=torch.float32) + 10 * ((prv - 1) % n))
    # Non-contiguous source and destination.
    h.barrier()
    h.put(torch.arange(10, dtype=torch.float32)[::2], nxt, offset=0)
    h.put_signal(nxt)
    h.wait_signal(prv)
    strided = torch.zeros(10)[::2]
    h.get(strided, r, offset=0)
    assert torch.equal(strided, torch.arange(10, dtype=torch.float32)[::2])
    # Signals count: three signals, three waits.
    h.barrier()
    for _ in range(3):
        h.put_signal(nxt)
    for _ in range(3):
        h.wait_signal(prv, timeout=10)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match=f"signal from rank {prv}"):
        h.wait_signal(prv, timeout=0.2)
    assert time.monotonic() - start < 5
    h.barrier()

    # Wrong arguments: clear errors, nothing written anywhere.
    before = [h.get_buffer(p, (32,), torch.float32).clone() for p in range(n)]
    bad = {
        "rank": lambda: h.put(torch.ones(2), n, 0),
        "negative rank": lambda: h.get(torch.ones(2), -1, 0),
        "dtype": lambda: h.put(torch.ones(2, dtype=torch.float64), nxt, 0),
        "too large": lambda: h.put(torch.ones(33), nxt, 0),
        "past the end": lambda: h.put(torch.ones(4), nxt, 30),
        "negative offset": lambda: h.get(torch.ones(1), nxt, -1),
        "float offset": lambda: h.put(torch.ones(1), nxt, 1.5),
        "get too large": lambda: h.get(torch.ones(40), nxt, 0),
        "buffer past the end": lambda: h.get_buffer(nxt, (33,), torch.float32),
        "buffer offset past the end": lambda: h.get_buffer(nxt, (4,), torch.float32, storage_offset=29),
        "buffer wider dtype": lambda: h.get_buffer(nxt, (17,), torch.float64),
        "buffer rank": lambda: h.get_buffer(n + 1, (1,), torch.float32),
        "buffer negative offset": lambda: h.get_buffer(nxt, (1,), torch.float32, storage_offset=-1),
        "signal rank": lambda: h.put_signal(n),
        "wait rank": lambda: h.wait_signal(-2),
        "wait timeout": lambda: h.wait_signal(prv, timeout=-1),
        "empty size": lambda: symm.empty((2, -1)),
        "empty dtype": lambda: symm.empty(4, dtype=torch.complex64),
        "empty zero": lambda: symm.empty(0),
        "rendezvous ordinary tensor": lambda: symm.rendezvous(torch.zeros(4)),
    }
    messages = {}
    for name, call in bad.items():
        try:
            call()
        except ValueError as e:
            messages[name] = str(e)
        else:
            raise AssertionError(f"{name}: no error")
    for p in range(n):
        assert torch.equal(h.get_buffer(p, (32,), torch.float32), before[p]), f"rank {p}'s buffer changed"
    assert "not a rank of this group" in messages["rank"]
    assert "differs from the symmetric tensor's torch.float32" in messages["dtype"]
    assert "do not fit" in messages["past the end"]
    assert "but rank" in messages["buffer past the end"]
    h.barrier()  # every rank has checked: the buffers may change again
    # An exact fit at the end works.
    h.put(torch.full((2,), 7.0), nxt, offset=30)
    h.barrier()
    assert torch.equal(t.view(-1)[30:], torch.full((2,), 7.0))

    # The C API's own checks, past Python's (what a C caller gets).
    lib = symm._lib()
    assert lib.hcclGoPut(src.data_ptr(), 33, 7, nxt, 0, h._win) == 1
    assert lib.hcclGoPut(src.data_ptr(), 1, 7, nxt, 32, h._win) == 1
    assert lib.hcclGoGet(src.data_ptr(), 1, 8, nxt, 16, h._win) == 1  # float64 offset 16 = byte 128
    assert lib.hcclGoWindowPeerPtr(h._win, n, None, None) == 1
    assert lib.hcclGoMemFree(12345) == 2  # not an allocation
    assert lib.hcclGoWindowDestroy(999999) == 2

    # Several allocations and dtypes side by side; a view of t rendezvouses too.
    u = symm.empty(16, dtype=torch.int64)
    hu = symm.rendezvous(u[4:])
    hu.put(torch.tensor([r], dtype=torch.int64), nxt, offset=r)
    hu.barrier()
    assert u[prv].item() == prv
    hb = symm.rendezvous(symm.empty(8, dtype=torch.bfloat16))
    hb.put(torch.ones(8, dtype=torch.bfloat16), nxt)
    hb.barrier()
    assert segs_left_check() == []
    dist.barrier()
    return "ok"


def segs_left_check() -> list[str]:
    """The symmetric segments of this job still in /dev/shm (none: unlinked at once)."""
    return sorted(_segments())


def test_symm_calls_world2():
    assert run_ranks(_job_calls, 2, timeout=120) == ["ok"] * 2


def test_symm_calls_world3():
    assert run_ranks(_job_calls, 3, timeout=150) == ["ok"] * 3


def _job_lifetime(ctx):
    """The memory outlives the process group; freeing is per reference."""
    import gc

    import torch
    import torch.distributed as dist
    import torch_hccl_go.symm as symm

    t = symm.empty(1024, dtype=torch.float32)
    h = symm.rendezvous(t)
    peer = h.get_buffer((ctx.rank + 1) % ctx.world_size, (1024,), torch.float32)
    h.barrier()
    dist.destroy_process_group()  # the tensor, the handle and the view stay valid
    peer.fill_(1.0)
    t.add_(1.0)
    h.put(torch.ones(4), (ctx.rank + 1) % ctx.world_size)
    del h, t, peer
    gc.collect()
    # Many allocations freed one by one: no descriptor or mapping piles up.
    ctx.init_process_group()
    fds = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        x = symm.empty(4096, dtype=torch.uint8)
        hx = symm.rendezvous(x)
        hx.barrier()
        del x, hx
        gc.collect()
    assert len(os.listdir("/proc/self/fd")) <= fds + 2, "descriptors leak"
    return "ok"


def test_symm_lifetime():
    assert run_ranks(_job_lifetime, 2, timeout=120) == ["ok"] * 2


def _job_dead_peer(ctx, remote: bool):
    """Rank 1 dies (SIGKILL) while rank 0 waits for its signal: rank 0's wait fails naming
    rank 1 within its timeout. remote: rank 1 is on another host (HCCL_GO_HOST_ID), and
    the communicator learns of its death from its link."""
    import torch

    if remote:
        os.environ["HCCL_GO_HOST_ID"] = f"host-{ctx.rank}"
    ctx.init_process_group()
    import torch_hccl_go.symm as symm

    t = symm.empty(64, dtype=torch.float32)
    h = symm.rendezvous(t)
    h.barrier()
    assert segs_left_check() == []
    if ctx.rank == 1:
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    try:
        h.wait_signal(1, timeout=60)
    except symm.SymmError as e:
        ctx.record("wait", (str(e), time.monotonic() - start))
        ctx._queue.close()
        ctx._queue.join_thread()  # the record reaches the parent
        os._exit(0)  # the group lost a rank: skip its teardown
    ctx.record("wait", ("wait_signal returned though rank 1 died", 0.0))


@pytest.mark.parametrize("remote", [False, True], ids=["same host", "other host"])
def test_symm_dead_peer_during_wait_signal(remote):
    before = _segments()
    with pytest.raises(RankFailure) as info:
        run_ranks(_job_dead_peer, 2, args=(remote,), timeout=120, grace=30, init=False)
    msg, elapsed = info.value.partial[0]["wait"]
    assert "rank 1" in msg, msg
    if not remote:
        assert "died or closed" in msg, msg
    assert elapsed < (30 if remote else 10), elapsed
    assert _segments() <= before, "segments left in /dev/shm"


def _job_fork(ctx):
    """A forked child (as a DataLoader worker is; the harness's daemonic ranks may not start DataLoader
    workers themselves) inherits the mapping: it reads and writes the
    symmetric tensor, its calls into the library fail cleanly, its exit frees nothing."""
    import gc

    import torch
    import torch.distributed as dist
    import torch_hccl_go.symm as symm

    t = symm.empty(16, dtype=torch.float32)
    h = symm.rendezvous(t)
    peer = h.get_buffer((ctx.rank + 1) % ctx.world_size, (16,), torch.float32)
    h.barrier()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            t[0] = 42.0  # shared with the parent
            peer[1] = 7.0  # and with the peer
            try:
                h.put(torch.ones(1), 0)
                code = 10
            except symm.SymmError as e:
                if "forked" not in str(e):
                    code = 11
            try:
                symm.empty(4)
                code = 12
            except Exception:  # noqa: BLE001
                pass
            del t, h, peer
            gc.collect()  # the finalizers run: hcclGoMemFree is refused in a child
        except BaseException:  # noqa: BLE001
            code = 13
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, status
    assert t[0].item() == 42.0
    h.barrier()
    assert t[1].item() == 7.0
    # The parent's memory and handle still work after the child's exit.
    h.put(torch.full((2,), 3.0), (ctx.rank + 1) % ctx.world_size, offset=4)
    h.put_signal((ctx.rank + 1) % ctx.world_size)
    h.wait_signal((ctx.rank - 1) % ctx.world_size)
    assert t[4].item() == 3.0
    dist.barrier()
    return "ok"


def test_symm_fork():
    assert run_ranks(_job_fork, 2, timeout=120) == ["ok"] * 2


def _job_kill_hygiene(ctx):
    import torch
    import torch_hccl_go.symm as symm

    ts = [symm.empty(1 << 16, dtype=torch.float32) for _ in range(3)]
    h = symm.rendezvous(ts[0])
    h.barrier()
    ctx.record("allocated", True)
    time.sleep(60)  # killed here


def test_symm_kill9_leaves_nothing():
    before = _segments()
    with pytest.raises(RankFailure):
        run_ranks(_job_kill_hygiene, 2, timeout=8, grace=1)
    assert _segments() <= before, "segments left in /dev/shm after SIGKILL"


def _job_two_hosts(ctx):
    """Ranks 0 and 1 on host A, rank 2 on host B (HCCL_GO_HOST_ID): put, get, put_signal,
    wait_signal and barrier reach the other host over the group's links; get_buffer on the
    other host's memory raises NotImplementedError naming the rank."""
    import torch

    os.environ["HCCL_GO_HOST_ID"] = "host-b" if ctx.rank == 2 else "host-a"
    ctx.init_process_group()
    import torch.distributed as dist
    import torch_hccl_go.symm as symm

    r, n = ctx.rank, ctx.world_size
    nxt, prv = (r + 1) % n, (r - 1) % n
    t = symm.empty(64, dtype=torch.float32)
    h = symm.rendezvous(t)
    other = [2] if r < 2 else [0, 1]
    for p in other:
        with pytest.raises(NotImplementedError, match=f"rank {p} is on host"):
            h.get_buffer(p, (1,), torch.float32)
    # A ring across the hosts: each rank puts its block into the next one's buffer, signals,
    # and waits for the previous one's (each step in blocks of its own: a rank may run ahead).
    for step in range(3):
        at = 4 * (3 * step + r)
        h.put(torch.full((4,), float(10 * step + r)), nxt, offset=at)
        h.put_signal(nxt)
        h.wait_signal(prv, timeout=30)
        got = t[4 * (3 * step + prv) : 4 * (3 * step + prv) + 4]
        assert bool((got == 10 * step + prv).all()), f"step {step}: {got}"
    h.barrier()
    # get: every rank reads the block the next rank received from it.
    t[48 + r] = 100.0 + r
    h.barrier()
    got = torch.empty(1)
    for p in range(n):
        h.get(got, p, offset=48 + p)
        assert got.item() == 100.0 + p, f"rank {p}'s element {got}"
    with pytest.raises(ValueError, match="do not fit"):
        h.put(torch.ones(8), other[0], offset=60)
    dist.barrier()
    return "ok"


def test_symm_across_hosts():
    assert run_ranks(_job_two_hosts, 3, timeout=150, init=False) == ["ok"] * 3


def test_symm_ring_example_torchrun():
    """examples/symm_ring.py under torchrun --nproc-per-node 2."""
    proc, out = run_torchrun([str(REPO / "examples" / "symm_ring.py"), "--size", "4096", "--steps", "5"],
                             cwd=str(REPO), nproc=2, timeout=120)  # fmt: skip
    assert proc.returncode == 0, out[-4000:]
    assert proc.stdout.count("symm_ring: ok") == 2, out[-4000:]
