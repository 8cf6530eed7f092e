#!/usr/bin/python3
"""Benchmark: what the link model's eBPF program costs a packet, timed by the kernel
(BPF_PROG_TEST_RUN, a million runs each): on a shaped port (a rate and a loss) and on a port it
does not shape; median of several runs. Needs root and a build with tests (scripts/build).
  sudo /usr/bin/python3 bench/program_cost.py [--runs 5] [--repeat 1000000]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=1_000_000)
    ap.add_argument("--binary", default=str(REPO / "build/tests/fabemu_program_cost"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("program_cost: needs root (sudo)")
    runs = []
    for _ in range(args.runs):
        p = subprocess.run([args.binary, str(args.repeat)], capture_output=True, text=True,
                           timeout=300)
        if p.returncode != 0:
            sys.exit(f"program_cost: {args.binary}: exit {p.returncode}: {p.stderr.strip()}")
        runs.append(json.loads(p.stdout))
    shaped = [r["shaped_ns"] for r in runs]
    bare = [r["unshaped_ns"] for r in runs]
    med_s, med_b = statistics.median(shaped), statistics.median(bare)
    print(f"link model program, kernel {os.uname().release}, median of {args.runs} runs of "
          f"{args.repeat} packets (1400-byte UDP):")
    print(f"  shaped port (400 Gbit/s, 0.1% loss): {med_s:.0f} ns per packet  {shaped}")
    print(f"  port it does not shape:              {med_b:.0f} ns per packet  {bare}")
    print(f"  shaping adds {med_s - med_b:.0f} ns ({med_s / max(med_b, 1):.1f}x the unshaped path)")


if __name__ == "__main__":
    main()
