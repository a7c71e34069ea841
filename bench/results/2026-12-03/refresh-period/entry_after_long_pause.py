import os, time, torch, torch.distributed as dist, statistics, json
import torch_hccl_go, torch_hccl_go.trace
dist.init_process_group("hccl_go")
G = dist.new_group(backend="gloo")
r = dist.get_rank(); torch.set_num_threads(1)
big = torch.ones(262144)
AR = torch_hccl_go.all_reduce if os.environ.get("BK") == "direct" else dist.all_reduce
def busy(s):
    t = time.perf_counter()
    while time.perf_counter() - t < s: pass
seq = 0
def ar():
    global seq
    AR(big); seq += 1
marks = {}
for name, pre in [("b2b", ar), ("spin3ms", lambda: busy(3e-3)), ("sleep10ms", lambda: time.sleep(0.01)), ("spin10ms", lambda: busy(0.01))]:
    marks[name] = []
    for _ in range(40):
        dist.barrier(group=G); ar(); pre()
        a = time.time_ns(); ar(); b = time.time_ns()
        marks[name].append((seq, a, b))
        ar()
path = torch_hccl_go.trace.dump_trace()
ops = {o["seq"]: o for o in json.load(open(path))["ops"]}
out = {}
for name, ms in marks.items():
    rows = [(ops[s]["started_ns"] - a, ops[s]["ended_ns"] - ops[s]["started_ns"], b - ops[s]["ended_ns"], a, b, ops[s]["started_ns"], ops[s]["ended_ns"]) for s, a, b in ms if s in ops]
    out[name] = rows
every = [None, None]; dist.all_gather_object(every, out)
if r == 0:
    for name in marks:
        rs0, rs1 = every[0][name], every[1][name]
        med = lambda xs: round(statistics.median(xs) / 1e3, 1)
        print(name, "entry", med([x[0] for x in rs0]), med([x[0] for x in rs1]),
              "run", med([x[1] for x in rs0]), med([x[1] for x in rs1]),
              "exit", med([x[2] for x in rs0]), med([x[2] for x in rs1]),
              "start skew", med([abs(x[5] - y[5]) for x, y in zip(rs0, rs1)]),
              "call skew", med([abs(x[3] - y[3]) for x, y in zip(rs0, rs1)]), flush=True)
dist.destroy_process_group()
