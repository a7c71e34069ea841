import os, time, torch, torch.distributed as dist, statistics
import torch_hccl_go
dist.init_process_group("gloo")
g = dist.new_group(backend="hccl_go")
r = dist.get_rank(); torch.set_num_threads(1)
if os.environ.get("PIN") == "1": os.sched_setaffinity(0, {r})
small = torch.zeros(2); big = torch.ones(262144)
SYNC = os.environ.get("SYNC", "gloo")
def sync():
    if SYNC == "gloo": dist.barrier()
    else: dist.barrier(group=g)
def rep(pre, n=40):
    ts = []
    for _ in range(n):
        sync(); pre()
        a = time.perf_counter(); dist.all_reduce(big, group=g); b = time.perf_counter()
        ts.append((a, b))
    return ts
res = {}
for name, pre in [("warm", lambda: [dist.all_reduce(big, group=g) for _ in range(5)]),
                  ("8B x50", lambda: [dist.all_reduce(small, group=g) for _ in range(50)]),
                  ("idle 1ms", lambda: time.sleep(0.001))]:
    ts = rep(pre)
    every = [None, None]; dist.all_gather_object(every, ts)
    op = [max(e[i][1] for e in every) - max(e[i][0] for e in every) for i in range(len(ts))]
    own = [b - a for a, b in ts]
    res[name] = (round(statistics.median(op) * 1e6, 1), round(statistics.median(own) * 1e6, 1))
if r == 0: print(SYNC, res)
dist.destroy_process_group()
