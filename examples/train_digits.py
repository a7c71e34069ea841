"""Train a small classifier with DistributedDataParallel on scikit-learn's digits.

The digits data set (1797 8x8 images of handwritten digits) ships with
scikit-learn, so nothing is downloaded. Every rank loads it, the training set is
sharded across ranks with a DistributedSampler, and gradients are averaged by
the chosen process-group backend (hccl_go by default).

Run on one host with two processes:

    torchrun --nproc_per_node=2 examples/train_digits.py [--backend gloo] [--model cnn]

Rank 0 prints the loss and test accuracy of each epoch, the median time of a
training step, the total time, and a one-line summary at the end.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="hccl_go", help="process-group backend (default: hccl_go)")
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="samples per rank per step")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads per rank (default 1: one rank per core)",
    )
    return p.parse_args()


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class TinyCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(32 * 4 * 4, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 8x8 -> 4x4
        return self.fc(x.flatten(1))


@dataclass
class Data:
    train: TensorDataset
    test_x: torch.Tensor
    test_y: torch.Tensor


def load_data(seed: int) -> Data:
    """The digits, scaled to [0, 1], as (N, 1, 8, 8) images; 20% held out for testing."""
    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    train_idx, test_idx = train_test_split(
        range(len(y)), test_size=0.2, random_state=seed, stratify=digits.target
    )
    return Data(TensorDataset(x[train_idx], y[train_idx]), x[test_idx], y[test_idx])


def evaluate(model: nn.Module, data: Data, rank: int, world: int) -> float:
    """Accuracy on the test set; each rank scores every world-th sample, then the counts are summed."""
    model.eval()
    with torch.no_grad():
        x, y = data.test_x[rank::world], data.test_y[rank::world]
        correct = (model(x).argmax(1) == y).sum()
        counts = torch.stack([correct, torch.tensor(len(y))]).to(torch.int64)
    dist.all_reduce(counts)
    model.train()
    return counts[0].item() / counts[1].item()


def params_in_sync(model: nn.Module, world: int) -> bool:
    """True when every rank holds bitwise the same parameters (compares a checksum of their bytes)."""
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    checksum = flat.view(torch.int32).to(torch.int64).sum().reshape(1)
    sums = [torch.zeros_like(checksum) for _ in range(world)]
    dist.all_gather(sums, checksum)
    return all(torch.equal(s, sums[0]) for s in sums)


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    if args.backend == "hccl_go":
        import torch_hccl_go  # noqa: F401  (registers the backend)

    dist.init_process_group(backend=args.backend)  # env:// from torchrun
    rank, world = dist.get_rank(), dist.get_world_size()

    def say(msg: str) -> None:
        if rank == 0:
            print(msg, flush=True)

    torch.manual_seed(args.seed)
    data = load_data(args.seed)
    model = DDP(MLP() if args.model == "mlp" else TinyCNN())
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    sampler = DistributedSampler(data.train, num_replicas=world, rank=rank, shuffle=True, seed=args.seed)
    loader = DataLoader(data.train, batch_size=args.batch_size, sampler=sampler)

    say(
        f"training {args.model} on digits: backend={args.backend} world={world} "
        f"train={len(data.train)} test={len(data.test_y)} batch/rank={args.batch_size} "
        f"threads/rank={args.threads}"
    )
    step_times: list[float] = []
    dist.barrier()
    start = time.perf_counter()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        epoch_steps: list[float] = []
        loss_sum = torch.zeros(2, dtype=torch.float64)  # (sum of losses, number of samples)
        for x, y in loader:
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(x), y)
            loss.backward()  # DDP all-reduces the gradients here
            opt.step()
            epoch_steps.append(time.perf_counter() - t0)
            loss_sum += torch.tensor([loss.item() * len(y), len(y)], dtype=torch.float64)
        dist.all_reduce(loss_sum)
        acc = evaluate(model, data, rank, world)
        step_times += epoch_steps
        say(
            f"epoch {epoch + 1:3d}/{args.epochs}  loss {loss_sum[0].item() / loss_sum[1].item():.4f}  "
            f"test acc {acc * 100:6.2f}%  step median {statistics.median(epoch_steps) * 1e3:.2f} ms"
        )
    total = time.perf_counter() - start
    final_loss = loss_sum[0].item() / loss_sum[1].item()
    in_sync = params_in_sync(model, world)
    say(
        f"summary: backend={args.backend} world={world} model={args.model} epochs={args.epochs} "
        f"steps={len(step_times)} final_loss={final_loss:.4f} test_acc={acc * 100:.2f}% "
        f"step_median_ms={statistics.median(step_times) * 1e3:.3f} total_s={total:.2f} "
        f"params_in_sync={'yes' if in_sync else 'NO'}"
    )
    dist.destroy_process_group()
    if not in_sync:
        raise SystemExit(f"rank {rank}: parameters differ across ranks")


if __name__ == "__main__":
    main()
