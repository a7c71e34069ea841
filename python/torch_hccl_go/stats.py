"""Traffic counters of hccl_go communicators, so compression is measured, not computed.

    from torch_hccl_go.stats import stats, delta
    before = stats()                       # the default group
    ...                                    # training steps
    moved = delta(before, stats())         # what those steps put on the wire

stats(group) returns hcclGoCommStats of the group's communicator:

    {"rank": 0, "size": 2, "compression": "fp16",
     "bytes_sent": ..., "bytes_recv": ...,            # all ops together
     "ops": {"allreduce": {"calls", "bytes_sent", "bytes_recv", "msgs_sent", "msgs_recv",
                           "arena_ns", "arena_wait_ns", "inter_ns"},
             "sparse_allreduce": {...}, "broadcast": {...}, "p2p": {...}, ...},
     "placement_moves": ...}

placement_moves counts how often this rank moved its thread off a CPU where a
rank of its host was waiting for it (docs/performance.md, Placement).

Bytes are message payloads between distinct ranks since the communicator was
created. A communicator whose ranks all share one host runs its collectives in a
shared-memory arena, which sends no messages and counts none: run with
HCCL_GO_TRANSPORT=tcp (or across hosts) to see wire bytes. Across hosts,
arena_ns and inter_ns (present once non-zero) are the time the hierarchical
all_reduce, all_gather and reduce_scatter spent in their arena phases and in
their inter-host exchange; arena_wait_ns is the part of arena_ns spent waiting
for the host's other ranks, the rest being this rank's own copies and
reductions (bench/hier_phases.py reads them).
"""

from __future__ import annotations

import json

import torch.distributed as dist

from ._compress_capi import comm_stats_json


def stats(group: dist.ProcessGroup | None = None) -> dict:
    """The traffic counters of group's communicator (default: the world), as a dict."""
    from .comm import get_backend

    return json.loads(comm_stats_json(get_backend(group).comm_handle))


def delta(before: dict, after: dict) -> dict:
    """after - before for every counter (op kinds absent from before count from 0)."""
    ops = {}
    for kind, counters in after["ops"].items():
        old = before["ops"].get(kind, {})
        ops[kind] = {k: v - old.get(k, 0) for k, v in counters.items()}
    return {
        **after,
        "bytes_sent": after["bytes_sent"] - before["bytes_sent"],
        "bytes_recv": after["bytes_recv"] - before["bytes_recv"],
        "placement_moves": after.get("placement_moves", 0) - before.get("placement_moves", 0),
        "ops": ops,
    }
