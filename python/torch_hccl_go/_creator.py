"""Registration of the "hccl_go" backend with torch.distributed."""

from __future__ import annotations

import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

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
    torch_recorder = _choose_flight_recorder()
    stream = resolve_stream(opts.stream)  # checked before the rendezvous
    parent = _split_parent(global_ranks, size, opts)
    if parent is not None:
        # The default group's ranks are the global ranks: the members agree
        # over its links (no store round); a group named alike on every member.
        backend = _C.HcclGoBackend.split_from(
            parent, rank, global_ranks, str(dist_opts.group_id), options, int(timeout.total_seconds() * 1000)
        )
        backend.stream = stream
        backend.sync_returns_none = not torch_recorder
        return backend
    peers = exchange(dist_opts.store, rank, size, options)
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
    # torch's flight-recorder hook is handed every Work; without it, a
    # synchronous collective (async_op=False) returns None: see
    # HcclGoBackend::syncReturnsNone.
    backend.sync_returns_none = not torch_recorder
    return backend


# Options that concern a group's own links: a group that sets one connects its own.
_LINK_OPTIONS = ("transport", "socket_ifname", "listen_addr", "streams_per_peer")


def _split_parent(global_ranks: list[int], size: int, opts: Options):
    """The backend a new group is split from: the default group's, when it is a live hccl_go
    backend of this process, the group is a subgroup (global ranks known) and the split
    setting (HCCL_GO_SPLIT_GROUPS, Options(split_groups=...)) is not off. A split maps
    shared-memory arenas of its own over the parent's links: on one host for its whole ops,
    across hosts for the arena phases of the hierarchical algorithms (the parent's topology,
    cut down to the members). None: connect the group anew."""
    mode = _split_mode(opts)
    if len(global_ranks) != size or size < 1 or mode == "off" or _wants_own_links(opts):
        return None
    if not c10d.is_initialized():
        return None
    try:
        parent = c10d._get_default_group()._get_backend(torch.device("cpu"))
    except (RuntimeError, ValueError):
        return None
    if not isinstance(parent, _C.HcclGoBackend) or not parent.is_open:
        return None
    return parent


def _wants_own_links(opts: Options) -> bool:
    return any(getattr(opts, k) is not None or k in opts.extra for k in _LINK_OPTIONS)


def _split_mode(opts: Options) -> str:
    """ "on" or "off": Options(split_groups=...) (or its extra key), else
    HCCL_GO_SPLIT_GROUPS (default on; `auto` is on)."""
    if opts.split_groups is not None:
        return "on" if opts.split_groups else "off"
    value = str(opts.extra.get("split_groups", os.environ.get("HCCL_GO_SPLIT_GROUPS", "1"))).strip().lower()
    return "off" if value in ("0", "false", "off", "no") else "on"


def register() -> None:
    """Registers "hccl_go" for CPU tensors; a second call does nothing."""
    if getattr(dist.Backend, BACKEND_NAME.upper(), None) == BACKEND_NAME:
        return
    dist.Backend.register_backend(BACKEND_NAME, create_backend, extended_api=True, devices=["cpu"])


def _choose_flight_recorder() -> bool:
    """Tells torch whether to hook its own flight recorder onto the group being made.

    hccl_go keeps a flight recorder of its own (HCCL_GO_TRACE_SIZE; dumped on failure, read by
    `python -m torch_hccl_go.trace`), so by default it is listed with the backends that record
    themselves, as gloo is, and torch attaches no hook. Torch's hook would record every op a
    second time, Python traceback included: about 3 µs per op, a third of a small all_reduce.
    HCCL_GO_TORCH_FLIGHT_RECORDER=1 attaches it anyway, for torch's own dump tools. torch
    reads the set right after this creator returns, so the choice is made per group.
    Returns whether torch will attach its hook.
    """
    self_recording = getattr(c10d, "_FR_SELF_RECORDING_BACKENDS", None)
    if not isinstance(self_recording, set):
        return False  # a torch without the hook
    if os.environ.get("HCCL_GO_TORCH_FLIGHT_RECORDER", "0") == "1":
        self_recording.discard(BACKEND_NAME)
        return True
    self_recording.add(BACKEND_NAME)
    return False
