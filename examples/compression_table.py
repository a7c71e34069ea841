"""Measure gradient compression on the digits example: bytes on the wire, time, accuracy.

Trains the digits MLP of train_digits.py (scikit-learn digits, DDP, 2 ranks on this
host, same seed, data order and epochs for every mode) once per mode:

    none       float32 all_reduce
    fp16, bf16 wire compression (torch_hccl_go.Options(compression=...))
    threshold  torch_hccl_go.hooks.threshold_hook (|g| > --threshold, error feedback)
    topk       torch_hccl_go.hooks.topk_hook (--ratio largest per bucket, error feedback)

and prints one Markdown table: payload bytes rank 0 sent per step (from
torch_hccl_go.stats), the median time of a step, and the test accuracy after the
last epoch. The ranks talk over TCP (HCCL_GO_TRANSPORT=tcp): with both ranks on
one host the shared-memory arena would otherwise carry the all_reduce, where
there are no messages to compress or count.

    python examples/compression_table.py [--epochs 20] [--modes none,fp16,bf16,threshold,topk]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

MODES = ["none", "fp16", "bf16", "threshold", "topk"]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--modes", default=",".join(MODES), help=f"comma-separated subset of {MODES}")
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threshold", type=float, default=1e-2, help="threshold_hook's |g| threshold")
    p.add_argument("--ratio", type=float, default=0.01, help="topk_hook's fraction of each bucket")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--json", help="also write the results to this file")
    return p.parse_args()


def mlp() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def load_data(seed: int):
    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    train, test = train_test_split(range(len(y)), test_size=0.2, random_state=seed, stratify=digits.target)
    return TensorDataset(x[train], y[train]), x[test], y[test]


def train(rank: int, world: int, mode: str, args: argparse.Namespace, store_dir: str, out: str) -> None:
    import torch_hccl_go
    from torch_hccl_go.hooks import ThresholdState, TopKState, threshold_hook, topk_hook
    from torch_hccl_go.stats import delta, stats

    torch.set_num_threads(1)
    compression = mode if mode in ("fp16", "bf16") else "none"
    dist.init_process_group(
        "hccl_go",
        store=dist.FileStore(os.path.join(store_dir, "store"), world),
        rank=rank,
        world_size=world,
        pg_options=torch_hccl_go.Options(compression=compression),
    )
    torch.manual_seed(args.seed)
    train_set, test_x, test_y = load_data(args.seed)
    model = DDP(mlp())
    state = None
    if mode == "threshold":
        state = ThresholdState(threshold=args.threshold)
        model.register_comm_hook(state, threshold_hook)
    elif mode == "topk":
        state = TopKState(ratio=args.ratio)
        model.register_comm_hook(state, topk_hook)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sampler = DistributedSampler(train_set, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(train_set, batch_size=args.batch_size, sampler=sampler)

    dist.barrier()
    before = stats()
    step_times, steps = [], 0
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y).backward()
            opt.step()
            step_times.append(time.perf_counter() - t0)
            steps += 1
    moved = delta(before, stats())  # counted before the evaluation's all_reduce

    model.eval()
    with torch.no_grad():
        correct = (model(test_x[rank::world]).argmax(1) == test_y[rank::world]).sum()
        counts = torch.stack([correct, torch.tensor(len(test_y[rank::world]))]).to(torch.int64)
    dist.all_reduce(counts)
    grad_ops = ("sparse_allreduce",) if state is not None else ("allreduce",)
    result = {
        "mode": mode,
        "steps": steps,
        "bytes_per_step": sum(moved["ops"].get(k, {}).get("bytes_sent", 0) for k in grad_ops) / steps,
        "step_ms": statistics.median(step_times) * 1e3,
        "accuracy": counts[0].item() / counts[1].item(),
        "density": state.density() if state is not None else 1.0,
        "params": sum(p.numel() for p in model.parameters()),
    }
    if rank == 0:
        with open(out, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()


def run_mode(mode: str, args: argparse.Namespace) -> dict:
    with tempfile.TemporaryDirectory(prefix="hccl_go_compression_") as d:
        out = os.path.join(d, "result.json")
        mp.spawn(train, args=(args.world, mode, args, d, out), nprocs=args.world)
        with open(out) as f:
            return json.load(f)


def table(results: list[dict], args: argparse.Namespace) -> str:
    base = next((r for r in results if r["mode"] == "none"), None)
    label = {
        "none": "none (float32)",
        "fp16": "fp16 wire",
        "bf16": "bf16 wire",
        "threshold": f"threshold {args.threshold:g} + EF",
        "topk": f"top-k {args.ratio * 100:g}% + EF",
    }
    lines = [
        "| mode | bytes sent/step (rank 0) | vs none | elements sent | time/step (median) | test accuracy |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        ratio = "-"
        if base and r is not base and r["bytes_per_step"]:
            ratio = f"{base['bytes_per_step'] / r['bytes_per_step']:.1f}x fewer"
        lines.append(
            f"| {label[r['mode']]} | {r['bytes_per_step']:,.0f} | {ratio} | {r['density'] * 100:.1f}% "
            f"| {r['step_ms']:.2f} ms | {r['accuracy'] * 100:.2f}% |"
        )
    r0 = results[0]
    lines.append(
        f"\n{args.world} ranks, {r0['steps']} steps ({args.epochs} epochs, batch {args.batch_size}/rank), "
        f"{r0['params']:,} parameters (one DDP bucket), HCCL_GO_TRANSPORT=tcp over loopback."
    )
    return "\n".join(lines)


def main() -> int:
    args = parse_args()
    os.environ.setdefault("HCCL_GO_TRANSPORT", "tcp")
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = set(modes) - set(MODES)
    if unknown:
        sys.exit(f"unknown modes {sorted(unknown)}: choose from {MODES}")
    results = []
    for mode in modes:
        print(f"training with {mode} ...", file=sys.stderr, flush=True)
        results.append(run_mode(mode, args))
    print(table(results, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
