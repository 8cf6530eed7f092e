#!/usr/bin/python3
"""Benchmark: a fat-tree (k=4 by default: 16 hosts, 20 switches) with router switches and with Open
vSwitch bridges (userspace datapath, and the kernel datapath where the kernel has it): bring-up
and teardown time, and iperf3 TCP throughput across the core, one flow and 8 at once. See
README.md.
  sudo /usr/bin/python3 bench/ovs_fabric.py [--k 4] [--runs 3] [--seconds 5]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import BenchError, fabemu_json, median, run

REPO = Path(__file__).resolve().parent.parent


def core_pairs(k):
    """8 host pairs of a k-ary fat-tree, each from the first pod to the last: across the core."""
    hosts = k ** 3 // 4
    return [(f"h{i}", f"h{hosts + 1 - i}") for i in range(1, 9)]


def scenario(tmp, switches, datapath, k):
    fabric = f"switch: {switches}, ecmp_hash: l4, mtu: 1500"
    if datapath:
        fabric += f", ovs_datapath: {datapath}"
    path = Path(tmp) / f"{switches}-{datapath or 'router'}.yaml"
    # Unshaped links: what is measured is the switch, not the link model.
    path.write_text(f"name: bench\nseed: 1\ntopology: {{kind: fat-tree, k: {k}}}\n"
                    f"fabric: {{{fabric}}}\nrdma: {{enabled: off}}\n")
    return path


def iperf(fabemu, lab, pairs, seconds):
    """Bits per second received per pair, all pairs at once (one TCP flow each)."""
    servers = []
    try:
        for i, (_, dst) in enumerate(pairs):
            servers.append(subprocess.Popen(
                [fabemu, "exec", f"{lab}:{dst}", "--", "iperf3", "-s", "-1", "-p",
                 str(5201 + i)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL))
        time.sleep(1.0)
        clients = [subprocess.Popen(
            [fabemu, "exec", f"{lab}:{src}", "--", "iperf3", "-c", dst, "-p", str(5201 + i),
             "-t", str(seconds), "-J"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True) for i, (src, dst) in enumerate(pairs)]
        rates = []
        for c, (src, dst) in zip(clients, pairs):
            out, err = c.communicate(timeout=seconds + 60)
            if c.returncode != 0:
                raise BenchError(f"iperf3 {src} -> {dst}: exit {c.returncode}\n{out[-2000:]}{err}")
            rates.append(json.loads(out)["end"]["sum_received"]["bits_per_second"])
        return rates
    finally:
        for s in servers:
            s.kill()
            s.wait()


def measure(fabemu, path, label, runs, seconds, pairs):
    ups, downs, one, eight = [], [], [], []
    datapath = "-"
    for r in range(runs):
        lab = f"ob{os.getpid() % 10000}{r}"
        t0 = time.perf_counter()
        up = fabemu_json([fabemu, "up", str(path), "--lab", lab, "-q"], timeout=600)
        ups.append(time.perf_counter() - t0)
        try:
            if up.get("hosts", 0) < 16:
                raise BenchError(f"unexpected output of up --json:\n{json.dumps(up)}")
            status = fabemu_json([fabemu, "status", lab], timeout=120)
            sw = status.get("switches", {})
            datapath = sw.get("datapath", sw.get("kind", "?"))
            one.append(iperf(fabemu, lab, pairs[:1], seconds)[0])
            eight.append(sum(iperf(fabemu, lab, pairs, seconds)))
        finally:
            t0 = time.perf_counter()
            run([fabemu, "down", lab], timeout=120)
            downs.append(time.perf_counter() - t0)
        print(f"  {label} run {r + 1}: up {ups[-1]:.2f} s, 1 flow {one[-1] / 1e9:.3f} Gbit/s, "
              f"8 flows {eight[-1] / 1e9:.3f} Gbit/s", file=sys.stderr)
    med = median
    return {"label": label, "datapath": datapath, "runs": runs, "up_s": ups, "down_s": downs,
            "one_flow_bps": one, "eight_flows_bps": eight, "up_median_s": med(ups),
            "down_median_s": med(downs), "one_flow_median_bps": med(one),
            "eight_flows_median_bps": med(eight)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=4, choices=[4, 6, 8], help="the fat-tree's k")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5, help="iperf3 duration")
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--json", help="write the records as JSON lines here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("ovs_fabric: needs root (sudo)")
    doctor = fabemu_json([args.fabemu, "doctor"], timeout=120)
    features = {f["id"]: f["status"] for f in doctor["features"]}
    configs = [("router", "router", None), ("ovs userspace", "ovs", "userspace")]
    if features.get("ovs_kernel") == "yes":
        configs.append(("ovs kernel", "ovs", "kernel"))
    else:
        print("ovs_fabric: no OVS kernel datapath on this kernel: measured in the VM lane "
              "(scripts/vm-run -- /usr/bin/python3 bench/ovs_fabric.py)", file=sys.stderr)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, switches, datapath in configs:
            results.append(measure(args.fabemu, scenario(tmp, switches, datapath, args.k), label,
                                   args.runs, args.seconds, core_pairs(args.k)))
    base = results[0]
    k = args.k
    print(f"\nfat-tree k={k} ({k ** 3 // 4} hosts, {5 * k * k // 4} switches), "
          f"kernel {doctor['kernel']['release']}, "
          f"median of {args.runs}; iperf3 TCP {args.seconds} s across the core")
    print(f"{'switches':<15} {'datapath':<10} {'up s':>6} {'down s':>7} {'1 flow Gbit/s':>14} "
          f"{'x router':>9} {'8 flows Gbit/s':>15} {'x router':>9}")
    for r in results:
        print(f"{r['label']:<15} {r['datapath']:<10} {r['up_median_s']:6.2f} "
              f"{r['down_median_s']:7.2f} {r['one_flow_median_bps'] / 1e9:14.3f} "
              f"{r['one_flow_median_bps'] / base['one_flow_median_bps']:9.2f} "
              f"{r['eight_flows_median_bps'] / 1e9:15.3f} "
              f"{r['eight_flows_median_bps'] / base['eight_flows_median_bps']:9.2f}")
    if args.json:
        with open(args.json, "w") as f:
            for r in results:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"ovs_fabric: {e}")
