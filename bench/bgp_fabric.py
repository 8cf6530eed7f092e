#!/usr/bin/python3
"""Benchmark: what routing: bgp costs a lab. For a k=4 fat-tree (16 hosts, 20 switches) and a
64-host leaf-spine (8 leaves x 8 hosts, 4 spines): `fabemu up` time with static routes and with
BGP (FRR on every switch, BFD 100ms x 3), median of --runs runs, the BGP phases (daemons
started, FIBs converged to the plan), and the daemons' resident memory per switch; then an
all-pairs ping across the BGP lab.
    sudo /usr/bin/python3 bench/bgp_fabric.py [--runs 3]"""
import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

from benchlib import BenchError, fabemu_json

REPO = Path(__file__).resolve().parent.parent
FABEMU = str(REPO / "build" / "emulator" / "fabemu")
FABRICS = {
    "fat-tree k=4": "{kind: fat-tree, k: 4}",
    "leaf-spine 64": "{kind: leaf-spine, leaves: 8, spines: 4, hosts_per_leaf: 8}",
}


def fabemu(*args, timeout=600):
    """fabemu's result as its --json object."""
    return fabemu_json([FABEMU, *args], timeout=timeout)


def frr_rss_kib():
    total = 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        name = re.search(r"^Name:\s+(\S+)", text, re.M)
        rss = re.search(r"^VmRSS:\s+(\d+) kB", text, re.M)
        if name and rss and name.group(1) in ("zebra", "bgpd", "bfdd"):
            total += int(rss.group(1))
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"median of {args.runs} runs; up's own wall time ('up in X s')")
    print(f"{'FABRIC':<14} {'SWITCHES':>8} {'STATIC UP':>10} {'BGP UP':>8} {'START':>7} "
          f"{'CONVERGE':>9} {'ROUTES':>7} {'RSS/SWITCH':>11} {'PAIRS':>9}")
    for name, topo in FABRICS.items():
        with tempfile.TemporaryDirectory() as d:
            times = {}
            phases = {"bgp": [], "converge": []}
            rss = []
            pairs = ""
            routes = switches = 0
            for routing in ("static", "bgp"):
                sc = Path(d) / f"{routing}.yaml"
                sc.write_text(f"name: b\ntopology: {topo}\nfabric: {{routing: {routing}}}\n"
                              "rdma: {enabled: off}\n")
                times[routing] = []
                for _ in range(args.runs):
                    base = frr_rss_kib()
                    up = fabemu("up", str(sc), "--lab", "bbgp")
                    try:  # the lab goes whatever fails
                        times[routing].append(up["seconds"])
                        switches = up["switches"]
                        if routing == "bgp":
                            by_phase = {p["phase"]: p["seconds"] for p in up["phases"]}
                            for phase in phases:
                                if phase not in by_phase:
                                    raise BenchError(f"up --json has no phase {phase}: {by_phase}")
                                phases[phase].append(by_phase[phase])
                            routes = up["bgp_routes"]
                            rss.append((frr_rss_kib() - base) / switches)
                            if not pairs:
                                hosts = up["hosts"]
                                ping = fabemu("exec", "bbgp", "--all", "--", "sh", "-c",
                                              f"for i in $(seq 1 {hosts}); do ping -c1 -W2 -q h$i "
                                              ">/dev/null && echo OK; done", timeout=900)
                                ok = sum(h["output"].split().count("OK") for h in ping["hosts"])
                                pairs = f"{ok}/{hosts * hosts}"
                    finally:
                        fabemu("down", "bbgp")
            med = statistics.median
            print(f"{name:<14} {switches:>8} {med(times['static']):>8.2f} s {med(times['bgp']):>6.2f} s "
                  f"{med(phases['bgp']):>5.2f} s {med(phases['converge']):>7.2f} s {routes:>7} "
                  f"{med(rss) / 1024:>7.1f} MiB {pairs:>9}")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"bgp_fabric: {e}")
