#!/usr/bin/python3
"""Benchmark: does a collective across the emulated fabric run at the speed the link model
predicts? Gloo allreduce (fabemu-collective, one rank per host) on the default leaf-spine
(4 leaves x 2 hosts, 2 spines) with every link shaped to --rate, sizes 1-64 MiB; measured busbw
(median of --runs runs) beside `fabemu predict`; then the same with one spine link at 1% loss.
Pick a rate well below what the machine forwards: with one packet per skb every hop costs CPU.
    sudo /usr/bin/python3 bench/collective_busbw.py [--rate 100mbit] [--runs 3]
See README.md for the last results."""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from benchlib import BenchError, fabemu_json, median, run

REPO = Path(__file__).resolve().parent.parent


def scenario(rate, mtu, cc):
    hosts = f"hosts: {{tcp_congestion: {cc}}}\n" if cc else ""
    return (f"name: busbw\nseed: 1\n"
            "topology: {kind: leaf-spine, leaves: 4, spines: 2, hosts_per_leaf: 2}\n"
            f"fabric: {{switch: router, ecmp_hash: l4, mtu: {mtu}}}\n{hosts}"
            f"links:\n  default: {{rate: {rate}}}\nrdma: {{enabled: off}}\n")


def measure(fabemu, collective, lab, args, tag):
    """One run of fabemu-collective on every host; returns {size: result line}."""
    shared = Path("/run/fabemu") / lab / "shared"
    predict, out = shared / "predict.json", shared / f"{tag}.jsonl"
    predict.write_text(run([fabemu, "predict", lab, "--json"]).stdout)
    env = dict(os.environ, FABEMU_RUN_ID=f"{tag}-{time.time_ns()}")
    run([fabemu, "exec", lab, "--all", "--no-tag", "--", collective,
         "--collective", args.collective, "--sizes", args.sizes,
         "-n", str(args.iterations), "-w", "1", "--predict", str(predict),
         "--json-out", str(out), "--timeout", "300"], timeout=3600, env=env)
    rows = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return {r["size"]: r for r in rows if r.get("type") == "result"}


def fmt_size(b):
    return f"{b >> 20} MiB" if b >= 1 << 20 else f"{b >> 10} KiB"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--collective-bin",
                    default=str(REPO / "build/emulator/collective/fabemu-collective"))
    ap.add_argument("--rate", default="100mbit")
    ap.add_argument("--mtu", type=int, default=1500)
    ap.add_argument("--collective", default="allreduce")
    ap.add_argument("--sizes", default="1M,4M,16M,64M")
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--degrade", default="leaf1:spine1", help="link given --loss for the 2nd half")
    ap.add_argument("--loss", default="1%")
    ap.add_argument("--tcp-congestion", default="", help="the hosts' (default: the machine's)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("collective_busbw: needs root (namespaces)")

    lab = f"bb{os.getpid() % 10000}"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "busbw.yaml"
        path.write_text(scenario(args.rate, args.mtu, args.tcp_congestion))
        fabemu_json([args.fabemu, "up", str(path), "--lab", lab, "-q"])
        try:
            mode = fabemu_json([args.fabemu, "status", lab])["link_model"]["mode"]
            cc = args.tcp_congestion or Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
            print(f"# {args.collective}, gloo/tcp ({cc}), 8 ranks, every link {args.rate}, "
                  f"link model mode {mode}; {args.runs} runs x {args.iterations} iterations")
            results = {"baseline": [], "degraded": []}
            for cond in results:
                if cond == "degraded":
                    run([args.fabemu, "link", "set", lab, args.degrade, "--loss", args.loss])
                for i in range(args.runs):
                    results[cond].append(measure(args.fabemu, args.collective_bin, lab, args,
                                                 f"{cond}{i}"))
                    print(f"#   {cond} run {i + 1}/{args.runs} done", file=sys.stderr)
            status = fabemu_json([args.fabemu, "status", lab])
        finally:
            run([args.fabemu, "down", lab], check=False)

    sizes = sorted(results["baseline"][0])
    print(f"{'size':>8} {'pred busbw':>11} {'measured':>10} {'min..max':>17} {'ratio':>6} "
          f"{'wrong':>5} | {args.degrade + ' loss ' + args.loss:>26} {'drop':>6}")
    print(f"{'':>8} {'MB/s':>11} {'MB/s':>10} {'MB/s':>17} {'':>6} {'':>5} | "
          f"{'MB/s (min..max)':>26} {'':>6}")
    for s in sizes:
        base = [r[s]["busbw_gbps"] * 1e3 for r in results["baseline"]]
        deg = [r[s]["busbw_gbps"] * 1e3 for r in results["degraded"]]
        wrong = sum(r[s]["wrong"] for c in results.values() for r in c)
        pred = results["baseline"][0][s].get("pred_busbw_gbps", 0) * 1e3
        mb, md = median(base), median(deg)
        print(f"{fmt_size(s):>8} {pred:11.2f} {mb:10.2f} {min(base):8.2f}..{max(base):<7.2f} "
              f"{mb / pred if pred else 0:6.3f} {wrong:5d} | "
              f"{md:8.2f} ({min(deg):6.2f}..{max(deg):<6.2f}) {100 * (md - mb) / mb:+5.1f}%")
    # Where the 1% loss hit: the degraded link's drops, per direction.
    for link in status.get("links", []):
        a, b = link["name"].split(":")
        if args.degrade in (f"{a}:{b}", f"{b}:{a}"):
            for d in ("a_to_b", "b_to_a"):
                c = link[d].get("counters", {})
                print(f"# {link[d]['direction']}: {c.get('packets', 0)} packets, "
                      f"{c.get('drop_loss', 0)} lost")

if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"collective_busbw: {e}")
