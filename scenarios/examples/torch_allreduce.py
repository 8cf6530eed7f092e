#!/usr/bin/python3
"""All-reduce with torch.distributed (gloo backend) on every emulated host.

Run by `fabemu run scenarios/torch-allreduce.yaml`, or on a lab that is up:
    sudo fabemu exec LAB --all -- /usr/bin/python3 scenarios/examples/torch_allreduce.py
fabemu sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and GLOO_SOCKET_IFNAME for each host, so
the script needs no arguments. It checks the sum on every rank and exits 1 when it is wrong.
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist


def main() -> int:
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(seconds=120))
    rank, world = dist.get_rank(), dist.get_world_size()
    ok = True
    for numel in (1, 1 << 10, 1 << 20):
        t = torch.full((numel,), float(rank + 1))
        start = time.perf_counter()
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        seconds = time.perf_counter() - start
        expect = world * (world + 1) / 2
        wrong = int((t != expect).sum())
        ok &= wrong == 0
        if rank == 0 or wrong:
            print(f"rank {rank}/{world} host {os.environ.get('FABEMU_NODE', '?')}: all_reduce of "
                  f"{numel} floats = {t[0].item():g} (expect {expect:g}), {wrong} wrong, "
                  f"{seconds * 1e3:.1f} ms", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if rank == 0 and ok:
        print(f"torch.distributed all_reduce across {world} hosts: correct", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
