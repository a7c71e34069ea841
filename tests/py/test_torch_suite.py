"""A representative part of PyTorch's own distributed suite, against hccl_go.

scripts/torch_suite.sh runs all of torch/testing/_internal/distributed/distributed_test.py;
CI runs these tests of it: every collective family, point to point (tags, any source,
batch_isend_irecv), a timeout gated on gloo's name, object collectives and DDP on CPU, and
the CPU all_to_all tests gated on MPI's name. The test fails if any of them fails or is
skipped (a mass skip must not pass for success).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from harness import BACKEND

ROOT = Path(__file__).resolve().parents[2]

PASSES = {
    "gloo": [
        "test_all_reduce_sum",
        "test_all_reduce_max",
        "test_all_reduce_sum_complex",
        "test_all_reduce_coalesced_sum",
        "test_all_reduce_full_group_sum",
        "test_sparse_all_reduce_sum",
        "test_broadcast",
        "test_reduce_sum",
        "test_reduce_product",
        "test_all_gather",
        "test_all_gather_coalesced_simple",
        "test_all_gather_coalesced_with_empty",
        "test_gather",
        "test_scatter",
        "test_barrier",
        "test_barrier_full_group",
        "test_send_recv",
        "test_send_recv_with_tag",
        "test_send_recv_any_source",
        "test_isend",
        "test_irecv",
        "test_batch_isend_irecv_gloo",
        "test_barrier_timeout_global",
        "test_barrier_timeout_full_group",
        "test_monitored_barrier_gloo",
        "test_monitored_barrier_gloo_subgroup",
        "test_all_gather_object_default_pg",
        "test_scatter_object_list",
        "test_DistributedDataParallelCPU",
        "test_accumulate_gradients_no_sync_allreduce_hook",
    ],
    "mpi": ["test_all_to_all", "test_all_to_all_single_unequal_split"],
}


@pytest.mark.skipif(BACKEND != "hccl_go", reason="runs torch's suite against hccl_go only")
@pytest.mark.parametrize("gates", sorted(PASSES))
def test_torch_suite(gates: str) -> None:
    names = PASSES[gates]
    env = dict(os.environ, SUITE_PASSES=gates, SUITE_TESTS=" ".join(names))
    p = subprocess.run(
        ["bash", str(ROOT / "scripts" / "torch_suite.sh")], env=env, capture_output=True, text=True, timeout=900
    )
    out = p.stdout + p.stderr
    failed = re.findall(r"FAILED \S+::(test_\w+)", out)
    assert p.returncode == 0 and not failed, f"torch suite (gates {gates}) failed: {failed}\n{out[-6000:]}"
    m = re.search(r"(\d+) passed", out)
    passed = int(m.group(1)) if m else 0
    assert passed == len(names), f"{passed} of the {len(names)} selected tests passed:\n{out[-4000:]}"
    print(f"gates {gates}: {passed} of torch's distributed tests passed")
