"""Other libraries timed beside the torch backends (--peers), each in jobs of its own.

A peer says why it cannot run here (not installed, or none of the sweep's cases is one
it has), and gives its job's command and environment; the job writes the benchmark's
--json rows (results.py), so its figures go into the same tables.
"""

from __future__ import annotations

from typing import Protocol

from ..config import BenchConfig
from .deepspeed import DeepSpeedPeer
from .mpi import MpiPeer


class Peer(Protocol):
    name: str

    def skip_reason(self, cfg: BenchConfig) -> str | None:
        """Why it is left out of this run (printed, and the run goes on), or None."""

    def command(self, cfg: BenchConfig, json_path: str) -> list[str]:
        """The job: a command that launches the ranks and writes json_path."""

    def env(self, cfg: BenchConfig) -> dict[str, str]:
        """Variables the job needs beyond this process's environment."""


# In the order of config.PEER_NAMES, which lists them for --help and parsing.
PEERS: dict[str, Peer] = {peer.name: peer for peer in (DeepSpeedPeer(), MpiPeer())}
