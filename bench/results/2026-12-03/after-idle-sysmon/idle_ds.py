import os, time, json, statistics
import torch, torch.distributed as dist
os.environ.setdefault("LOCAL_SIZE", os.environ.get("WORLD_SIZE", "2"))
import deepspeed, deepspeed.comm as dcomm
deepspeed.init_distributed(dist_backend="gloo")
ctl = dist.new_group(backend="gloo")
rank = dist.get_rank()
n = int(os.environ.get("N", 1 << 18)); idle = float(os.environ.get("IDLE", "0.01")); reps = int(os.environ.get("REPS", 40))
t = torch.ones(n)
for _ in range(50): dcomm.inference_all_reduce(t)
rows = []
for i in range(reps):
    dist.barrier(group=ctl)
    time.sleep(idle)
    c = time.time_ns()/1e9; dcomm.inference_all_reduce(t); r = time.time_ns()/1e9
    dcomm.inference_all_reduce(t)
    rows.append((c, r))
json.dump(rows, open(f"/tmp/exp/rowsds{rank}.json", "w"))
dist.barrier(group=ctl)
if rank == 0:
    r0 = json.load(open("/tmp/exp/rowsds0.json")); r1 = json.load(open("/tmp/exp/rowsds1.json"))
    op = [max(a[1], b[1]) - max(a[0], b[0]) for a, b in zip(r0, r1)]
    print("DS op us median", statistics.median(op)*1e6, "p25", sorted(op)[len(op)//4]*1e6)
