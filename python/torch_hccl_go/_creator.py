"""Registration of the "hccl_go" backend with torch.distributed."""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist

from . import _C
from ._rendezvous import exchange
from .options import Options
from .streams import resolve_stream

BACKEND_NAME = "hccl_go"


def create_backend(dist_opts, pg_options) -> _C.HcclGoBackend:
    """The creator torch calls (extended API) on every member of a new group."""
    opts = Options() if pg_options is None else pg_options
    if not isinstance(opts, Options):
        raise TypeError(f"hccl_go: pg_options must be a torch_hccl_go.Options, got {type(pg_options).__name__}")
    group_timeout: timedelta = dist_opts.timeout
    timeout = opts.effective_timeout(group_timeout)
    options = opts.to_string(group_timeout)
    rank, size = dist_opts.group_rank, dist_opts.group_size
    # A subgroup's errors then name its members' global ranks too.
    global_ranks = list(getattr(dist_opts, "global_ranks_in_group", None) or [])
    if len(global_ranks) == size and global_ranks != list(range(size)):
        options += ";global_ranks=" + ",".join(str(r) for r in global_ranks)
    stream = resolve_stream(opts.stream)  # checked before the rendezvous
    peers = exchange(dist_opts.store, rank, size, opts.listen_addr or "")
    backend = _C.HcclGoBackend(
        rank,
        size,
        peers.listener,
        peers.addrs,
        peers.host_ids,
        peers.secret,
        options,
        int(timeout.total_seconds() * 1000),
    )
    backend.stream = stream
    return backend


def register() -> None:
    """Registers "hccl_go" for CPU tensors; a second call does nothing."""
    if getattr(dist.Backend, BACKEND_NAME.upper(), None) == BACKEND_NAME:
        return
    dist.Backend.register_backend(BACKEND_NAME, create_backend, extended_api=True, devices=["cpu"])
