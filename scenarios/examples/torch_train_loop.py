#!/usr/bin/python3
"""A data-parallel training loop's communication, as a fault meets it: torch.distributed (gloo
backend) all-reduces a gradient-sized tensor every step, checks the sum, and says which step it
was on and how long each took, so that a stall (a partition, a frozen host) shows as a slow step
and a crash as the step that failed and why.

Run by `fabemu run scenarios/host-faults.yaml`, or on a lab that is up:
    sudo fabemu exec LAB --all -- /usr/bin/python3 scenarios/examples/torch_train_loop.py
Arguments: --steps N (default 60), --numel N (floats per all_reduce, default 256K),
--timeout S (gloo's, default 30 s: how long a rank waits for a dead peer).
"""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--numel", type=int, default=1 << 18)
    p.add_argument("--timeout", type=float, default=30)
    args = p.parse_args()
    start = time.monotonic()
    dist.init_process_group("gloo", init_method="env://",
                            timeout=datetime.timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    host = os.environ.get("FABEMU_NODE", "?")
    if rank == 0:
        print(f"process group of {world} ranks up in {time.monotonic() - start:.1f} s", flush=True)
    slowest = (0.0, -1)
    for step in range(args.steps):
        t = torch.full((args.numel,), float(rank + 1))
        t0 = time.monotonic()
        try:
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
        except Exception as e:  # a peer died, or the timeout passed
            print(f"rank {rank} ({host}): step {step} failed after "
                  f"{time.monotonic() - t0:.1f} s, {time.monotonic() - start:.1f} s into the "
                  f"job: {str(e).splitlines()[0]}", flush=True)
            return 1
        took = time.monotonic() - t0
        slowest = max(slowest, (took, step))
        if int((t != world * (world + 1) / 2).sum()):
            print(f"rank {rank} ({host}): step {step}: wrong sum", flush=True)
            return 1
        if rank == 0 and (step % 10 == 0 or took > 0.5):
            print(f"step {step}: all_reduce {took * 1e3:.0f} ms at "
                  f"{time.monotonic() - start:.1f} s", flush=True)
        time.sleep(0.05)  # the step's compute
    if rank == 0:
        print(f"{args.steps} steps on {world} ranks, slowest step {slowest[1]} "
              f"({slowest[0] * 1e3:.0f} ms)", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
