#!/usr/bin/python3
"""Benchmark: how a fabric's load balancing spreads an AI job's few big flows. 16 ranks on a
400 Gbit/s leaf-spine of 4 leaves x 4 hosts with 4 spines (MTU 4200, 2 MB queues, ECN from
400 KB, TCP's GSO super-frames), time dilated (auto unless --time-scale); per mode and
collective: busbw beside the link model's (which assumes perfect spreading), every element
checked, and how evenly the leaves' ECMP groups carried the bytes (report.jsonl's ecmp_group
records: the worst group's busiest member over the mean, and Jain's index). Median of --runs.
    sudo /usr/bin/python3 bench/load_balance.py [--modes ecmp,ecmp-l3] [--runs 3]
Modes: ecmp (5-tuple hash, `ecmp_hash: l4`), ecmp-l3 (addresses only), ecmp-qp4 (ecmp with 4
connections per peer: `qps_per_peer: 4`), one-pipe (one spine with links of 4 x the rate:
nothing to spread, the emulation's own cost alone), and fabemu's eBPF balancer
(`fabric.load_balance`): flowlet (gap 50us), spray (round robin per frame), adaptive (least
backlog per frame), adaptive-fl (least backlog per flowlet of 50us), ecmp-ebpf (the balancer's
own static hash). Under the balancer's modes, also the frames that reached their last hop out of
order and the hosts' TCP retransmissions and reorderings detected (report.jsonl's order
record; last run). See README.md."""
import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchlib import BenchError, median, run

REPO = Path(__file__).resolve().parent.parent
# mode -> the scenario's fabric keys for it
MODES = {
    "ecmp": "ecmp_hash: l4",
    "ecmp-l3": "ecmp_hash: l3",
    # Meta's QP scaling: 4 connections per peer, each a quarter of the buffer (qps_per_peer).
    "ecmp-qp4": "ecmp_hash: l4",
    # No choice to make: one spine whose links carry what the four did (1600 Gbit/s). What is
    # left between it and the model is the emulation's own cost, not the spreading's.
    "one-pipe": "ecmp_hash: l4",
    # fabemu's eBPF balancer at the switches' ingress (fabric.load_balance).
    "flowlet": "load_balance: {flowlet: {gap: 50us}}",
    "spray": "load_balance: spray",
    "adaptive": "load_balance: adaptive",
    "adaptive-fl": "load_balance: {adaptive: {granularity: flowlet, gap: 50us}}",
    # Static hashing in the balancer (a load_balance step puts it on every switch; in the
    # fabric, `ecmp` is the kernel's): ECMP's spread with the balancer's order and TCP counters.
    "ecmp-ebpf": "ecmp_hash: l4",
}


def scenario(mode, collective, size, time_scale, seed):
    one = mode == "one-pipe"
    return (f"name: lb\nseed: {seed}\ntime_scale: {time_scale}\n"
            f"topology: {{kind: leaf-spine, leaves: 4, spines: {1 if one else 4}, "
            "hosts_per_leaf: 4}\n"
            f"fabric: {{mtu: 4200, gso: 64K, {MODES[mode]}}}\n"
            "hosts: {tcp_rto_min: 1ms}\n"
            "links:\n  default: {rate: 400gbit, queue: 2M, ecn_threshold: 400K}\n" +
            ("  leaf-spine: {rate: 1600gbit, queue: 8M, ecn_threshold: 1600K}\n" if one else "") +
            "rdma: {enabled: off}\n"
            f"workload: [{'{load_balance: ecmp}, ' if mode == 'ecmp-ebpf' else ''}{{collective: {collective}, library: gloo, transport: tcp, "
            f"sizes: [{size}], iterations: 3, timeout: 1800s"
            f"{', qps_per_peer: 4' if mode == 'ecmp-qp4' else ''}}}]\n")


def one_run(args, tmp, mode, collective, size, k):
    """(busbw, model, factor, wall s, worst group's max/mean, its Jain, its members' MB, the
    step's order record or None)."""
    path = Path(tmp) / f"lb-{mode}-{collective}-{k}.yaml"
    # A new seed each run: the switches' hash seeds, hence the collisions, differ run to run.
    path.write_text(scenario(mode, collective, size, args.time_scale, 100 + k))
    report = Path(tmp) / f"{path.stem}-report"
    p = run([args.fabemu, "run", str(path), "--lab", f"lb{os.getpid() % 10000}", "-q",
             "--accept-degraded", "--report", str(report)], timeout=4 * 3600, check=False)
    if p.returncode not in (0, 1) or not (report / "report.jsonl").exists():
        raise BenchError(f"fabemu run {path.name}: exit {p.returncode}: {p.stderr[-800:]}")
    busbw = model = factor = wall = float("nan")
    groups = []
    order = None
    for line in (report / "report.jsonl").read_text().splitlines():
        j = json.loads(line)
        if j["type"] == "run":
            factor = j["time_scale"]
        elif j["type"] == "result":
            if j["wrong"]:
                raise BenchError(f"{path.name}: {j['wrong']} wrong elements")
            busbw, model = j["busbw_gbps"], j["pred_busbw_gbps"] or float("nan")
        elif j["type"] == "step":
            wall = j["wall_seconds"]
            if not j["ok"]:
                raise BenchError(f"{path.name}: {j['failure']}")
        elif j["type"] == "order":
            order = j
        elif j["type"] == "ecmp_group" and j["switch"].startswith("leaf"):
            groups.append(j)
    if not groups:  # one-pipe: no group
        return busbw, model, factor, wall, float("nan"), float("nan"), [], order
    worst = max(groups, key=lambda g: g["max_over_mean"])
    return (busbw, model, factor, wall, worst["max_over_mean"], worst["jain"],
            [m["bytes"] / 1e6 for m in worst["members"]], order)


def order_text(o):
    """Frames out of order, TCP segments retransmitted, reorderings TCP detected."""
    if not o:
        return "-"
    pct = lambda a, b: 100.0 * a / b if b else 0.0
    t = o["tcp"]
    return (f"{pct(o['reordered'], o['frames']):.2f}% ooo, {pct(t['retrans_segs'], t['out_segs']):.2f}% "
            f"rtx, {t['reorder_seen']} reord")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--modes", default="ecmp,flowlet,spray,adaptive,adaptive-fl,one-pipe")
    ap.add_argument("--collectives", default="alltoall,allreduce")
    ap.add_argument("--size", default="8M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--time-scale", default="auto")
    args = ap.parse_args()
    modes = args.modes.split(",")
    for m in modes:
        if m not in MODES:
            sys.exit(f"load_balance: --modes: {m!r} is not a mode fabemu has "
                     f"(it has: {', '.join(MODES)})")
    if os.geteuid() != 0:
        sys.exit("load_balance: needs root (namespaces)")
    print(f"# load balancing, 16 ranks, 4 leaves x 4 hosts, 4 spines, 400 Gbit/s, "
          f"{args.size}, median of {args.runs} runs; groups: the leaves' (worst of 4)")
    print(f"{'mode':>11} {'collective':>10} {'N':>6} {'busbw GB/s':>11} {'min..max':>13} "
          f"{'model':>6} {'ratio':>6} {'max/mean':>9} {'Jain':>6} {'wall s':>7}  "
          "worst group's members (MB, last run); order (last run)")
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            for collective in args.collectives.split(","):
                got = [one_run(args, tmp, mode, collective, args.size, k)
                       for k in range(args.runs)]
                busbw = [g[0] for g in got]
                print(f"{mode:>11} {collective:>10} {got[0][2]:6g} {median(busbw):11.2f} "
                      f"{min(busbw):6.2f}..{max(busbw):<6.2f} {got[0][1]:6.2f} "
                      f"{median(busbw) / got[0][1]:6.3f} {median(g[4] for g in got):9.2f} "
                      f"{median(g[5] for g in got):6.3f} {median(g[3] for g in got):7.1f}  "
                      + " ".join(f"{mb:.1f}" for mb in got[-1][6]) + "; " + order_text(got[-1][7]))
                sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"load_balance: {e}")
