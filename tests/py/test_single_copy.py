"""Single-copy collectives through torch.distributed: the shared-memory all_gather of 4-8
MiB of output and all_to_all of equal blocks from 1 MiB (HCCL_GO_SINGLE_COPY=auto, the
default, and 1; one agreement for both) and all_reduce of 256 KiB-1
MiB (at 2 ranks; 2 MiB/ranks beyond; 1 only) read peers' buffers in place with
process_vm_readv. The all_gathers make the ranks agree on it for all_gather
(comm_info's single_copy_gather turns from "undecided" to "on"), the all_reduces for
all_reduce (single_copy: "on" with 1, "off" with auto, and with ranks whose settings
differ); every result, in and out of place, list and tensor forms, odd block sizes,
equals the reference, bitwise alike on every rank. Where the kernel refuses
process_vm_readv between the ranks the test skips, saying so."""

from __future__ import annotations

import functools
import os

import pytest
from harness import BACKEND
from reliability_launch import launch

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go's single-copy protocol")

MiB = 1 << 20


def single_copy_job(me: int, p: int, workdir: str) -> dict:
    import torch
    import torch.distributed as dist
    import torch_hccl_go

    before = torch_hccl_go.comm_info()["single_copy_gather"]

    def blocks(n: int, dtype, seed: int) -> list:
        return [
            torch.randint(-100, 100, (n,), generator=torch.Generator().manual_seed(seed + r)).to(dtype)
            for r in range(p)
        ]

    # Blocks whose output is 4 MiB exactly, odd sizes within 4-8 MiB, and 8 MiB.
    for out_bytes in (4 * MiB, 6 * MiB + 4 * p * 7, 8 * MiB):
        n = out_bytes // (4 * p)
        every = blocks(n, torch.float32, seed=n)
        want = torch.cat(every)
        out = torch.empty(n * p)
        dist.all_gather_into_tensor(out, every[me])
        assert torch.equal(out, want), f"all_gather_into_tensor of {n * p} elements"
        inplace = torch.zeros(n * p)
        inplace[me * n : (me + 1) * n] = every[me]
        dist.all_gather_into_tensor(inplace, inplace[me * n : (me + 1) * n])
        assert torch.equal(inplace, want), f"in-place all_gather_into_tensor of {n * p} elements"
        outs = [torch.empty(n) for _ in range(p)]
        dist.all_gather(outs, every[me])
        assert all(torch.equal(outs[r], every[r]) for r in range(p)), f"all_gather (list) of {n} per rank"
    after_gathers = torch_hccl_go.comm_info()["single_copy_gather"]

    # all_reduces in the single-copy range: integers in float32 add exactly.
    digests = []
    for nbytes in (256 << 10, (512 << 10) + 12, min(MiB, 2 * MiB // p)):
        n = nbytes // 4
        every = blocks(n, torch.float32, seed=7 * n)
        t = every[me].clone()
        dist.all_reduce(t)
        assert torch.equal(t, sum(every[1:], every[0].clone())), f"all_reduce of {n} elements"
        digests.append(t.sum().item())
    reduce_state = torch_hccl_go.comm_info()["single_copy"]
    return {"before": before, "after_gathers": after_gathers, "reduce": reduce_state, "digests": digests}


def _set_mode(modes: list[str], rank: int, world: int, workdir: str) -> None:
    if modes[rank]:
        os.environ["HCCL_GO_SINGLE_COPY"] = modes[rank]
    else:
        os.environ.pop("HCCL_GO_SINGLE_COPY", None)


def _run(world: int, modes: list[str]) -> list[dict]:
    """single_copy_job with HCCL_GO_SINGLE_COPY=modes[rank] ("": unset, the default)."""
    results, errors, codes = launch(
        single_copy_job, world, op_timeout_s=60, deadline_s=180, before_init=functools.partial(_set_mode, modes)
    )
    assert not errors and sorted(results) == list(range(world)), (errors, codes)
    return [results[r] for r in range(world)]


@pytest.mark.parametrize(
    "world,modes,want_reduce",
    [(2, ["1", "1"], "on"), (3, ["1", "1", "1"], "on"), (2, ["", ""], "off"), (2, ["1", "auto"], "off")],
    ids=["1-w2", "1-w3", "default-w2", "mixed-w2"],
)
def test_single_copy_collectives(world, modes, want_reduce):
    results = _run(world, modes)
    states = {r["after_gathers"] for r in results}
    assert len(states) == 1, f"the ranks disagree on single-copy: {states}"
    state = states.pop()
    if state.startswith("off"):
        pytest.skip(f"the kernel refuses process_vm_readv between the ranks here: single_copy_gather is {state!r}")
    assert all(r["before"] == "undecided" for r in results), results
    assert state == "on", f"the all_gathers did not take the single-copy path: single_copy_gather is {state!r}"
    assert all(r["reduce"].startswith(want_reduce) for r in results), results
    assert len({tuple(r["digests"]) for r in results}) == 1, results


def all_to_all_job(me: int, p: int, workdir: str) -> dict:
    import torch
    import torch.distributed as dist
    import torch_hccl_go

    before = torch_hccl_go.comm_info()["single_copy_gather"]
    # Even all_to_all_singles (single-copy from 1 MiB of recv) of 4 MiB exactly, odd-sized,
    # and 8 MiB: the first makes the ranks agree (sharing all_gather's state).
    for out_bytes in (4 * MiB, 6 * MiB + 4 * p * 7, 8 * MiB):
        n = out_bytes // (4 * p)
        sends = [torch.randint(-1000, 1000, (n * p,), generator=torch.Generator().manual_seed(n + r)) for r in range(p)]
        sends = [s.to(torch.float32) for s in sends]
        want = torch.cat([sends[r][me * n : (me + 1) * n] for r in range(p)])
        out = torch.empty(n * p)
        dist.all_to_all_single(out, sends[me])
        assert torch.equal(out, want), f"all_to_all_single of {n * p} elements"
        inplace = sends[me].clone()
        dist.all_to_all_single(inplace, inplace)
        assert torch.equal(inplace, want), f"in-place all_to_all_single of {n * p} elements"
        splits = [n] * p
        out_v = torch.empty(n * p)
        dist.all_to_all_single(out_v, sends[me], splits, splits)
        assert torch.equal(out_v, want), f"all_to_all_single with splits of {n * p} elements"
    return {"before": before, "after": torch_hccl_go.comm_info()["single_copy_gather"]}


@pytest.mark.parametrize("world", [2, 3])
def test_single_copy_all_to_all(world):
    """all_to_all_single of equal blocks from 1 MiB reads the peers' blocks in place: the
    ranks agree on it at the first one, and every result, in and out of place,
    equals the reference (with splits it stays staged, and equal too)."""
    results, errors, codes = launch(all_to_all_job, world, op_timeout_s=60, deadline_s=180)
    assert not errors and sorted(results) == list(range(world)), (errors, codes)
    states = {results[r]["after"] for r in range(world)}
    assert len(states) == 1, f"the ranks disagree on single-copy: {states}"
    state = states.pop()
    if state.startswith("off"):
        pytest.skip(f"the kernel refuses process_vm_readv between the ranks here: single_copy_gather is {state!r}")
    assert all(results[r]["before"] == "undecided" for r in range(world)), results
    assert state == "on", f"the all_to_alls did not take the single-copy path: single_copy_gather is {state!r}"
