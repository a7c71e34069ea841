"""Library streams of an hccl_go process group.

Collectives run on the communicator's streams (HCCL_GO_STREAMS, default 2):
ops of one stream run in order, ops of different streams may overlap, and
stream 1 has high priority (see the README). A process group issues its
collectives on one stream, chosen when it is created:

    dist.new_group(ranks, backend="hccl_go", pg_options=torch_hccl_go.Options(stream="high"))

(or HCCL_GO_STREAM=high), or changed later:

    torch_hccl_go.set_stream("high", group)
    with torch_hccl_go.use_stream("high", group):
        dist.all_reduce(t, group=group)

Collectives must still be issued in the same order on every rank, whatever
their streams. Point-to-point ops have queues of their own.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import torch.distributed as dist

from .comm import get_backend

# Names of the C API's streams (HCCL_GO_STREAM_DEFAULT, HCCL_GO_STREAM_HIGH_PRIORITY).
STREAMS = {"default": 0, "high": 1}

StreamLike = str | int


def resolve_stream(stream: StreamLike | None) -> int:
    """The stream index of "default", "high", an index, or None (HCCL_GO_STREAM, else default)."""
    if stream is None:
        stream = os.environ.get("HCCL_GO_STREAM", "") or "default"
    if isinstance(stream, str):
        name = stream.strip().lower()
        if name in STREAMS:
            return STREAMS[name]
        if not name.isdigit():
            raise ValueError(f"hccl_go: stream {stream!r}: want 'default', 'high' or a stream index")
        stream = int(name)
    if isinstance(stream, bool) or not isinstance(stream, int) or stream < 0:
        raise ValueError(f"hccl_go: stream {stream!r}: want 'default', 'high' or a stream index >= 0")
    return stream


def get_stream(group: dist.ProcessGroup | None = None) -> int:
    """The stream the group's collectives are issued on."""
    return get_backend(group).stream


def set_stream(stream: StreamLike, group: dist.ProcessGroup | None = None) -> None:
    """Issues the group's later collectives on stream (see resolve_stream)."""
    get_backend(group).stream = resolve_stream(stream)


@contextlib.contextmanager
def use_stream(stream: StreamLike, group: dist.ProcessGroup | None = None) -> Iterator[None]:
    """Issues the group's collectives on stream inside the block. The
    setting belongs to the group, not the thread: do not issue on the same
    group from other threads meanwhile."""
    backend = get_backend(group)
    previous = backend.stream
    backend.stream = resolve_stream(stream)
    try:
        yield
    finally:
        backend.stream = previous
