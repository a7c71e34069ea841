"""The topology simulator: the library's cost model over a synthetic cluster
(or a topology file), through the C ABI (hcclGoTopoSimulate).

    python -m torch_hccl_go.topo simulate --hosts 1024 --ranks-per-host 8 \\
        --size 1GiB --inter-bw 200Gbit --intra-bw 100GB

prints the predicted time, algbw and busbw of every algorithm and the one
the library would choose. From Python: ``simulate(hosts=1024,
ranks_per_host=8, size="1GiB", inter_bw="200Gbit", intra_bw="100GB")``
returns the same as a dict (see include/hccl_go.h).

    python -m torch_hccl_go.topo scale --hosts 2048 --ranks-per-host 8

prints what one rank costs at init on that cluster (time, TCP sockets,
descriptors, memory) and what dominates (hcclGoTopoScale; ``scale(...)``
returns it as a dict). `hccl-go-topo check` compares both models with the
runs of scripts/scale.sh.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import sys

# The flags of `hccl-go-topo simulate` (topo/sim_args.go), with their help.
# Defaults live in the library; a flag left out takes the library's.
FLAGS = {
    "op": "collective: allreduce, allgather, reducescatter, broadcast (default allreduce)",
    "size": "bytes of the whole buffer: B, KiB, MiB, GiB, KB, MB, GB (default 1GiB)",
    "hosts": "hosts of the synthetic cluster (default 2)",
    "ranks-per-host": "ranks on each host (default 8)",
    "inter-bw": "each host's NIC to other hosts, per direction: Gbit, GB, GiB, ... per second (default 200Gbit)",
    "intra-bw": "a link between two ranks of one host (default 100GB)",
    "inter-lat": "latency between hosts, a Go duration (default 5us)",
    "intra-lat": "latency inside a host (default 1us)",
    "reduce-bw": "bytes per second a rank reduces; 0: free (default 0)",
    "copy-bw": "bytes per second a rank copies locally; 0: free (default 0)",
    "chunk": "pipelining chunk of the chain broadcast (default 256KiB)",
    "topo-file": "a topology file (HCCL_GO_TOPO_DUMP_FILE format) instead of the synthetic cluster",
    "hier": "hierarchical algorithms: arena (intra-host phases in shared memory at copy-bw/reduce-bw, "
    "as the library runs them across hosts) or messages (over the intra-host links) (default arena)",
    "compression": "wire format of all_reduce: none, fp16 or bf16 (half the bytes on the ring's every hop and "
    "the hierarchy's inter-host phase) (default none)",
    "codec-bw": "bytes of float32 per second a rank encodes to or decodes from the wire format; 0: free (default 0)",
}

# The flags of `hccl-go-topo scale` (topo/scale_args.go).
SCALE_FLAGS = {
    "hosts": "hosts (default 2048)",
    "ranks-per-host": "ranks on each host (default 8)",
    "streams-per-peer": "TCP connections per peer, HCCL_GO_STREAMS_PER_PEER (default 1)",
    "streams": "collective streams, an arena each, HCCL_GO_STREAMS (default 2)",
    "shm-collectives": "arenas among the ranks of a host, true or false (default true)",
    "inter-lat": "one-way latency between hosts (default 5us)",
    "intra-lat": "one-way latency inside a host (default 1us)",
    "store-rate": "requests per second the rendezvous store serves (through torch); 0: no store (default 0)",
    "store-rtt": "one store request's round trip (default 100us)",
    "fd-limit": "soft RLIMIT_NOFILE to check descriptors against (default 1048576)",
    "somaxconn": "listen backlog, net.core.somaxconn (default 4096)",
    "conn-cpu": "CPU per TCP connection end at init (default: calibrated on this machine)",
    "conn-bytes": "private bytes per TCP connection after init (default: calibrated on this machine)",
    "lazy-links": "when TCP links are made, HCCL_GO_LAZY_LINKS: 0 at init, 1 on first use, auto (default)",
}

_lib_handle = None


def _lib() -> ctypes.CDLL:
    global _lib_handle
    if _lib_handle is None:
        from . import library_path

        path = library_path()
        lib = ctypes.CDLL(path)  # already loaded by the extension: the same Go runtime
        if not hasattr(lib, "hcclGoTopoSimulate"):
            raise RuntimeError(
                f"{path} predates hcclGoTopoSimulate: rebuild it (pip install --no-build-isolation -e .)"
            )
        for name in ("hcclGoTopoSimulate", "hcclGoTopoScale"):
            if hasattr(lib, name):
                getattr(lib, name).argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
                getattr(lib, name).restype = ctypes.c_int
        lib.hcclGoGetLastError.argtypes = [ctypes.c_uint64, ctypes.c_char_p, ctypes.c_size_t]
        lib.hcclGoGetLastError.restype = ctypes.c_int
        _lib_handle = lib
    return _lib_handle


def _last_error(lib: ctypes.CDLL) -> str:
    buf = ctypes.create_string_buffer(4096)
    lib.hcclGoGetLastError(0, buf, len(buf))
    return buf.value.decode(errors="replace")


def simulate(**args) -> dict:
    """Runs the simulator. Keyword names are the flags with _ for -
    (hosts, ranks_per_host, size, inter_bw, intra_bw, inter_lat, intra_lat,
    op, reduce_bw, copy_bw, chunk, topo_file, hier, compression, codec_bw); values are numbers or
    strings in the flags' units. Raises ValueError for bad arguments."""
    return _call("hcclGoTopoSimulate", args)


def scale(**args) -> dict:
    """Runs the scale model. Keyword names are the scale flags with _ for -
    (hosts, ranks_per_host, streams_per_peer, streams, shm_collectives,
    inter_lat, intra_lat, store_rate, store_rtt, fd_limit, somaxconn,
    conn_cpu, conn_bytes, lazy_links). Returns sockets, fds, the memory figures in
    bytes, init_seconds, init_terms, init_dominant, memory_dominant,
    warnings and table. Raises ValueError for bad arguments."""
    return _call("hcclGoTopoScale", args)


def _call(name: str, args: dict) -> dict:
    lib = _lib()
    if not hasattr(lib, name):
        path = getattr(lib, "_name", "libhccl_go.so")
        raise RuntimeError(f"{path} predates {name}: rebuild it (pip install --no-build-isolation -e .)")
    request = json.dumps({k: v for k, v in args.items() if v is not None}).encode()
    size = 1 << 16
    while True:
        out = ctypes.create_string_buffer(size)
        if getattr(lib, name)(request, out, size) == 0:
            return json.loads(out.value)
        msg = _last_error(lib)
        need = re.search(r"need (\d+) bytes", msg)
        if need and int(need.group(1)) > size:
            size = int(need.group(1))
            continue
        raise ValueError(msg)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torch_hccl_go.topo", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="predict every algorithm of one collective on a cluster")
    for name, doc in FLAGS.items():
        sim.add_argument("--" + name, dest=name.replace("-", "_"), help=doc)
    sim.add_argument("--json", action="store_true", help="print the whole result as JSON")
    sc = sub.add_parser("scale", help="init time, sockets, descriptors and memory per rank of a cluster")
    for name, doc in SCALE_FLAGS.items():
        sc.add_argument("--" + name, dest=name.replace("-", "_"), help=doc)
    sc.add_argument("--json", action="store_true", help="print the whole result as JSON")
    ns = parser.parse_args(argv)
    args = {k: v for k, v in vars(ns).items() if k not in ("command", "json") and v is not None}
    try:
        result = simulate(**args) if ns.command == "simulate" else scale(**args)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if ns.json:
        print(json.dumps(result, indent=1))
    else:
        print(result["table"], end="" if result["table"].endswith("\n") else "\n")
        if ns.command == "simulate":
            print(f"(model evaluated in {result['elapsed_s'] * 1e3:.0f} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
