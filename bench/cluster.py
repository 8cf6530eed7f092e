#!/usr/bin/python3
"""Benchmark: labs across machines. See README.md.

  partition: the dry run's partition of leaf-spine, fat-tree k=8 and rail-optimized 8x8 over
             2, 4 and 8 machines: links cut (VXLAN tunnels) beside the lower bound, hosts per
             machine. No root needed.
  bringup:   a 1024-host leaf-spine brought up across 4 simulated machines under Slurm
             (scripts/slurm-sim, `fabemu up --on slurm`) against the same fabric built on this
             machine alone, alternating, median of --runs; then `down` of each.

sudo /usr/bin/python3 bench/cluster.py [--sections partition,bringup] [--runs 3]"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchlib
from benchlib import BenchError, median

REPO = Path(__file__).resolve().parent.parent
FABEMU = REPO / "build/emulator/fabemu"
SIM = REPO / "scripts/slurm-sim"
# `up --dry-run` has no --json: its partition summary line is read as printed.
SUMMARY = re.compile(r"# (\d+) of (\d+) links cut .*?; (\d+) with every upper switch .*?; "
                     r"hosts per machine (\d+)\.\.(\d+)")
TOPOLOGIES = [
    ("leaf-spine 512", "{kind: leaf-spine, leaves: 64, spines: 8, hosts_per_leaf: 8}"),
    ("fat-tree k=8", "{kind: fat-tree, k: 8}"),
    ("rail-optimized 8x8", "{kind: rail-optimized, nodes: 8, gpus_per_node: 8, spines: 4}"),
]
BIG = "{kind: leaf-spine, leaves: 128, spines: 8, hosts_per_leaf: 8}"  # 1024 hosts


def scenario(directory, name, topology):
    path = Path(directory) / f"{name}.yaml"
    path.write_text(f"name: {name}\nseed: 1\ntopology: {topology}\nrdma: {{enabled: off}}\n"
                    "fabric: {switch: router, ecmp_hash: l4, mtu: 1500}\n")
    return path


def run(argv, secs=900, env=None):
    """(wall seconds, stdout) of argv; BenchError if it fails."""
    t0 = time.perf_counter()
    p = benchlib.run(argv, timeout=secs, env=env)
    return time.perf_counter() - t0, p.stdout


def partition_table():
    print("## Partition quality (fabemu up --dry-run --machines M)")
    print(f"{'topology':<20} {'M':>2} {'links':>6} {'cut':>5} {'bound':>6} {'hosts/machine':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, topology in TOPOLOGIES:
            path = scenario(tmp, "part", topology)
            for machines in (2, 4, 8):
                _, out = run([FABEMU, "up", path, "--dry-run", "--machines", machines])
                m = SUMMARY.search(out)
                if not m:
                    raise BenchError(f"no summary in the dry run's output:\n{out}")
                cut, links, bound, lo, hi = map(int, m.groups())
                print(f"{label:<20} {machines:>2} {links:>6} {cut:>5} {bound:>6} "
                      f"{f'{lo}..{hi}':>14}")
    print("cut: links between machines (each a VXLAN tunnel); bound: the fewest any placement of "
          "the upper switches could cut with the hosts' groups where they are")


def bringup(runs):
    print(f"## Bring-up of a 1024-host leaf-spine: 4 simulated machines under Slurm vs this "
          f"machine alone (median of {runs}, alternating)")
    state = f"/run/fabemu-bench-sim{os.getpid()}"
    env = dict(os.environ, SIM_STATE=state, SIM_UNDERLAY="198.18.11")
    shared = Path(state) / "shared"
    run([SIM, "up", "4"], env=env)
    try:
        _, out = run([SIM, "run", "--", "salloc", "-N4", "--no-shell"], env=env)
        job = re.search(r"(\d+)\s*$", subprocess.run(
            [SIM, "run", "--", "squeue", "-h", "-o", "%i"], capture_output=True, text=True,
            env=env).stdout).group(1)
        path = scenario(shared, "big", BIG)
        in_job = [SIM, "run", "--", "env", f"SLURM_JOB_ID={job}", "SLURM_JOB_NODELIST=m[1-4]",
                  FABEMU]
        single_up, single_down, cluster_up, cluster_down, machine_up = [], [], [], [], []
        for i in range(runs):
            secs, _ = run([FABEMU, "up", path, "--lab", "bsingle", "-q"])
            single_up.append(secs)
            single_down.append(run([FABEMU, "down", "bsingle"])[0])
            secs, out = run(in_job + ["up", path, "--lab", "bcluster", "--on", "slurm", "--json"],
                            env=env)
            cluster_up.append(secs)
            machine_up.append(max(m["seconds"] for m in json.loads(out)["machines"]))
            cluster_down.append(run(in_job + ["down", "bcluster", "--on", "slurm"], env=env)[0])
            print(f"  run {i + 1}: one machine up {single_up[-1]:.2f} s, down "
                  f"{single_down[-1]:.2f} s; 4 machines up {cluster_up[-1]:.2f} s (slowest "
                  f"machine's part {machine_up[-1]:.2f} s), down {cluster_down[-1]:.2f} s")
        med = median
        print(f"one machine:    up {med(single_up):.2f} s, down {med(single_down):.2f} s")
        print(f"4 sim machines: up {med(cluster_up):.2f} s ({med(cluster_up) / med(single_up):.2f}x"
              f" one machine; the slowest machine's part {med(machine_up):.2f} s, the rest is "
              f"the launcher: srun steps, the agents' checks, the pool agreed), down "
              f"{med(cluster_down):.2f} s")
        print("the 4 simulated machines share this machine's CPUs: the figure is the Slurm "
              "path's overhead, not a speed-up (on real machines each part builds on its own)")
    finally:
        subprocess.run([SIM, "run", "--", "scancel", "--user=root"], env=env,
                       capture_output=True)
        subprocess.run([SIM, "down"], env=env, capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", default="partition,bringup")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    sections = a.sections.split(",")
    if "partition" in sections:
        partition_table()
    if "bringup" in sections:
        if os.geteuid() != 0:
            sys.exit("cluster.py: bringup needs root (sudo)")
        bringup(a.runs)


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"cluster.py: {e}")
