#!/usr/bin/python3
"""A small torch DistributedDataParallel job (gloo): every rank trains the same linear model on
its own shard of a synthetic regression for --steps steps (the same on every rank: DDP's
collectives must match), all-reducing the gradients each step; each rank checks that the loss
went down and that the replicas agree. Rank 0 writes the step it is on to --progress. Run by `fabemu exec LAB --all`, which sets RANK,
WORLD_SIZE, MASTER_ADDR and MASTER_PORT."""
import argparse
import datetime
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--progress", default="")
    args = p.parse_args()
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=60))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)
    true_w = torch.arange(64, dtype=torch.float32) / 64
    model = DistributedDataParallel(torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(args.steps):
        x = torch.randn(256, 64)
        y = x @ true_w.unsqueeze(1)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()  # DDP all-reduces the gradients here
        opt.step()
        losses.append(loss.item())
        if rank == 0 and args.progress:
            with open(args.progress, "w") as f:
                f.write(f"{step + 1}\n")
        time.sleep(0.02)
    # Every rank holds the same weights after the same steps.
    w = model.module.weight.detach().clone()
    dist.all_reduce(w)
    same = torch.allclose(w / world, model.module.weight.detach(), atol=1e-5)
    print(f"rank {rank}: {args.steps} steps, loss {losses[0]:.3f} -> {losses[-1]:.4f}, "
          f"replicas agree: {same}", flush=True)
    dist.destroy_process_group()
    return 0 if same and losses[-1] < losses[0] / 10 else 1


if __name__ == "__main__":
    sys.exit(main())
