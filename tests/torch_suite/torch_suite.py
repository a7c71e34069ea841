"""PyTorch's own distributed conformance suite, run against hccl_go.

torch ships its backend tests in the wheel
(torch/testing/_internal/distributed/distributed_test.py, class
DistributedTest._DistTestBase). This module binds them to hccl_go the way torch's
test_distributed_spawn.py binds them to gloo: every test spawns WORLD_SIZE processes that
call init_process_group(backend=BACKEND, init_method="file://...").

hccl_go is entered in the suite's feature tables (DistTestCases) for what it implements:
"plugin" (a third-party backend that is available), "ddp" and "subgroup". Tests that the
suite gates on a backend's name (gloo's timeouts, gloo's sparse all_reduce) skip with
the suite's own reason.

Run it with scripts/torch_suite.sh, which sets BACKEND and WORLD_SIZE before this
module is imported (the suite reads them at import time).
"""

from __future__ import annotations

import os

os.environ.setdefault("BACKEND", "hccl_go")
os.environ.setdefault("WORLD_SIZE", "3")

import torch_hccl_go  # noqa: E402,F401  registers the backend in every spawned rank
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)

BACKEND = os.environ["BACKEND"]
if BACKEND not in ("gloo", "nccl", "mpi", "ucc"):
    for feature in ("plugin", "ddp", "subgroup"):
        DistTestCases.backend_feature[feature].add(BACKEND)


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()
