import os, time, threading, statistics as st
import torch, torch.distributed as dist
import torch_hccl_go
dist.init_process_group(os.environ.get("BK", "hccl_go"))
rank = dist.get_rank()
t = torch.ones(6 << 20)  # 24 MiB
a = torch.randn(256, 256); b = torch.empty(256, 256)
def compute(ms):
    c = time.perf_counter()
    while time.perf_counter() - c < ms / 1e3: torch.mm(a, a, out=b)
def plain():
    dist.barrier(); c = time.perf_counter(); dist.all_reduce(t); return time.perf_counter() - c
def after_compute():
    dist.barrier(); compute(40); dist.barrier(); c = time.perf_counter(); dist.all_reduce(t); return time.perf_counter() - c
def skew():
    # each rank computes a different time; time from the last one's arrival (barrier-based stamp)
    dist.barrier(); c0 = time.perf_counter(); compute(30 + 5 * rank); arrive = time.perf_counter() - c0
    dist.all_reduce(t); done = time.perf_counter() - c0
    return done - (30 + 5 * (dist.get_world_size() - 1)) / 1e3
for f in (plain, after_compute, skew): f()
res = {f.__name__: [] for f in (plain, after_compute, skew)}
for r in range(5):
    for f in (plain, after_compute, skew):
        res[f.__name__].append(f() * 1e3)
if rank == 0:
    print(os.environ.get("BK", "hccl_go"), {k: f"{st.median(v):.1f} ms ({min(v):.1f}-{max(v):.1f})" for k, v in res.items()}, flush=True)
dist.destroy_process_group()
