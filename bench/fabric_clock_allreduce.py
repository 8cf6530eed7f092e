#!/usr/bin/python3
"""A user's program timing itself: torch.distributed's all_reduce (gloo) with time.perf_counter,
as fabemu-collective times Gloo's (a barrier, then each call; the mean over the iterations after
two warm-ups; the slowest rank's). Run in every host by bench/fabric_clock.py:
    fabemu exec LAB --all --clock fabric -- /usr/bin/python3 bench/fabric_clock_allreduce.py \
        SIZES_BYTES ITERATIONS
Rank 0 prints one JSON line per size: its own clock's time (the real fabric's, under
clock: fabric) and the wall clock's (os.times(), which libfaketime leaves alone)."""
import datetime
import json
import os
import socket
import sys
import time

import torch
import torch.distributed as dist


def wait_for_master():
    # torch's store client sleeps between connection attempts, and on the fabric's clock a
    # sleep lasts N times longer: try without sleeping until rank 0's store listens.
    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    while True:
        try:
            socket.create_connection((addr, port), timeout=None).close()
            return
        except ConnectionRefusedError:
            continue


def main():
    sizes = [int(s) for s in sys.argv[1].split(",")]
    iterations = int(sys.argv[2])
    if int(os.environ["RANK"]) != 0:
        wait_for_master()
    dist.init_process_group("gloo", init_method="env://", timeout=datetime.timedelta(hours=1))
    rank = dist.get_rank()
    for size in sizes:
        t = torch.ones(size // 4)
        seconds = wall = 0.0
        for it in range(2 + iterations):
            dist.barrier()
            w, start = os.times().elapsed, time.perf_counter()
            dist.all_reduce(t)
            if it >= 2:
                seconds += time.perf_counter() - start
                wall += os.times().elapsed - w
        mine = torch.tensor([seconds / iterations, wall / iterations], dtype=torch.float64)
        dist.all_reduce(mine, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(json.dumps({"size": size, "time_us": mine[0].item() * 1e6,
                              "wall_time_us": mine[1].item() * 1e6}), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
