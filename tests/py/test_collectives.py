"""Every collective x dtype x size x reduce op, at world sizes 2, 3 and 4.

One spawned job per world size runs the whole matrix (collective_matrix.py) and is
shared by the tests below, one test per (world size, collective, dtype), so a
failure names the exact case while processes start only three times.
"""

from __future__ import annotations

import pytest
import torch
from collective_matrix import COLLECTIVES, SIZES, config_matrix_job, matrix_job
from harness import BACKEND, RankFailure, run_ranks
from reference import ALL_DTYPES, backend_supports, dtype_name

WORLD_SIZES = (2, 3, 4)
MAX_SHOWN = 25

_reports: dict[int, object] = {}


def matrix_reports(world: int):
    """The per-rank reports of the matrix job for this world size (run once, then cached)."""
    if world not in _reports:
        try:
            sizes = SIZES if world < 4 else tuple(s for s in SIZES if s != "huge")
            _reports[world] = run_ranks(matrix_job, world, args=(COLLECTIVES, sizes), timeout=120 + 60 * world)
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


# --- the same checks over hccl_go's other transports and algorithms (a smaller matrix) ---

CONFIGS = {  # torch_hccl_go.Options fields
    "tcp": {"transport": "tcp"},
    "tcp_ring_4k_chunks": {"transport": "tcp", "algo": "ring", "chunk_bytes": 4096},
    "shm_messages": {"extra": {"shm_collectives": "0"}},
    "shm_messages_hd": {"algo": "hd", "extra": {"shm_collectives": "0"}},
    "shm_messages_rd": {"algo": "rd", "extra": {"shm_collectives": "0"}},
}
EXPECTED_TRANSPORT = {"tcp": "tcp", "tcp_ring_4k_chunks": "tcp"}  # the others: "shm"
CONFIG_WORLD = 3  # not a power of two: the awkward case for halving-doubling
CONFIG_DTYPES = (torch.float32, torch.bfloat16, torch.int8, torch.bool)
CONFIG_SIZES = (1, 7, 1000, "big")

_config_run: dict[str, object] = {}


def config_report(config: str):
    """The per-rank reports for one configuration; all configurations run in one job."""
    if "run" not in _config_run:
        args = (CONFIGS, COLLECTIVES, CONFIG_SIZES, CONFIG_DTYPES)
        try:
            per_rank = run_ranks(config_matrix_job, CONFIG_WORLD, args=args, timeout=360)
            _config_run["run"] = (dict(enumerate(per_rank)), None)
        except RankFailure as e:
            _config_run["run"] = (e.partial, e)
    per_rank, failure = _config_run["run"]
    if any(config not in per_rank.get(r, {}) for r in range(CONFIG_WORLD)):
        pytest.fail(f"the {config} matrix ({CONFIGS[config]}) did not finish:\n{failure}", pytrace=False)
    return [per_rank[r][config] for r in range(CONFIG_WORLD)]


@pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go transport and algorithm settings")
@pytest.mark.parametrize("coll", COLLECTIVES)
@pytest.mark.parametrize("config", list(CONFIGS))
def test_collective_config(config: str, coll: str) -> None:
    reports = config_report(config)
    failures = sorted(
        {msg for rep in reports for (c, _), msgs in rep.failures.items() if c == coll for msg in msgs}
    )
    assert sum(n for (c, _), n in reports[0].cases.items() if c == coll) > 0
    if failures:
        shown = "\n".join(failures[:MAX_SHOWN])
        pytest.fail(f"{len(failures)} failures for {coll} with {CONFIGS[config]}:\n{shown}", pytrace=False)


@pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go transport and algorithm settings")
@pytest.mark.parametrize("config", list(CONFIGS))
def test_config_took_effect(config: str) -> None:
    """The options reached the communicator: its transport and algorithm are the ones asked for."""
    info = config_report(config)[0].info
    print(f"{config}: {info}")
    assert EXPECTED_TRANSPORT.get(config, "shm") in info["transports"]
    if "algo" in CONFIGS[config]:
        assert info["algo_override"].get("allreduce") == CONFIGS[config]["algo"]
