"""Elements and bus-bandwidth factor of a case, as nccl-tests defines them.

`size` is the largest buffer of one rank; a split op (all_gather, reduce_scatter,
all_to_all) cuts it into one equal share per rank, so its element count is rounded down
to whole shares, at least one element per share. Bus bandwidth is algbw times a factor
that makes figures comparable across ops and world sizes (nccl-tests doc/PERFORMANCE.md).

Standard library only: the MPI peer's program (peers/mpi_program.py) loads this module
without torch.
"""

from __future__ import annotations


def element_count(size: int, itemsize: int, shares: int) -> int:
    """Elements of a size-byte buffer cut into `shares` equal shares (1: not split)."""
    return max(shares, size // itemsize // shares * shares)


def all_reduce_factor(n: int) -> float:
    return 2 * (n - 1) / n


def spread_factor(n: int) -> float:
    """all_gather, reduce_scatter, all_to_all: each rank moves all shares but its own."""
    return (n - 1) / n


def one(n: int) -> float:
    """broadcast and reduce."""
    return 1.0
