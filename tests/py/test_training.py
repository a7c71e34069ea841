"""DDP and FSDP on the backend under test, at world size 2 (training_checks.py).

One spawned job trains every DDP variant (20 steps, on the backend under test and
on gloo), another every FSDP variant (5 steps); each test reports one variant,
also when a later variant hangs the job.
"""

from __future__ import annotations

import pytest
from harness import assert_check_passed
from training_checks import DDP_VARIANTS, FSDP_VARIANTS, ddp_job, fsdp_job

WORLD = 2


@pytest.mark.parametrize("variant", [v.name for v in DDP_VARIANTS])
def test_ddp(variant: str) -> None:
    assert_check_passed(ddp_job, WORLD, variant, timeout=180)


@pytest.mark.parametrize("variant", list(FSDP_VARIANTS))
def test_fsdp(variant: str) -> None:
    assert_check_passed(fsdp_job, WORLD, variant, timeout=180)
