"""How a rank issues each case's op on each backend it times.

A torch.distributed backend (hccl_go, gloo, ...) gets a process group of its own over all
ranks; the default group stays the control group (barriers, agreeing on figures).
"deepspeed" calls DeepSpeed's inference_all_reduce instead (peers/deepspeed.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol

import torch
import torch.distributed as dist

from .data import Buffers
from .ops import Case


class Backend(Protocol):
    name: str

    def unsupported(self, case: Case) -> str | None:
        """Why this backend cannot run case (the same on every rank), or None."""

    def run(self, case: Case, buffers: Buffers) -> object:
        """Issues the op and waits for it."""

    def barrier(self) -> None:
        """Frames a timed batch."""

    def small_all_reduce(self, tensor: torch.Tensor) -> object:
        """A sum all_reduce of a small float32 tensor, in place (--history)."""

    def info(self) -> dict:
        """What the backend reports about itself, for the report's header."""


class TorchBackend:
    def __init__(self, name: str, timeout: float):
        if name == "hccl_go":
            import torch_hccl_go  # noqa: F401  (registers the backend)
        self.name = name
        self.group = dist.new_group(backend=name, timeout=timedelta(seconds=timeout))

    def unsupported(self, case: Case) -> str | None:
        return None  # the backend itself says so, by refusing the call

    def run(self, case: Case, buffers: Buffers) -> object:
        return case.spec.run(case, self.group, buffers.input, buffers.output)

    def barrier(self) -> None:
        dist.barrier(group=self.group)

    def small_all_reduce(self, tensor: torch.Tensor) -> object:
        return dist.all_reduce(tensor, group=self.group)

    def info(self) -> dict:
        if self.name == "hccl_go":
            import torch_hccl_go

            return torch_hccl_go.comm_info(self.group)
        return {}


def make_backends(names: tuple[str, ...], timeout: float, world: int) -> dict[str, Backend]:
    """Every backend of the sweep, created in the same order on every rank (creating one is
    a collective)."""
    backends: dict[str, Backend] = {}
    for name in names:
        if name == "deepspeed":
            from .peers.deepspeed import DeepSpeedBackend

            backends[name] = DeepSpeedBackend(timeout, world)
        else:
            backends[name] = TorchBackend(name, timeout)
    return backends
