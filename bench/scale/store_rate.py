"""Requests per second a torch TCPStore serves: the rate the scale model's
--store-rate stands for (hccl_go's rendezvous reads every rank's key:
2N + 4 requests per rank, 2N^2 + 4N on the store).

    .venv/bin/python bench/scale/store_rate.py [--clients 8] [--gets 5000]

Starts a TCPStore server and CLIENTS processes that each set a key and then
get keys in a loop, as the rendezvous does; prints requests per second over
all clients and the mean round trip of one get.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import time
from datetime import timedelta


def client(port: int, rank: int, gets: int, clients: int, q) -> None:
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", port, clients + 1, False, timeout=timedelta(seconds=60))
    store.set(f"k{rank}", "127.0.0.1:12345")
    store.wait([f"k{r}" for r in range(clients)])
    start = time.perf_counter()
    for i in range(gets):
        store.get(f"k{i % clients}")
    q.put(time.perf_counter() - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--gets", type=int, default=5000)
    args = ap.parse_args()
    import torch.distributed as dist

    server = dist.TCPStore(
        "127.0.0.1", 0, args.clients + 1, True, timeout=timedelta(seconds=60), wait_for_workers=False
    )
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=client, args=(server.port, r, args.gets, args.clients, q)) for r in range(args.clients)]
    for p in procs:
        p.start()
    times = [q.get(timeout=300) for _ in procs]
    for p in procs:
        p.join()
    total = args.clients * args.gets
    print(
        f"{args.clients} clients x {args.gets} gets: {total / max(times):.0f} requests/s over all clients, "
        f"{1e6 * sum(times) / total:.0f} us per get per client"
    )


if __name__ == "__main__":
    main()
