"""DDP and FSDP training on one rank of a spawned job, compared with gloo and a local reference.

Every rank draws its batches from a seed of (step, rank), so each rank can also
train a plain single-process model on the global batch (all ranks' batches
together). With mean losses and equal batch sizes, averaging gradients across
ranks equals the gradient of the global batch, so DDP and FSDP must end with the
reference's parameters (within float tolerance). DDP runs once on the backend under
test and once on a gloo group, from the same start; the two must agree closely,
and every rank must hold bitwise the same parameters.
"""

from __future__ import annotations

import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from harness import COLLECTIVE_TIMEOUT
from reference import digest

BATCH = 8  # samples per rank per step
VARIANT_SECONDS = 60  # a variant trains in a few seconds; more means it hung
CLASSES = 4


# --- models and data ---


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, CLASSES))


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x.view(-1, 1, 8, 8)))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))


class WithUnusedBranch(nn.Module):
    """A branch that forward never uses: DDP needs find_unused_parameters=True for it."""

    def __init__(self) -> None:
        super().__init__()
        self.body = mlp()
        self.unused = nn.Linear(16, CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def batch(step: int, rank: int, micro: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * step + 10 * rank + micro)
    x = torch.randn(BATCH, 16, generator=g)
    y = torch.randint(0, CLASSES, (BATCH,), generator=g)
    return x, y


def image_batch(step: int, rank: int, micro: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1000 * step + 10 * rank + micro + 7)
    return torch.randn(BATCH, 64, generator=g), torch.randint(0, CLASSES, (BATCH,), generator=g)


def global_batch(data: Callable, step: int, world: int, micro: int = 0):
    parts = [data(step, r, micro) for r in range(world)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def new_model(factory: Callable) -> nn.Module:
    torch.manual_seed(0)  # the same start on every rank and in the reference
    return factory()


def optimizer(params) -> torch.optim.Optimizer:
    return torch.optim.SGD(params, lr=0.05, momentum=0.9)


def train_reference(factory: Callable, data: Callable, steps: int, world: int, micro_steps: int = 1):
    """Single-process training on the global batch of every step."""
    model = new_model(factory)
    opt = optimizer(model.parameters())
    for step in range(steps):
        opt.zero_grad()
        for micro in range(micro_steps):
            x, y = global_batch(data, step, world, micro)
            F.cross_entropy(model(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


# --- DDP ---


@dataclass
class DDPVariant:
    name: str
    factory: Callable = mlp
    data: Callable = batch
    kwargs: dict = field(default_factory=dict)
    hook: str = ""  # "", "fp16", "powersgd"
    micro_steps: int = 1  # >1: accumulate under no_sync(), then one synchronised step
    ref_tol: float | None = 1e-4  # relative tolerance vs the single-process reference (None: lossy, skip)
    gloo_tol: float = 1e-5


DDP_VARIANTS = [
    DDPVariant("mlp"),
    DDPVariant("cnn", factory=SmallCNN, data=image_batch),
    DDPVariant("gradient_as_bucket_view", kwargs={"gradient_as_bucket_view": True}),
    DDPVariant("many_small_buckets", factory=SmallCNN, data=image_batch, kwargs={"bucket_cap_mb": 0.001}),
    DDPVariant("find_unused_parameters", factory=WithUnusedBranch, kwargs={"find_unused_parameters": True}),
    DDPVariant("no_sync_accumulation", micro_steps=3),
    DDPVariant("fp16_compress_hook", hook="fp16", ref_tol=2e-2, gloo_tol=1e-3),
    DDPVariant("powersgd_hook", hook="powersgd", ref_tol=None, gloo_tol=1e-3),
]
DDP_STEPS = 20


def train_ddp(v: DDPVariant, group, steps: int, rank: int):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = new_model(v.factory)
    ddp = DDP(model, process_group=group, **v.kwargs)
    if v.hook == "fp16":
        ddp.register_comm_hook(group, default_hooks.fp16_compress_hook)
    elif v.hook == "powersgd":
        state = powerSGD_hook.PowerSGDState(
            process_group=group, matrix_approximation_rank=1, start_powerSGD_iter=3, random_seed=0
        )
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    opt = optimizer(ddp.parameters())
    for step in range(steps):
        opt.zero_grad()
        for micro in range(v.micro_steps - 1):
            with ddp.no_sync():
                x, y = v.data(step, rank, micro)
                F.cross_entropy(ddp(x), y).backward()
        x, y = v.data(step, rank, v.micro_steps - 1)
        F.cross_entropy(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def compare_params(got, expected, rtol: float, what: str) -> None:
    assert len(got) == len(expected), f"{what}: {len(got)} parameters, expected {len(expected)}"
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        if not torch.allclose(g, e, rtol=rtol, atol=rtol * 0.1):
            diff = (g - e).abs().max().item()
            raise AssertionError(
                f"{what}: parameter {i} {tuple(g.shape)} differs by up to {diff:.3g} (rtol {rtol})"
            )


def same_on_all_ranks(params, gloo, world: int, what: str) -> None:
    h = digest(torch.cat([p.reshape(-1) for p in params]))
    everyone: list = [None] * world
    dist.all_gather_object(everyone, h, group=gloo)
    assert len(set(everyone)) == 1, f"{what}: parameters differ bitwise across ranks: {everyone}"


def ddp_job(ctx, names: list[str] | None = None, steps: int = DDP_STEPS) -> dict[str, object]:
    """{variant name: ("ok", None) or ("failed", traceback)}."""
    gloo = dist.new_group(backend="gloo", timeout=COLLECTIVE_TIMEOUT)
    results: dict[str, object] = {}
    for v in DDP_VARIANTS:
        if names and v.name not in names:
            continue
        ctx.progress(f"ddp {v.name}")
        try:
            with ctx.watchdog(v.name, VARIANT_SECONDS):
                got = train_ddp(v, None, steps, ctx.rank)
                ctx.progress(f"ddp {v.name} on gloo")
                on_gloo = train_ddp(v, gloo, steps, ctx.rank)
            same_on_all_ranks(got, gloo, ctx.world_size, f"{v.name} on {ctx.backend}")
            compare_params(got, on_gloo, v.gloo_tol, f"{v.name}: {ctx.backend} vs gloo")
            if v.ref_tol is not None:
                ref = train_reference(v.factory, v.data, steps, ctx.world_size, v.micro_steps)
                compare_params(got, ref, v.ref_tol, f"{v.name}: {ctx.backend} vs single-process reference")
            if v.name == "find_unused_parameters":
                untouched = new_model(v.factory).unused.weight
                assert torch.equal(got[-2], untouched), "the unused branch changed"
            results[v.name] = ("ok", None)
        except Exception:  # noqa: BLE001
            results[v.name] = ("failed", traceback.format_exc())
        ctx.record(v.name, results[v.name])
    return results


# --- FSDP ---


FSDP_STEPS = 5


def _linear_policy():
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy

    return ModuleWrapPolicy({nn.Linear})


def train_fsdp1(strategy: str, steps: int, rank: int):
    from torch.distributed.fsdp import FullStateDictConfig, ShardingStrategy, StateDictType
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    model = FSDP(
        new_model(mlp),
        auto_wrap_policy=_linear_policy(),
        sharding_strategy=getattr(ShardingStrategy, strategy),
        device_id=torch.device("cpu"),
        use_orig_params=True,
    )
    opt = optimizer(model.parameters())
    for step in range(steps):
        opt.zero_grad()
        x, y = batch(step, rank)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    cfg = FullStateDictConfig(offload_to_cpu=False, rank0_only=False)
    with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, cfg):
        state = model.state_dict()
    return [state[k].detach().clone() for k in state]


def train_fsdp2(steps: int, rank: int, world: int, reshard_after_forward: bool):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cpu", (world,))
    model = new_model(mlp)
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh, reshard_after_forward=reshard_after_forward)
    fully_shard(model, mesh=mesh, reshard_after_forward=reshard_after_forward)
    opt = optimizer(model.parameters())
    for step in range(steps):
        opt.zero_grad()
        x, y = batch(step, rank)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return [p.full_tensor().detach().clone() for p in model.parameters()]


FSDP_VARIANTS: dict[str, Callable] = {
    "fsdp1_full_shard": lambda ctx, s: train_fsdp1("FULL_SHARD", s, ctx.rank),
    "fsdp1_shard_grad_op": lambda ctx, s: train_fsdp1("SHARD_GRAD_OP", s, ctx.rank),
    "fsdp1_no_shard": lambda ctx, s: train_fsdp1("NO_SHARD", s, ctx.rank),
    "fully_shard": lambda ctx, s: train_fsdp2(s, ctx.rank, ctx.world_size, True),
    "fully_shard_no_reshard": lambda ctx, s: train_fsdp2(s, ctx.rank, ctx.world_size, False),
}


def fsdp_job(ctx, steps: int = FSDP_STEPS) -> dict[str, object]:
    """{variant name: ("ok", None) or ("failed", traceback)}; each vs a single-process reference."""
    warnings.filterwarnings("ignore", category=FutureWarning)  # FSDP1's deprecation notices
    warnings.filterwarnings("ignore", message=".*NO_SHARD.*")
    gloo = dist.new_group(backend="gloo", timeout=COLLECTIVE_TIMEOUT)
    ref = train_reference(mlp, batch, steps, ctx.world_size)
    results: dict[str, object] = {}
    for name, train in FSDP_VARIANTS.items():
        ctx.progress(name)
        try:
            with ctx.watchdog(name, VARIANT_SECONDS):
                got = train(ctx, steps)
            same_on_all_ranks(got, gloo, ctx.world_size, f"{name} on {ctx.backend}")
            compare_params(got, ref, 1e-4, f"{name}: {ctx.backend} vs single-process reference")
            results[name] = ("ok", None)
        except Exception:  # noqa: BLE001
            results[name] = ("failed", traceback.format_exc())
        ctx.record(name, results[name])
    return results
