"""Every collective x dtype x size x reduce op, at world sizes 2, 3 and 4.

One spawned job per world size runs the whole matrix (collective_matrix.py) and is
shared by the tests below, one test per (world size, collective, dtype), so a
failure names the exact case while processes start only three times.
"""

from __future__ import annotations

import pytest
import torch

from collective_matrix import COLLECTIVES, matrix_job
from harness import BACKEND, RankFailure, run_ranks
from reference import ALL_DTYPES, backend_supports, dtype_name

WORLD_SIZES = (2, 3, 4)
MAX_SHOWN = 25

_reports: dict[int, object] = {}


def matrix_reports(world: int):
    """The per-rank reports of the matrix job for this world size (run once, then cached)."""
    if world not in _reports:
        try:
            _reports[world] = run_ranks(matrix_job, world, timeout=120 + 60 * world)
        except RankFailure as e:
            _reports[world] = e
    result = _reports[world]
    if isinstance(result, RankFailure):
        pytest.fail(f"the world-{world} matrix job failed:\n{result}", pytrace=False)
    return result


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=dtype_name)
@pytest.mark.parametrize("coll", COLLECTIVES)
@pytest.mark.parametrize("world", WORLD_SIZES, ids=lambda w: f"w{w}")
def test_collective(world: int, coll: str, dtype: torch.dtype) -> None:
    if not backend_supports(BACKEND, dtype):
        pytest.skip(f"{BACKEND} does not support {dtype_name(dtype)}")
    reports = matrix_reports(world)
    key = (coll, dtype_name(dtype))
    assert reports[0].cases.get(key, 0) > 0, f"no cases ran for {key}"
    failures = sorted({msg for rep in reports for msg in rep.failures.get(key, [])})
    if failures:
        shown = "\n".join(failures[:MAX_SHOWN])
        more = f"\n... and {len(failures) - MAX_SHOWN} more" if len(failures) > MAX_SHOWN else ""
        pytest.fail(f"{len(failures)} failures for {coll} {dtype_name(dtype)} at world {world}:\n{shown}{more}",
                    pytrace=False)


@pytest.mark.parametrize("world", WORLD_SIZES, ids=lambda w: f"w{w}")
def test_matrix_compared_with_gloo(world: int) -> None:
    """Guards the comparison itself: most cases must have been checked against gloo too."""
    rep = matrix_reports(world)[0]
    cases, compared = sum(rep.cases.values()), sum(rep.gloo_compared.values())
    print(f"world {world}: {cases} cases in {rep.seconds:.1f} s, {compared} compared with gloo")
    assert compared >= 0.6 * cases
