"""PyTorch's own distributed conformance suite, run against hccl_go.

torch ships its backend tests in the wheel
(torch/testing/_internal/distributed/distributed_test.py, class
DistributedTest._DistTestBase). This module binds them to hccl_go the way torch's
test_distributed_spawn.py binds them to gloo: every test spawns WORLD_SIZE processes that
call init_process_group(backend="hccl_go", init_method="file://...").

The suite decides at import time which tests run, from the backend's name (BACKEND) and
its feature tables (DistTestCases). hccl_go is entered in the tables for what it
implements ("plugin": an available third-party backend, "ddp", "subgroup"). Many tests
are gated on a backend's name instead ("Only gloo backend supports timeouts", "Only MPI
supports all_to_all"); HCCL_GO_SUITE_GATES_AS=gloo or =mpi makes the gates read that name
while every rank still runs hccl_go, so those tests run too.

Run it with scripts/torch_suite.sh. EXPECTED_FAILURES lists the tests that fail for
reasons outside hccl_go, each with its reason.
"""

from __future__ import annotations

import os

BACKEND = "hccl_go"
GATES_AS = os.environ.get("HCCL_GO_SUITE_GATES_AS", "") or BACKEND
os.environ["BACKEND"] = GATES_AS
os.environ.setdefault("WORLD_SIZE", "3")
# Some gates want file:// initialization (what every test uses: setUp points INIT_METHOD
# at a fresh file before it spawns the ranks, which read it when they import this).
os.environ.setdefault("INIT_METHOD", "file:///nonexistent/set-by-each-test")

import torch_hccl_go  # noqa: E402,F401  registers the backend in every spawned rank
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

# Before distributed_test is imported: its decorators read the tables then.
for feature in ("plugin", "ddp", "subgroup"):
    DistTestCases.backend_feature[feature].add(BACKEND)

from torch.testing._internal.distributed import distributed_test  # noqa: E402

# What the ranks run, whatever name the gates read.
distributed_test.BACKEND = BACKEND

# test name -> why it fails on hccl_go though the backend behaves as documented.
EXPECTED_FAILURES = {
    "test_ddp_logging_data_cpu": (
        "DDP logs ProcessGroup.getBackendName(), which torch answers with 'custom' for "
        "every third-party backend; the test expects dist.get_backend()'s 'hccl_go'"
    ),
}


class TestDistBackendWithSpawn(distributed_test.TestDistBackend, distributed_test.DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


# Tests whose body builds its model by the backend's name (the CPU model for "gloo" and
# "mpi", a GPU model for "nccl", none otherwise). Inside the ranks, which run hccl_go
# already, they run with the name reading "gloo": the CPU model, as for gloo.
CPU_MODEL_BY_NAME = [
    "test_accumulate_gradients_no_sync",
    "test_accumulate_gradients_no_sync_allreduce_hook",
    "test_accumulate_gradients_no_sync_allreduce_with_then_hook",
    "test_accumulate_gradients_no_sync_grad_is_view",
]


def _with_cpu_model(name: str):
    body = getattr(distributed_test.DistributedTest._DistTestBase, name)

    def test(self):
        distributed_test.BACKEND = "gloo"
        try:
            return body(self)
        finally:
            distributed_test.BACKEND = BACKEND

    test.__doc__ = body.__doc__
    return test


for _name in CPU_MODEL_BY_NAME:
    setattr(TestDistBackendWithSpawn, _name, _with_cpu_model(_name))
