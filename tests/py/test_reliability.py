"""Reliability and security of the hccl_go backend (issue 8), through torch:

- kill -9 of one rank during a stream of all_reduces at world 4: every survivor's
  pending and later ops raise an error naming the dead rank and the op within 2 s,
  with an op timeout of 60 s (HCCL_GO_RELIABILITY_TRIALS trials per route, default 3;
  the acceptance run uses 20);
- a rank that sleeps makes the others time out with an error naming the op, the
  rank not arrived and the time waited; the flight-recorder dumps of all ranks
  say the same through `python -m torch_hccl_go.trace analyze`;
- with HCCL_GO_CHECK=1 mismatched collectives fail alike on every rank, naming the
  fields that differ; without it mismatched sizes never write outside the buffers;
- strangers (garbage, a wrong job secret) are refused during init while the job
  connects, and after init the listening port is closed.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import random
import re
import signal
import socket
import struct
import tempfile
import threading
import time
from datetime import timedelta

import pytest
from harness import BACKEND
from reliability_launch import launch, leftover_shm, shm_entries

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="checks hccl_go specifics")

WORLD = 4
TRIALS = int(os.environ.get("HCCL_GO_RELIABILITY_TRIALS", "3"))
OP_TIMEOUT = 60.0  # the process group's timeout in the kill trials: far above NOTICE_S
NOTICE_S = 2.0  # every survivor fails within this of the kill (0.1-0.3 s here; margin for load)
ROUTES = {"arena": {}, "tcp": {"HCCL_GO_TRANSPORT": "tcp"}}


# --- kill -9 -------------------------------------------------------------------


def _kill_job(rank, world, workdir, victim, kill_after):
    """All ranks loop over all_reduces, two in flight; the victim kills itself after
    kill_after iterations. Survivors report how their ops failed and how long after
    the kill (the victim writes the time of its kill first)."""
    import torch
    import torch.distributed as dist

    pending = []
    i = 0
    deadline = time.time() + 60
    try:
        while time.time() < deadline:
            if rank == victim and i == kill_after:
                with open(os.path.join(workdir, "killed_at"), "w") as f:
                    f.write(repr(time.time()))
                os.kill(os.getpid(), signal.SIGKILL)
            pending.append(dist.all_reduce(torch.ones(1024), async_op=True))
            if len(pending) == 2:
                pending.pop(0).wait()
            i += 1
        raise AssertionError("the all_reduce loop never failed")
    except RuntimeError as e:
        failed_at, first = time.time(), str(e)
    with open(os.path.join(workdir, "killed_at")) as f:
        latency = failed_at - float(f.read())
    # The op still in flight, and any later op, fail too, at once.
    others = []
    for w in pending:
        try:
            w.wait()
            others.append("completed")
        except RuntimeError as e:
            others.append(str(e))
    t0 = time.time()
    try:
        dist.all_reduce(torch.ones(4))
        others.append("a later all_reduce succeeded")
    except RuntimeError as e:
        others.append(str(e))
    return {"iters": i, "latency": latency, "first": first, "others": others, "later_s": time.time() - t0}


def kill_trial(env: dict, seed: int) -> float:
    """One trial; asserts what every survivor saw and returns the slowest survivor's
    time from the kill to its first error (s)."""
    rng = random.Random(seed)
    victim, kill_after = rng.randrange(WORLD), rng.randrange(3, 40)
    shm_before = shm_entries()
    results, errors, codes = launch(
        _kill_job, WORLD, args=(victim, kill_after), env=env, op_timeout_s=OP_TIMEOUT, deadline_s=90
    )
    assert codes[victim] == -signal.SIGKILL, f"victim rank {victim}: exit code {codes[victim]}: {errors.get(victim)}"
    assert not errors, f"ranks raised outside the checks: {errors}"
    survivors = [r for r in range(WORLD) if r != victim]
    missing = sorted(set(survivors) - set(results))
    assert sorted(results) == survivors, f"survivors without a result: {missing} ({codes})"
    for rank, r in results.items():
        for m in (r["first"], r["others"][-1]):
            assert f"rank {victim}" in m, f"rank {rank}: the error does not name dead rank {victim}: {m}"
            assert "allreduce seq" in m, f"rank {rank}: the error does not name the op: {m}"
        for m in r["others"][:-1]:
            assert m == "completed" or f"rank {victim}" in m, f"rank {rank}: a pending op: {m}"
        assert r["later_s"] < 1.0, f"rank {rank}: a later op took {r['later_s']:.2f} s to fail"
        assert r["latency"] < NOTICE_S, f"rank {rank}: failed {r['latency']:.1f} s after the kill"
    leftover = leftover_shm(shm_before)
    assert not leftover, f"shared-memory files left after kill -9: {leftover}"
    return max(r["latency"] for r in results.values())


@pytest.mark.parametrize("route", list(ROUTES))
def test_kill9_fails_survivors_fast(route, record_property):
    """TRIALS trials: a random rank SIGKILLs itself during a stream of all_reduces."""
    latencies = []
    with tempfile.TemporaryDirectory() as td:
        env = dict(ROUTES[route], HCCL_GO_TRACE_DIR=td)
        for trial in range(TRIALS):
            latencies.append(kill_trial(env, seed=1000 * trial + len(route)))
    record_property("trials", TRIALS)
    record_property("worst_latency_s", round(max(latencies), 3))
    latencies.sort()
    print(
        f"\n{route}: {TRIALS}/{TRIALS} kill -9 trials passed; kill to error on the slowest survivor: "
        f"median {latencies[len(latencies) // 2] * 1000:.0f} ms, max {latencies[-1] * 1000:.0f} ms"
    )


# --- abort --------------------------------------------------------------------


def _abort_job(rank, world, workdir):
    """Rank 0 waits on all_reduces nobody joins, from several threads; another
    thread aborts the process group: every waiter must return at once."""
    import torch
    import torch.distributed as dist

    if rank != 0:
        time.sleep(3)  # never joins; the abort on rank 0 ends its communicator for all
        return {}
    works = [dist.all_reduce(torch.ones(4), async_op=True) for _ in range(4)]
    ended: list[float] = []
    outcomes: list[str] = []

    def waiter(w):
        try:
            w.wait()
            outcomes.append("completed")
        except RuntimeError as e:
            outcomes.append(str(e))
        ended.append(time.time())

    threads = [threading.Thread(target=waiter, args=(w,)) for w in works]
    for t in threads:
        t.start()
    time.sleep(0.5)
    aborted_at = time.time()
    threading.Thread(target=lambda: dist.distributed_c10d._get_default_group().abort()).start()
    for t in threads:
        t.join(10)
    return {"outcomes": outcomes, "slowest_ms": (max(ended) - aborted_at) * 1000 if ended else None}


def test_abort_from_another_thread_unblocks_every_waiter():
    results, errors, codes = launch(_abort_job, 2, op_timeout_s=30, deadline_s=60)
    assert 0 in results, (errors, codes)
    r = results[0]
    assert len(r["outcomes"]) == 4, r
    for m in r["outcomes"]:
        assert m != "completed" and "abort" in m.lower(), m
    assert r["slowest_ms"] < 1000, r
    print(f"\nabort: 4 waiters ended within {r['slowest_ms']:.1f} ms")


# --- a rank that stops participating -------------------------------------------

SLEEP_TIMEOUT = 3.0  # the process group's timeout in the sleeper job


def _sleeper_job(rank, world, workdir, trace_dir):
    """Rank 2 sleeps past the others' timeout before its all_reduce."""
    import torch
    import torch.distributed as dist
    import torch_hccl_go.trace

    t = torch.ones(8)
    dist.all_reduce(t)
    requested = torch_hccl_go.trace.dump_trace(path=os.path.join(trace_dir, f"requested-rank{rank}.json"))
    if rank == 2:
        time.sleep(SLEEP_TIMEOUT + 1.5)
    t0 = time.time()
    try:
        # An explicit wait limit longer than the op timeout, so that the library fails
        # the op itself at its timeout, with the explanation, rather than wait() giving
        # up first with a generic message (with no limit given, wait() allows the op
        # timeout plus 2 s).
        dist.all_reduce(torch.ones(8), async_op=True).wait(timeout=timedelta(seconds=SLEEP_TIMEOUT + 5))
        return {"error": None}
    except RuntimeError as e:
        return {"error": str(e), "waited": time.time() - t0, "requested": requested}


def test_sleeping_rank_times_out_and_is_named(tmp_path):
    import json

    from torch_hccl_go import trace

    results, errors, codes = launch(
        _sleeper_job, WORLD, args=(str(tmp_path),), env={"HCCL_GO_TRACE_DIR": str(tmp_path)},
        op_timeout_s=SLEEP_TIMEOUT, deadline_s=60,
    )
    assert not errors and sorted(results) == list(range(WORLD)), (errors, codes)
    for rank in (0, 1, 3):
        msg = results[rank]["error"]
        assert msg, f"rank {rank}: the all_reduce did not fail"
        m = re.search(r"allreduce seq (\d+) \(32 bytes\)", msg)
        assert m, f"rank {rank}: the error does not name the op: {msg}"
        seq = int(m.group(1))
        assert "timed out after" in msg, msg
        assert "waiting for ranks [2]" in msg, msg
        assert f"rank 2 has not issued it (last issued seq {seq - 1})" in msg, msg
        assert results[rank]["waited"] < SLEEP_TIMEOUT + 2, f"rank {rank} waited {results[rank]['waited']:.1f} s"
    # The late rank was told by the others: it fails at once, with their explanation.
    late = results[2]
    assert late["error"] and "timed out" in late["error"] and "allreduce seq" in late["error"], late
    assert late["waited"] < 1.0, f"the late rank waited {late['waited']:.1f} s"
    # Requested dumps, and the automatic dumps of the failure, one per rank.
    for rank in range(WORLD):
        with open(results[rank]["requested"]) as f:
            dump = json.load(f)
        assert dump["rank"] == rank and dump["reason"] == "requested" and dump["ops"][-1]["state"] == "done"
    dumps = trace.load([str(tmp_path)])
    assert len(dumps) == 1 and sorted(next(iter(dumps.values()))) == list(range(WORLD))
    report = "\n".join(trace.analyze(next(iter(dumps.values()))))
    print("\n" + report)
    assert f"rank 2 has not issued seq {seq} (last issued seq {seq - 1})" in report, report


# --- mismatched collectives ------------------------------------------------------


def _mismatch_job(rank, world, workdir):
    import torch
    import torch.distributed as dist

    def odd(on_rank1, elsewhere):
        return on_rank1 if rank == 1 else elsewhere

    cases = {
        "size": lambda: dist.all_reduce(torch.ones(odd(8, 4))),
        "dtype": lambda: dist.all_reduce(torch.ones(odd(4, 8), dtype=odd(torch.float64, torch.float32))),
        "op": lambda: dist.broadcast(torch.ones(4), src=0) if rank == 1 else dist.all_reduce(torch.ones(4)),
        "reduce op": lambda: dist.all_reduce(torch.ones(4), op=odd(dist.ReduceOp.MAX, dist.ReduceOp.SUM)),
    }
    out = {}
    for name, call in cases.items():
        try:
            call()
            out[name] = None
        except RuntimeError as e:
            out[name] = str(e)
        t = torch.ones(3)
        dist.all_reduce(t)  # still in step
        assert torch.equal(t, torch.full((3,), float(world))), (name, t)
    return out


def test_mismatch_detected_on_every_rank():
    results, errors, codes = launch(_mismatch_job, WORLD, env={"HCCL_GO_CHECK": "1"}, op_timeout_s=10, deadline_s=60)
    assert not errors and sorted(results) == list(range(WORLD)), (errors, codes)
    want = {
        "size": "bytes: 16 on ranks [0 2 3], 32 on ranks [1]",
        "dtype": "dtype: float32 on ranks [0 2 3], float64 on ranks [1]",
        "op": "op: allreduce on ranks [0 2 3], broadcast on ranks [1]",
        "reduce op": "reduce op: sum on ranks [0 2 3], max on ranks [1]",
    }
    for rank, out in results.items():
        for case, diff in want.items():
            assert out[case] and "collective mismatch" in out[case] and diff in out[case], (rank, case, out[case])


def _subgroup_mismatch_job(rank, world, workdir):
    """A mismatch inside new_group([1, 3]): the error maps subgroup ranks to global ones."""
    import torch
    import torch.distributed as dist

    group = dist.new_group([1, 3])
    if rank not in (1, 3):
        return None
    try:
        dist.all_reduce(torch.ones(4 if rank == 1 else 8), group=group)
        return "no error"
    except RuntimeError as e:
        return str(e)


def test_subgroup_errors_name_global_ranks():
    results, errors, codes = launch(
        _subgroup_mismatch_job, WORLD, env={"HCCL_GO_CHECK": "1"}, op_timeout_s=10, deadline_s=60
    )
    assert not errors and sorted(results) == list(range(WORLD)), (errors, codes)
    for rank in (1, 3):
        msg = results[rank]
        assert "collective mismatch" in msg, (rank, msg)
        assert "as global ranks: 0=global 1, 1=global 3" in msg, (rank, msg)


def _unchecked_mismatch_job(rank, world, workdir, n):
    """Mismatched sizes without the check: whatever happens, nothing is written
    outside the buffers (canaries around each rank's tensor)."""
    import torch
    import torch.distributed as dist

    size = 2 * n if rank == 1 else n
    full = torch.full((size + 64,), 7.0)
    view = full[32 : 32 + size]
    view.fill_(1.0)
    try:
        dist.all_reduce(view)
        outcome = "no error"
    except RuntimeError as e:
        outcome = str(e).splitlines()[0][:300]
    intact = bool(torch.all(full[:32] == 7.0)) and bool(torch.all(full[32 + size :] == 7.0))
    return {"canaries_intact": intact, "outcome": outcome}


@pytest.mark.parametrize("route", list(ROUTES))
@pytest.mark.parametrize("n", [16, 65536])
def test_unchecked_size_mismatch_writes_nothing_outside(route, n, tmp_path):
    env = dict(ROUTES[route], HCCL_GO_CHECK="0", HCCL_GO_TRACE_DIR=str(tmp_path))
    results, errors, codes = launch(_unchecked_mismatch_job, WORLD, args=(n,), env=env, op_timeout_s=2, deadline_s=60)
    assert not errors and sorted(results) == list(range(WORLD)), (errors, codes)
    for rank, r in results.items():
        assert r["canaries_intact"], f"rank {rank} wrote outside its buffer: {r}"
    print(f"\n{route} n={n}: " + "; ".join(f"rank {r}: {v['outcome'][:120]}" for r, v in sorted(results.items())))


# --- strangers -----------------------------------------------------------------


def _listening_ports(pid: int) -> list[int]:
    """TCP ports process pid listens on (from /proc; root or the same user)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = []
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # LISTEN
                ports.append(int(fields[1].split(":")[1], 16))
    return ports


def _wrong_secret_hello(challenge: bytes, claimed_rank: int, size: int) -> bytes:
    """A well-formed handshake hello (transport/tcp, version 1) proving a wrong secret."""
    header = struct.pack("<HH", 1, 2) + struct.pack("<IIHHI", claimed_rank, size, 0, 1, 4 << 20)
    fields = b"HCGT" + header + os.urandom(32)
    mac = hmac.new(b"not the job secret", b"hccl-go/tcp dial" + challenge[8:] + fields, hashlib.sha256).digest()
    return fields + mac


def _attack(port: int, kind: str, size: int, sent: threading.Event | None = None) -> str:
    """One stranger's attempt on a rank's port; returns how it ended for the stranger.
    The payload goes out at once, before the acceptor's challenge arrives: during
    init the rank only starts accepting once every rank has published its address,
    and the kernel queues both the connection and its bytes until then. `sent` is
    set once the payload is queued (or the attempt has ended)."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
    except ConnectionRefusedError:
        if sent is not None:
            sent.set()
        return "refused"
    with s:
        s.settimeout(30)
        if kind == "garbage":
            s.sendall(os.urandom(200))
        elif kind == "short":
            s.sendall(b"HCGT")
            s.shutdown(socket.SHUT_WR)
        else:
            s.sendall(_wrong_secret_hello(os.urandom(40), size - 1, size))
        if sent is not None:
            sent.set()
        try:
            reply = b""
            while True:
                chunk = s.recv(256)
                if not chunk:
                    break
                reply += chunk
        except (TimeoutError, ConnectionResetError) as e:
            return type(e).__name__ + (" after a challenge" if reply[:4] == b"HCGT" else "")
        if len(reply) >= 40 + 10 and reply[40:44] == b"HCGT":
            return f"challenged, then refused with status {struct.unpack('<H', reply[48:50])[0]}"
        if reply[:4] == b"HCGT":
            return "challenged, then closed"
        return "closed"


def _security_before_init(rank, world, workdir):
    """Every rank publishes its pid. The last rank attacks from inside its own
    init: when it is about to open its listener, the others have exchanged host
    ids, listen, and wait for its address before they start connecting. It finds
    their listening ports and attacks each three ways in the background, then
    goes on: the attacks are answered during init. Each rank says it is on a host of
    its own, so that the ranks link over TCP (ranks of one host talk through shared
    memory only) and listen on loopback."""
    os.environ["HCCL_GO_HOST_ID"] = f"security-host-{rank}"
    os.environ["HCCL_GO_LISTEN_ADDR"] = "127.0.0.1:0"
    with open(os.path.join(workdir, f"pid{rank}"), "w") as f:
        f.write(str(os.getpid()))
    if rank != world - 1:
        return
    from torch_hccl_go import _C

    listen_rank = _C.listen_rank

    def attack_then_listen(*args, **kwargs):
        _attack_listeners(world, workdir)
        return listen_rank(*args, **kwargs)

    _C.listen_rank = attack_then_listen


def _attack_listeners(world, workdir):
    ports: dict[int, int] = {}
    deadline = time.time() + 30
    while len(ports) < world - 1 and time.time() < deadline:
        for r in range(world - 1):
            try:
                with open(os.path.join(workdir, f"pid{r}")) as f:
                    found = _listening_ports(int(f.read()))
            except (OSError, ValueError):
                continue
            if found:
                ports[r] = found[0]
        time.sleep(0.05)
    outcomes: dict[int, dict[str, str]] = {r: {} for r in ports}

    def attack(r, kind, sent):
        try:
            outcomes[r][kind] = _attack(ports[r], kind, world, sent)
        finally:
            sent.set()

    kinds = ("garbage", "wrong-secret", "short")
    attacks = [(r, k, threading.Event()) for r in ports for k in kinds]
    threads = [threading.Thread(target=attack, args=a) for a in attacks]
    for t in threads:
        t.start()
    # Every attack is queued before this rank publishes its address: one that
    # arrived after the others had connected would find the listener closing.
    for _, _, sent in attacks:
        sent.wait(30)
    _SECURITY["ports"], _SECURITY["during_init"], _SECURITY["threads"] = ports, outcomes, threads


_SECURITY: dict = {}  # the attacking rank's state between before_init and the job


def _security_job(rank, world, workdir):
    """After init: an all_reduce loop with checked results while the last rank keeps
    knocking at the ports the others listened on during init."""
    import torch
    import torch.distributed as dist

    after: list[str] = []
    stop = threading.Event()
    if rank == world - 1:
        for t in _SECURITY["threads"]:
            t.join(30)

        def knock():
            while not stop.is_set():
                for p in _SECURITY["ports"].values():
                    after.append(_attack(p, "wrong-secret", world))
                time.sleep(0.01)

        th = threading.Thread(target=knock, daemon=True)
        th.start()
    t = torch.ones(1000)
    for i in range(200):
        t.fill_(float(rank + i))
        dist.all_reduce(t)
        want = float(sum(range(world)) + world * i)
        assert torch.all(t == want), f"iteration {i}: {t[0].item()} != {want}"
    stop.set()
    if rank == world - 1:
        th.join(10)
        return {
            "ports": _SECURITY["ports"], "during_init": _SECURITY["during_init"],
            "after_init": sorted(set(after)), "knocks": len(after),
        }
    return {}


def test_strangers_are_refused_and_the_job_runs():
    results, errors, codes = launch(
        _security_job, 3, env={}, op_timeout_s=30, deadline_s=90, before_init=_security_before_init
    )
    assert not errors and sorted(results) == [0, 1, 2], (errors, codes)
    r = results[2]
    assert sorted(r["ports"]) == [0, 1], r
    for rank, outcomes in r["during_init"].items():
        # Closing with unread garbage in the buffer makes the kernel send a reset.
        refused = ("challenged, then closed", "ConnectionResetError after a challenge")
        assert outcomes["garbage"] in refused, (rank, outcomes)
        assert outcomes["wrong-secret"] == "challenged, then refused with status 2", (rank, outcomes)
        assert outcomes["short"] == "challenged, then closed", (rank, outcomes)
    assert r["after_init"] == ["refused"] and r["knocks"] > 0, r
    print(f"\nduring init: {r['during_init']}; after init: {r['knocks']} knocks, all {r['after_init']}")
