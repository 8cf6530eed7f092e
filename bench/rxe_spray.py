#!/usr/bin/python3
"""Benchmark (VM lane: a kernel with rdma_rxe): what spraying costs RoCE's reliable connections.
A Gloo allreduce over ibverbs (rxe RC QPs) on 2 leaves x 2 hosts with 2 spines, first under
static ECMP (the balancer's hash, per QP for life), then sprayed frame by frame, in one run (a
load_balance step between). spine1's link down to leaf2 is slower than the rest, so sprayed
frames reach leaf2 out of order. Per step: busbw (every element checked), the frames out of
order at their last hop (by PSN per destination QP: report.jsonl's order record), and the rxe
counters the hosts' devices moved over the step (NAKs for sequence errors, duplicate and
out-of-sequence requests, retries: the go-back-N that RC does when a packet is missing).
    scripts/vm-run -- /usr/bin/python3 bench/rxe_spray.py [--size 1M] [--iterations 5]"""
import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchlib import BenchError, run

REPO = Path(__file__).resolve().parent.parent


def scenario(size, iterations):
    step = (f"{{collective: allreduce, library: gloo, transport: ibverbs, sizes: [{size}], "
            f"iterations: {iterations}, timeout: 1200s}}")
    return ("name: rxs\nseed: 7\n"
            "topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\n"
            "fabric: {ecmp_hash: qp}\n"
            "links:\n  default: {rate: 1gbit, queue: 1M}\n"
            "  overrides: [{link: \"spine1>leaf2\", rate: 300mbit}]\n"
            "rdma: {enabled: on}\n"
            f"workload:\n  - {{load_balance: ecmp}}\n  - {step}\n"
            f"  - {{load_balance: spray}}\n  - {step}\n")


def rxe_at(samples, t):
    """Every host's rxe counters summed, from the first sample at or after t (real s)."""
    for s in samples:
        if s["t_s"] >= t:
            out = {}
            for counters in s.get("rxe", {}).values():
                for k, v in counters.items():
                    out[k] = out.get(k, 0) + v
            return out
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--size", default="1M")
    ap.add_argument("--iterations", type=int, default=5)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("rxe_spray: needs root (namespaces)")
    with tempfile.TemporaryDirectory(dir=REPO / "build") as tmp:
        sc = Path(tmp) / "rxs.yaml"
        sc.write_text(scenario(args.size, args.iterations))
        report = Path(tmp) / "report"
        p = run([args.fabemu, "run", str(sc), "--lab", "rxs", "-q", "--accept-degraded",
                 "--report", str(report)], timeout=3 * 3600, check=False)
        if not (report / "report.jsonl").exists():
            raise BenchError(f"fabemu run: exit {p.returncode}: {p.stderr[-1500:]}")
        recs = [json.loads(l) for l in (report / "report.jsonl").read_text().splitlines()]
    steps = {r["index"]: r for r in recs if r["type"] == "step"}
    samples = [r for r in recs if r["type"] == "sample"]
    order = {r["step"]: r for r in recs if r["type"] == "order"}
    results = {r["step"]: r for r in recs if r["type"] == "result"}
    print(f"# rxe RC allreduce of {args.size} x{args.iterations}, 4 hosts, 2 spines "
          f"(spine1>leaf2 at 300 Mbit/s); exit {p.returncode}")
    for i, mode in ((1, "ecmp (qp hash)"), (3, "spray")):
        s, o, r = steps.get(i), order.get(i), results.get(i)
        if not s:
            print(f"{mode}: step {i} missing")
            continue
        before, after = rxe_at(samples, s["start_s"]), rxe_at(samples, s["start_s"] + s["seconds"])
        moved = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
        busbw = (f"busbw {r['busbw_gbps'] * 8e3:.1f} Mbit/s, wrong {r['wrong']}, "
                 f"{s['seconds']:.1f} s" if r else "no result")
        ooo = (f"{o['reordered']} of {o['frames']} frames out of order" if o else "no order")
        print(f"{mode:>15}: {'ok' if s['ok'] else 'FAILED ' + s['failure']}, {busbw}; {ooo}; "
              f"rxe: {json.dumps(moved, sort_keys=True)}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"rxe_spray: {e}")
