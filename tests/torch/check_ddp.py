"""DistributedDataParallel over weft and over gloo: the same model, data and steps give the same
losses and parameters.

A 2-layer MLP in float64 trains for a few SGD steps on fixed random data (each rank its own
batch). Both runs start from the same seed. With 2 ranks a sum of two gradients is the same in
either order, so the runs must agree bit for bit; with more ranks the backends may add in different
orders, so they must agree to float64 rounding (relative 1e-12). Exits non-zero on a mismatch.
"""

import sys
from datetime import timedelta

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import weft.torch  # noqa: F401  (registers "weft")

STEPS = 6


def train(group, rank):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4)).double()
    # Each rank starts from different weights: DDP must broadcast rank 0's to the others.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(rank * 0.01)
    ddp = DDP(model, process_group=group, bucket_cap_mb=0.001)  # several buckets
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(8, 16, generator=g, dtype=torch.float64)
    y = torch.randn(8, 4, generator=g, dtype=torch.float64)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    return torch.stack(losses), [p.detach().clone() for p in model.parameters()]


def main():
    dist.init_process_group("weft", timeout=timedelta(seconds=120))
    rank, n = dist.get_rank(), dist.get_world_size()
    weft_group = dist.new_group(backend="weft")
    gloo_group = dist.new_group(backend="gloo")
    weft_losses, weft_params = train(weft_group, rank)
    gloo_losses, gloo_params = train(gloo_group, rank)
    exact = n == 2

    def same(a, b):
        return torch.equal(a, b) if exact else torch.allclose(a, b, rtol=1e-12, atol=1e-15)

    if not same(weft_losses, gloo_losses):
        print(f"rank {rank}: FAIL losses differ\nweft {weft_losses.tolist()}\ngloo {gloo_losses.tolist()}",
              file=sys.stderr)
        sys.exit(1)
    for i, (a, b) in enumerate(zip(weft_params, gloo_params)):
        if not same(a, b):
            print(f"rank {rank}: FAIL parameter {i} differs after {STEPS} steps", file=sys.stderr)
            sys.exit(1)
    # The parameters are the same on every rank (DDP kept the replicas in step).
    everyone = [torch.zeros_like(weft_params[0]) for _ in range(n)]
    dist.all_gather(everyone, weft_params[0])
    if not all(torch.equal(everyone[0], p) for p in everyone):
        print(f"rank {rank}: FAIL replicas differ", file=sys.stderr)
        sys.exit(1)
    if weft_losses[-1] >= weft_losses[0]:
        print(f"rank {rank}: FAIL the loss did not fall: {weft_losses.tolist()}", file=sys.stderr)
        sys.exit(1)
    print(f"rank {rank}/{n}: DDP over weft matches gloo ({'exactly' if exact else 'to 1e-12'}); losses "
          f"{weft_losses[0].item():.6f} -> {weft_losses[-1].item():.6f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
