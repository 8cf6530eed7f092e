#!/usr/bin/python3
"""Benchmark: a spine link fails in the middle of an allreduce on a dilated 400G fabric; what
the job loses, in the real fabric's microseconds, by how the fabric fails over. 16 ranks on 4
leaves x 4 hosts, 4 spines (scenarios/collisions.yaml's fabric), Gloo's ring allreduce of 8 MiB,
20 timed iterations at x2000; `leaf1:spine1` goes down 6 ms of the real fabric after the step
starts, while iterations run. fabemu-collective times every iteration on its slowest rank
(report.jsonl's `iteration_time_us`): the failover's cost is the slowest iteration less the
median one (the gap the job saw), and the step's mean against a run without the fault.

Modes:
  no-fault          kernel ECMP, nothing fails: the noise floor of slowest - median
  ecmp              kernel ECMP, the fault with `reroute: false` and no routing protocol:
                    flows hashed onto the dead link are blackholed until the step's timeout
  adaptive          fabemu's eBPF balancer, adaptive, `reroute: false`: leaf1 skips its dead
                    uplink at once, but the other leaves still send leaf1's traffic to spine1
                    (their choice is local), which has no way left to leaf1
  ecmp-reroute      kernel ECMP, `reroute: true`: every switch gets the converged routes at
                    once (an ideal control plane; what is left is the fault player's own time
                    and TCP's recovery)
  adaptive-reroute  the same with the adaptive balancer
  bgp-bfd           eBGP (FRR) with BFD every 1 ms x 3 (hardware BFD's class), kernel ECMP
  bgp-bfd-adaptive  the same with the adaptive balancer following the routers' FIBs

    sudo /usr/bin/python3 bench/failover.py [--runs 3] [--modes no-fault,bgp-bfd]
        [--time-scale 2000] [--bfd 1ms] [--timeout 40ms]"""
import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import median_known as med

REPO = Path(__file__).resolve().parent.parent
FABEMU = REPO / "build" / "emulator" / "fabemu"
FAULT_AT_MS = 6

# mode -> (routing and balancing in the fabric line, the fault's reroute; None: no fault)
MODES = {
    "no-fault": ("load_balance: ecmp", None),
    "ecmp": ("load_balance: ecmp", False),
    "adaptive": ("load_balance: adaptive", False),
    "ecmp-reroute": ("load_balance: ecmp", True),
    "adaptive-reroute": ("load_balance: adaptive", True),
    "bgp-bfd": ("load_balance: ecmp, routing: bgp, bfd: {{interval: {bfd}, multiplier: 3}}", True),
    "bgp-bfd-adaptive": ("load_balance: adaptive, routing: bgp, "
                         "bfd: {{interval: {bfd}, multiplier: 3}}", True),
}


def scenario(mode, args):
    fabric, reroute = MODES[mode]
    fabric = fabric.format(bfd=args.bfd)
    fault = "" if reroute is None else (
        f"faults:\n  - {{at: {FAULT_AT_MS}ms, link: \"leaf1:spine1\", down: true"
        + ("" if reroute else ", reroute: false") + "}\n")
    return f"""name: failover
seed: 42
time_scale: {args.time_scale}
topology: {{kind: leaf-spine, leaves: 4, spines: 4, hosts_per_leaf: 4}}
fabric: {{switch: router, ecmp_hash: l4, mtu: 4200, gso: 64K, {fabric}}}
hosts: {{tcp_rto_min: 1ms}}
links:
  default: {{rate: 400gbit, delay: 1us, queue: 2M, ecn_threshold: 400K}}
rdma: {{enabled: off}}
workload:
  - {{collective: allreduce, library: gloo, transport: tcp, sizes: [8M], iterations: 20,
     timeout: {args.timeout}}}
{fault}
"""


def one_run(mode, work, args):
    sc = work / f"{mode}.yaml"
    sc.write_text(scenario(mode, args))
    report = work / f"report-{mode}"
    shutil.rmtree(report, ignore_errors=True)
    p = subprocess.run([str(FABEMU), "run", str(sc), "--lab", "bfail", "--report", str(report),
                        "-q", "--accept-degraded"], capture_output=True, text=True, timeout=1800)
    records = [json.loads(line) for line in (report / "report.jsonl").read_text().splitlines()]
    step = next(r for r in records if r["type"] == "step")
    result = next((r for r in records if r["type"] == "result"), None)
    fault = next((r for r in records if r["type"] == "fault"), None)
    out = {"ok": step["ok"], "failure": step["failure"], "seconds": step["seconds"],
           "fib_first": fault and fault.get("fib_first_s"), "exit": p.returncode}
    if result:
        it = result["iteration_time_us"]
        median = statistics.median(it)
        worst = max(range(len(it)), key=lambda k: it[k])
        out.update(mean_us=result["time_us"], median_us=median, gap_us=it[worst] - median,
                   worst_iter=worst, wrong=result["wrong"], busbw=result["busbw_gbps"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--time-scale", default="2000")
    ap.add_argument("--bfd", default="1ms", help="BFD's interval (real fabric), x3 to detect")
    ap.add_argument("--timeout", default="40ms", help="the step's timeout (real fabric)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    for m in modes:
        if m not in MODES:
            sys.exit(f"failover.py: --modes: unknown mode {m!r}; known: {', '.join(MODES)}")
    # Not under /tmp: every host has a /tmp of its own.
    work = Path(tempfile.mkdtemp(prefix="fabemu-failover-", dir=REPO / "build"))
    print(f"allreduce 8 MiB x 20 iterations, 16 ranks, 4x4 leaf-spine with 4 spines, 400G at "
          f"x{args.time_scale}; leaf1:spine1 down at {FAULT_AT_MS} ms of the real fabric; BFD "
          f"{args.bfd} x 3; median of {args.runs} runs; times are the real fabric's")
    print(f"{'MODE':<17} {'DONE':>5} {'WRONG':>5} {'MEDIAN ITER':>11} {'GAP':>9} {'AT ITER':>7} "
          f"{'MEAN':>9} {'FIB FIRST':>9}  RUNS (gap us, or why the step failed)")
    us = lambda v: "-" if v is None else f"{v:.0f} us"
    try:
        for mode in modes:
            runs = [one_run(mode, work, args) for _ in range(args.runs)]
            done = sum(r["ok"] for r in runs)
            fib = med([r["fib_first"] for r in runs])
            print(f"{mode:<17} {done:>3}/{len(runs)} "
                  f"{sum(r.get('wrong', 0) for r in runs):>5} "
                  f"{us(med([r.get('median_us') for r in runs])):>11} "
                  f"{us(med([r.get('gap_us') for r in runs])):>9} "
                  f"{med([r.get('worst_iter') for r in runs]) if done else '-':>7} "
                  f"{us(med([r.get('mean_us') for r in runs])):>9} "
                  f"{us(fib * 1e6 if fib is not None else None):>9}  "
                  + " ".join(f"{r['gap_us']:.0f}" if r["ok"] and "gap_us" in r
                             else f"[{r['failure'][:40]}]" for r in runs))
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
