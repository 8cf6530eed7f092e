#!/usr/bin/python3
"""Benchmark: time dilation. Does a dilated lab behave like the real fabric its scenario
describes, in the real fabric's units? Sections (all by default):
  rate         iperf3 (UDP, then TCP) through one 100 Gbit/s link at x4000: the rate x N
  delay        ping and sockperf across 1, 3 and 5 switches of a fat-tree, 1.5 us a link, at
               x1, x1000 and x20000: the added one-way delay / N (needs sch_fq: the VM lane)
  collectives  Gloo allreduce, allgather, alltoall on a 400 Gbit/s leaf-spine of 8 and 32 ranks
               (and 64 with --ranks), 1-64 MiB, each size at the auto factor: busbw beside the
               model; then with 1% loss on a spine link
  invariance   the 8-rank allreduce at N and 2N: the same real busbw
Every figure is the median of --runs runs, beside the model (or the configured value), the ratio
and the wall clock it took.
    sudo /usr/bin/python3 bench/dilation.py [--sections rate,delay] [--runs 3]
    sudo scripts/vm-run -- /usr/bin/python3 bench/dilation.py --sections rate,delay"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import BenchError, Lab, fabemu_json, median, run

REPO = Path(__file__).resolve().parent.parent
# What iperf3's UDP payload is on the wire the link model counts: UDP, IPv4 and Ethernet headers.
UDP_PAYLOAD, FRAME_OVERHEAD = 1400, 8 + 20 + 14


def has_fq(fabemu):
    doctor = fabemu_json([fabemu, "doctor"])
    return {f["id"]: f["status"] for f in doctor["features"]}.get("sch_fq") == "yes"


# ------------------------------------------------------------------------------------------------
def section_rate(args, tmp):
    n = 4000
    scenario = (f"name: r\ntime_scale: {n}\ntopology:\n  kind: explicit\n"
                "  nodes: [{name: h1, role: host}, {name: sw, role: switch}, "
                "{name: h2, role: host}]\n  links: [{a: h1, b: sw}, {a: sw, b: h2}]\n"
                "links:\n  overrides:\n    - {link: \"h1>sw\", rate: 100gbit}\nrdma: {enabled: off}\n")
    iperf = shutil.which("iperf3") or "/usr/bin/iperf3"
    rows = []
    with Lab(args.fabemu, tmp, scenario, ["--accept-degraded"], prefix="dl") as lab:
        mode = fabemu_json([args.fabemu, "status", lab.name])["link_model"]
        for proto in ("udp", "tcp"):
            real, wall = [], []
            for _ in range(args.runs):
                server = lab.spawn("h2", [iperf, "-s", "-1", "-p", "5299"])
                time.sleep(0.3)
                argv = [iperf, "-c", "h2", "-p", "5299", "-t", "4", "-J"]
                if proto == "udp":
                    argv += ["-u", "-b", "30M", "-l", str(UDP_PAYLOAD)]
                out = json.loads(lab.exec("h1", argv).stdout)
                server.wait(timeout=30)
                got = out["end"]["sum_received"]["bytes"] if proto == "udp" else \
                    out["end"]["sum_received"]["bytes"]
                secs = out["end"]["sum_sent"]["seconds"]
                bps = got * 8 / secs
                if proto == "udp":  # the frames the link carried, as the link model counts them
                    bps *= (UDP_PAYLOAD + FRAME_OVERHEAD) / UDP_PAYLOAD
                wall.append(bps)
                real.append(bps * n)
            rows.append((proto, median(real), median(wall), min(real), max(real)))
    print(f"\n## rate: one 100 Gbit/s link dilated x{n} (link model: {mode['mode']})")
    print(f"{'':6} {'real (Gbit/s)':>14} {'configured':>11} {'ratio':>7} {'min..max':>17} "
          f"{'wall (Mbit/s)':>14}")
    for proto, r, w, lo, hi in rows:
        what = "frames" if proto == "udp" else "goodput"
        print(f"{proto:6} {r / 1e9:14.2f} {100:11.2f} {r / 100e9:7.3f} "
              f"{lo / 1e9:8.2f}..{hi / 1e9:<7.2f} {w / 1e6:14.2f}  ({what})")


# ------------------------------------------------------------------------------------------------
def section_delay(args, tmp):
    if not has_fq(args.fabemu):
        print("\n## delay: skipped: this kernel has no sch_fq, so no delay can be added "
              "(run it in the VM lane: scripts/vm-run -- /usr/bin/python3 bench/dilation.py "
              "--sections delay)")
        return
    per_link_ns = 1500
    pairs = [("h2", 1, 2), ("h3", 3, 4), ("h16", 5, 6)]  # (peer of h1, switches, links)
    sockperf = shutil.which("sockperf")
    print(f"\n## delay: fat-tree k=4, {per_link_ns / 1000:g} us a link; added one-way delay "
          f"of the real fabric (the RTT with delay minus without, / 2 / N)")
    print(f"{'N':>7} {'switches':>9} {'configured':>11} {'ping':>10} {'ratio':>7} "
          f"{'sockperf':>10} {'ratio':>7} {'rtt wall':>10}")

    def rtts(delay_ns, n):
        text = (f"name: d\ntime_scale: {n}\ntopology: {{kind: fat-tree, k: 4}}\n"
                f"links: {{default: {{rate: 100gbit, delay: {delay_ns}ns}}}}\n"
                "rdma: {enabled: off}\n")
        out = {}
        with Lab(args.fabemu, tmp, text, prefix="dl") as lab:
            for peer, _, _ in pairs:
                lab.exec("h1", ["ping", "-c", "1", "-W", "30", peer])  # ARP first
                p = lab.exec("h1", ["ping", "-c", "20", "-i", "0.05", "-q", peer]).stdout
                ping_ms = float(re.search(r"= [\d.]+/([\d.]+)/", p).group(1))
                sp_ms = float("nan")
                if sockperf:
                    addr = fabemu_json([args.fabemu, "status", lab.name])
                    ip = next(x["address"] for x in addr["nodes"] if x["name"] == peer)
                    server = lab.spawn(peer, [sockperf, "sr", "-i", ip, "-p", "11111"])
                    time.sleep(0.5)
                    c = lab.exec("h1", [sockperf, "pp", "-i", ip, "-p", "11111", "-t", "3",
                                        "--mps", "20"], check=False).stdout
                    server.kill()
                    server.wait()
                    m = re.search(r"avg-latency=([\d.]+)", c)  # one way, us
                    if m:
                        sp_ms = 2 * float(m.group(1)) / 1000
                out[peer] = (ping_ms, sp_ms)
        return out

    for n in (1, 1000, 20000):
        base = [rtts(0, n) for _ in range(args.runs)]
        loaded = [rtts(per_link_ns, n) for _ in range(args.runs)]
        for peer, switches, links in pairs:
            want_us = links * per_link_ns / 1000
            ping = median([(l[peer][0] - b[peer][0]) / 2 / n * 1000 for l, b in zip(loaded, base)])
            sp = median([(l[peer][1] - b[peer][1]) / 2 / n * 1000 for l, b in zip(loaded, base)])
            wall = median([l[peer][0] for l in loaded])
            print(f"{n:7d} {switches:9d} {want_us:9.2f}us {ping:8.3f}us {ping / want_us:7.3f} "
                  f"{sp:8.3f}us {sp / want_us:7.3f} {wall:8.2f}ms")


# ------------------------------------------------------------------------------------------------
def fabric(ranks, collective, size, loss, n):
    leaves = max(2, ranks // 8)
    per_leaf = ranks // leaves
    spines = max(2, leaves)
    override = ("  overrides:\n    - {link: \"leaf1:spine1\", loss: " + loss + "}\n") if loss else ""
    return (f"name: c\nseed: 7\ntime_scale: {n}\n"
            f"topology: {{kind: leaf-spine, leaves: {leaves}, spines: {spines}, "
            f"hosts_per_leaf: {per_leaf}}}\n"
            "fabric: {mtu: 4200}\nhosts: {tcp_rto_min: 1ms}\n"
            "links:\n  default: {rate: 400gbit, queue: 2M, ecn_threshold: 400K}\n" + override +
            "rdma: {enabled: off}\n"
            f"workload: [{{collective: {collective}, library: gloo, transport: tcp, "
            f"sizes: [{size}], iterations: 3, timeout: 3600s}}]\n")


def run_collective(args, tmp, ranks, collective, size, loss="", n="auto"):
    """(busbw GB/s, model GB/s, wall s, factor) of one `fabemu run`."""
    Lab.counter += 1
    lab = f"dl{os.getpid() % 1000}-{Lab.counter}"
    path = Path(tmp) / f"{lab}.yaml"
    path.write_text(fabric(ranks, collective, size, loss, n))
    report = Path(tmp) / f"{lab}-report"
    p = run([args.fabemu, "run", str(path), "--lab", lab, "-q", "--accept-degraded",
             "--report", str(report)], timeout=4 * 3600, check=False)
    busbw = pred = wall = factor = float("nan")
    for line in (report / "report.jsonl").read_text().splitlines():
        j = json.loads(line)
        if j["type"] == "run":
            factor = j["time_scale"]
        elif j["type"] == "result":
            busbw, pred = j["busbw_gbps"], j["pred_busbw_gbps"] or float("nan")
        elif j["type"] == "step":
            wall = j["wall_seconds"]
            if not j["ok"]:
                raise BenchError(f"{collective} {size} on {ranks} ranks: {j['failure']}")
    if p.returncode not in (0, 1):
        raise BenchError(f"fabemu run: exit {p.returncode}: {p.stderr[-800:]}")
    return busbw, pred, wall, factor


def table(title, rows):
    print(f"\n## {title}")
    print(f"{'ranks':>5} {'collective':>13} {'size':>6} {'N':>7} {'busbw GB/s':>11} "
          f"{'min..max':>15} {'model':>7} {'ratio':>6} {'wall s':>7}")
    for r in rows:
        print(f"{r[0]:5d} {r[1]:>13} {r[2]:>6} {r[3]:7g} {r[4]:11.2f} "
              f"{r[5]:7.2f}..{r[6]:<6.2f} {r[7]:7.2f} {r[4] / r[7]:6.3f} {r[8]:7.1f}")


def measure(args, tmp, ranks, collective, size, loss="", n="auto"):
    got = [run_collective(args, tmp, ranks, collective, size, loss, n) for _ in range(args.runs)]
    busbw = [g[0] for g in got]
    return (ranks, collective, size, got[0][3], median(busbw), min(busbw), max(busbw),
            got[0][1], median([g[2] for g in got]))


def section_collectives(args, tmp):
    rows, lossy = [], []
    for ranks in args.ranks:
        for collective in ("allreduce", "allgather", "alltoall"):
            for size in args.sizes:
                rows.append(measure(args, tmp, ranks, collective, size))
                print(f"# {rows[-1]}", file=sys.stderr)
        for size in args.sizes:
            lossy.append(measure(args, tmp, ranks, "allreduce", size, loss="1%"))
            print(f"# {lossy[-1]}", file=sys.stderr)
    table("collectives on a dilated 400 Gbit/s leaf-spine (MTU 4200), each size at its auto "
          "factor; busbw of the real fabric", rows)
    table("the same allreduce with 1% loss on leaf1:spine1 (the model knows no loss)", lossy)


def section_invariance(args, tmp):
    first = measure(args, tmp, 8, "allreduce", "16M")
    n = first[3]
    second = measure(args, tmp, 8, "allreduce", "16M", n=str(2 * n))
    table(f"invariance: the same 8-rank allreduce at x{n:g} and x{2 * n:g}", [first, second])
    print(f"busbw at 2N over busbw at N: {second[4] / first[4]:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--sections", default="rate,delay,collectives,invariance")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ranks", default="8,32")
    ap.add_argument("--sizes", default="1M,8M,64M")
    args = ap.parse_args()
    args.ranks = [int(r) for r in args.ranks.split(",")]
    args.sizes = args.sizes.split(",")
    if os.geteuid() != 0:
        sys.exit("dilation: needs root (namespaces)")
    cap = fabemu_json([args.fabemu, "doctor"])
    capacity = {f["id"]: f for f in cap["features"]}.get("capacity", {})
    print(f"# time dilation benchmark, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{os.cpu_count()} CPUs, kernel {os.uname().release}, median of {args.runs} runs")
    print(f"# capacity: {capacity.get('detail', '?')}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sections.split(","):
            globals()[f"section_{name}"](args, tmp)
            sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"dilation: {e}")
