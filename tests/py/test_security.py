"""The job secret: where it comes from, and that ranks which disagree about it
fail at init with an error that says so.

Every connection of a communicator proves the job secret (transport/tcp's
handshake); the connection-level checks (strangers, a wrong secret, garbage)
are in test_reliability.py. Here: HCCL_GO_JOB_SECRET keeps the secret out of
the rendezvous store, a launcher that sets it on some ranks only gets an error
on every rank, and ranks with different secrets fail init without waiting for
the connect timeout.
"""

from __future__ import annotations

import os
import time

import pytest
from harness import BACKEND, run_ranks

pytestmark = pytest.mark.skipif(BACKEND != "hccl_go", reason="hccl_go's job secret")

ENV_SECRET = "launcher-secret-7f3a9c"


def _store_after_init_job(ctx) -> dict:
    """Inits, runs one all_reduce, and returns what the rendezvous store's file holds."""
    import torch
    import torch.distributed as dist

    t = torch.ones(4)
    dist.all_reduce(t)
    assert torch.equal(t, torch.full((4,), float(ctx.world_size)))
    dist.barrier()
    with open(os.path.join(ctx.store_dir, "store1"), "rb") as f:  # harness: the first store
        data = f.read()
    return {"secret_key": b"/secret" in data, "env_secret_in_store": ENV_SECRET.encode() in data}


def test_secret_from_the_environment_never_enters_the_store():
    with_env = run_ranks(_store_after_init_job, 2, env={"HCCL_GO_JOB_SECRET": ENV_SECRET})
    assert with_env == [{"secret_key": False, "env_secret_in_store": False}] * 2
    # Without it, rank 0 hands a random secret out through the store: the check above sees it.
    os.environ.pop("HCCL_GO_JOB_SECRET", None)
    without = run_ranks(_store_after_init_job, 2)
    assert [r["secret_key"] for r in without] == [True, True]


def _init_with_secret_job(ctx, secrets: list[str | None]) -> dict:
    """Sets this rank's HCCL_GO_JOB_SECRET (None: unset), inits, and returns the
    error and how long init took."""
    secret = secrets[ctx.rank]
    if secret is None:
        os.environ.pop("HCCL_GO_JOB_SECRET", None)
    else:
        os.environ["HCCL_GO_JOB_SECRET"] = secret
    start = time.monotonic()
    try:
        ctx.init_process_group()
    except Exception as e:  # noqa: BLE001  (the error is the result)
        return {"error": str(e), "seconds": time.monotonic() - start}
    return {"error": None, "seconds": time.monotonic() - start}


def test_secret_set_on_some_ranks_only_fails_on_every_rank():
    results = run_ranks(_init_with_secret_job, 3, args=([ENV_SECRET, None, ENV_SECRET],), init=False, timeout=60)
    for rank, r in enumerate(results):
        assert r["error"] is not None, f"rank {rank} initialised"
        assert "HCCL_GO_JOB_SECRET is set on ranks [0, 2] but not on ranks [1]" in r["error"], (rank, r)


def test_different_secrets_fail_init_naming_the_secret():
    # The connect timeout is 120 s: a rank that merely waited for a peer that never proved
    # the secret would take that long. Bound: well under it, with room for a loaded machine.
    results = run_ranks(_init_with_secret_job, 2, args=(["secret-a", "secret-b"],), init=False, timeout=90)
    for rank, r in enumerate(results):
        assert r["error"] is not None, f"rank {rank} initialised"
        assert "the ranks were given different job secrets" in r["error"], (rank, r["error"])
        assert "set HCCL_GO_JOB_SECRET to the same value on every rank" in r["error"], (rank, r["error"])
        assert r["seconds"] < 30, (rank, r)


def test_info_never_shows_the_secret(monkeypatch):
    from torch_hccl_go import info

    monkeypatch.setenv("HCCL_GO_JOB_SECRET", ENV_SECRET)
    text = info.report()
    assert ENV_SECRET not in text
    assert "HCCL_GO_JOB_SECRET" in text and "(set, not shown)" in text
