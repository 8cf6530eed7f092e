#!/usr/bin/python3
"""Benchmark: is a frame the link model drops on a host's own port lost on the wire, as on a
switch's port? The default scenario's h1 and h8; loss set on h1>leaf1 (the host's port) and,
separately, on leaf1>h1 (the leaf's port toward it). ping h1 -> h8 loses an echo on either (the
request on the first, the reply on the second), so both must lose the same fraction, within the
binomial 99% interval; TCP's data is sent over each in turn (h1 -> h8, then h8 -> h1) and its
retransmissions counted by iperf3. Before the fix, a drop on h1's own port was reported to h1's
socket: ping sent the echo again and lost nothing.

    sudo /usr/bin/python3 bench/wire_loss.py [--runs 3] [--pings 2000] [--json FILE]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from benchlib import BenchError, fabemu_json, run

REPO = Path(__file__).resolve().parent.parent
Z99 = 2.5758  # two-sided 99% normal quantile
LOSSES = [0.01, 0.10, 0.50]


def ping(fabemu, lab, count):
    p = run([fabemu, "exec", f"{lab}:h1", "--", "ping", "-q", "-c", str(count), "-i", "0.005",
             "-W", "2", "h8"], timeout=300, check=False)
    m = re.search(r"(\d+) packets transmitted, (\d+) received", p.stdout)
    if not m:
        raise BenchError(f"no ping summary: {p.stdout}{p.stderr}")
    sent, got = int(m.group(1)), int(m.group(2))
    return sent, 1 - got / sent


def tcp(fabemu, lab, sender, receiver, seconds=3):
    server = subprocess.Popen([fabemu, "exec", f"{lab}:{receiver}", "--", "iperf3", "-s", "-1",
                               "-p", "5320"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        p = run([fabemu, "exec", f"{lab}:{sender}", "--", "iperf3", "-c", receiver, "-p", "5320",
                 "-t", str(seconds), "-J"], timeout=300, check=False)
        j = json.loads(p.stdout)
        sent = j["end"]["sum_sent"]
        return sent["retransmits"], sent["bytes"] / 1448
    finally:
        server.kill()
        server.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--pings", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root")
    lab = f"wl{os.getpid() % 10000}"
    fabemu_json([args.fabemu, "up", REPO / "scenarios/default.yaml", "--lab", lab, "-q"],
                timeout=300)
    rows = []
    try:
        run([args.fabemu, "exec", f"{lab}:h1", "--", "ping", "-c2", "h8"], timeout=300)
        for p in LOSSES:
            for direction, sender, receiver in (("h1>leaf1", "h1", "h8"),
                                                ("leaf1>h1", "h8", "h1")):
                pct = f"{p * 100:g}%"
                run([args.fabemu, "link", "set", lab, direction, "--loss", pct], timeout=300)
                losses, retr = [], []
                sent = 0
                for _ in range(args.runs):
                    sent, loss = ping(args.fabemu, lab, args.pings)
                    losses.append(loss)
                    if p <= 0.10:
                        r, segs = tcp(args.fabemu, lab, sender, receiver)
                        retr.append(r / max(1, segs))
                run([args.fabemu, "link", "set", lab, direction, "--loss", "0"], timeout=300)
                half = Z99 * math.sqrt(p * (1 - p) / args.pings)
                rows.append({"loss": p, "direction": direction, "pings_sent": sent,
                             "ping_loss": losses, "within_99": all(abs(x - p) <= half
                                                                    for x in losses),
                             "interval": [p - half, p + half],
                             "tcp_retransmits_per_segment": retr})
    finally:
        run([args.fabemu, "down", lab], timeout=300, check=False)
    print(f"{'loss':>5}  {'direction':<10} {'sent':>5}  {'ping loss (runs)':<24} "
          f"{'99% interval':<15} {'in':<3} TCP retransmits/segment (runs)")
    for r in rows:
        print(f"{r['loss'] * 100:4g}%  {r['direction']:<10} {r['pings_sent']:>5}  "
              f"{' '.join(f'{x:.4f}' for x in r['ping_loss']):<24} "
              f"{r['interval'][0]:.3f}..{r['interval'][1]:.3f}  "
              f"{'yes' if r['within_99'] else 'NO':<3} "
              f"{' '.join(f'{x:.4f}' for x in r['tcp_retransmits_per_segment']) or '-'}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"wire_loss: {e}")
