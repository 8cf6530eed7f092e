#!/usr/bin/python3
"""Benchmark: does a fabemu link behave as configured? Rate, delay, loss and ECN onset of one
emulated link, measured with iperf3, ping, sockperf and tcpdump (tools fabemu did not write),
beside tc htb/netem on the same kernel and a plain veth. Meant for the VM lane, whose kernel has
sch_fq and sch_netem:  sudo scripts/vm-run -- /usr/bin/python3 bench/link_fidelity.py
See README.md for the bars and the last results."""
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import BenchError, fabemu_json, median, run

REPO = Path(__file__).resolve().parent.parent
UDP_PAYLOAD = 1400
# A datagram's frame as the link model and htb count it: UDP 8 + IPv4 20 + Ethernet 14.
UDP_FRAME = UDP_PAYLOAD + 42
# A full TCP segment (MSS 1448 with timestamps) as a frame: + TCP 32 + IPv4 20 + Ethernet 14.
TCP_FRAME, TCP_PAYLOAD = 1514, 1448
Z99 = 2.5758  # two-sided 99% normal quantile


class Lab:
    """A two-host lab (h1 -- h2, one link) built by fabemu, shaped by the scenario's `links` or
    by tc on its ports; removed on exit."""
    COUNT = 0

    def __init__(self, fabemu, tmp, shape=None):
        Lab.COUNT += 1
        self.fabemu, self.name = fabemu, f"f{os.getpid() % 10000}x{Lab.COUNT}"
        links = f"links:\n  default: {shape}\n" if shape else ""
        path = Path(tmp) / f"{self.name}.yaml"
        path.write_text("name: fid\nseed: 1\ntopology:\n  kind: explicit\n"
                        "  nodes: [{name: h1, role: host}, {name: h2, role: host}]\n"
                        "  links: [{a: h1, b: h2}]\nfabric: {mtu: 1500}\nrdma: {enabled: off}\n"
                        + links)
        self.up = fabemu_json([fabemu, "up", path, "--lab", self.name, "-q"], timeout=120)
        try:
            status = fabemu_json([fabemu, "status", self.name], timeout=120)
        except BenchError:
            self.__exit__()
            raise
        self.addr = {n["name"]: n["address"] for n in status["nodes"]}
        self.mode = status["link_model"]["mode"]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        run([self.fabemu, "down", self.name], timeout=120, check=False)

    def ns(self, node):
        return f"fabemu-{self.name}-{node}"

    def exec(self, node, argv, timeout=120, check=True):
        return run([self.fabemu, "exec", f"{self.name}:{node}", "--"] + argv, timeout, check)

    def spawn(self, node, argv):
        return subprocess.Popen([self.fabemu, "exec", f"{self.name}:{node}", "--"] + argv,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)

    def tc(self, node, *args):
        run(["ip", "netns", "exec", self.ns(node), "tc"] + list(args), timeout=120)

    def counters(self, direction):
        status = fabemu_json([self.fabemu, "status", self.name], timeout=120)
        for link in status["links"]:
            for d in ("a_to_b", "b_to_a"):
                if link.get(d, {}).get("direction") == direction:
                    return link[d]["counters"]
        raise BenchError(f"no direction {direction} in status")


def stop(proc):
    try:
        os.killpg(proc.pid, 9)
    except ProcessLookupError:
        pass
    proc.wait()


def iperf(lab, udp_bps=None, seconds=3, extra=(), datagrams=None):
    """h1 -> h2 for `seconds` (or `datagrams` UDP datagrams); the receiver's end-of-test
    summary (bit/s, and for UDP lost/sent)."""
    server = lab.spawn("h2", ["iperf3", "-s", "-1", "-p", "5301"])
    time.sleep(0.4)
    try:
        argv = ["iperf3", "-c", lab.addr["h2"], "-p", "5301", "-J"]
        argv += ["-k", str(datagrams)] if datagrams else ["-t", str(seconds)]
        if udp_bps is not None:
            argv += ["-u", "-b", str(int(udp_bps)), "-l", str(UDP_PAYLOAD)]
        limit = seconds + 60 if not datagrams else datagrams * UDP_FRAME * 8 / udp_bps + 60
        out = json.loads(lab.exec("h1", argv + list(extra), timeout=limit).stdout)
    finally:
        stop(server)
    end = out["end"]
    # Received bytes over the sender's time: the receiver's clock runs until the end-of-test
    # message comes in on iperf3's TCP control connection, which a full link may delay.
    # (At heavy loss iperf3 may lose its end-of-test exchange and leave sum_received out.)
    received = end.get("sum_received") or end["sum"]
    sent = end.get("sum_sent") or end["sum"]
    bps = received["bytes"] * 8 / sent["seconds"]
    if udp_bps is None:
        return {"bps": bps}
    s = end["sum"]
    return {"bps": bps, "lost": s["lost_packets"], "packets": s["packets"],
            "sent_bps": sent["bits_per_second"]}


def ping_ms(lab, count=40, interval="0.05"):
    """Median RTT in ms of `count` echoes h1 -> h2."""
    out = lab.exec("h1", ["ping", "-n", "-c", str(count), "-i", interval, lab.addr["h2"]],
                   timeout=count * 2 + 30).stdout
    times = [float(t) for t in re.findall(r"time=([\d.]+) ms", out)]
    if len(times) < count // 2:
        raise BenchError(f"ping: {len(times)}/{count} answered")
    return median(times)


def sockperf_us(lab, seconds=2):
    """sockperf ping-pong h1 -> h2: median one-way latency (half the round trip) in us."""
    server = lab.spawn("h2", ["sockperf", "server", "-i", lab.addr["h2"], "-p", "11111"])
    time.sleep(0.4)
    try:
        out = lab.exec("h1", ["sockperf", "ping-pong", "-i", lab.addr["h2"], "-p", "11111",
                              "-t", str(seconds), "-m", "64"], timeout=seconds + 60).stdout
    finally:
        stop(server)
    m = re.search(r"percentile 50\.0+ =\s*([\d.]+)", out)
    if not m:
        raise BenchError("sockperf: no median in its output:\n" + out[-600:])
    return float(m.group(1))


def median_of(runs, f):
    return median(f() for _ in range(runs))


def pct(measured, want):
    return 100.0 * (measured - want) / want


# ------------------------------------------------------------------------------------------

def bench_rate(fabemu, tmp, runs, rates, emit):
    """UDP offered at 1.25x the rate (frames counted as the link counts them) and one TCP flow,
    fabemu's link model against htb with rate = ceil = the same rate."""
    for label, bps in rates:
        row = {"test": "rate", "rate": label, "rate_bps": bps}
        for impl in ("fabemu", "htb"):
            shape = f"{{rate: {label}}}" if impl == "fabemu" else None
            with Lab(fabemu, tmp, shape) as lab:
                if impl == "htb":
                    for node in ("h1", "h2"):
                        lab.tc(node, "qdisc", "add", "dev", "eth0", "root", "handle", "1:",
                               "htb", "default", "1")
                        lab.tc(node, "class", "add", "dev", "eth0", "parent", "1:", "classid",
                               "1:1", "htb", "rate", label, "ceil", label)
                udp = [iperf(lab, udp_bps=bps * 1.25 * UDP_PAYLOAD / UDP_FRAME)
                       for _ in range(runs)]
                tcp = [iperf(lab) for _ in range(runs)]
            wire_udp = median(u["bps"] for u in udp) * UDP_FRAME / UDP_PAYLOAD
            offered = median(u["sent_bps"] for u in udp) * UDP_FRAME / UDP_PAYLOAD
            wire_tcp = median(t["bps"] for t in tcp) * TCP_FRAME / TCP_PAYLOAD
            row[impl] = {"udp_wire_bps": wire_udp, "udp_err_pct": pct(wire_udp, bps),
                         "tcp_wire_bps": wire_tcp, "tcp_err_pct": pct(wire_tcp, bps),
                         # The sender could not even offer the rate: the figure says what the
                         # CPU carries, not what the link model does.
                         "cpu_bound": offered < bps * 0.98}
        emit(row)


def bench_delay(fabemu, tmp, runs, delays, emit):
    """One-way delay D on both directions adds 2D to a ping's round trip; sockperf reports half
    a round trip. Added = shaped minus the same tool on an unshaped lab in the same run."""
    with Lab(fabemu, tmp) as plain:
        base_ping = median_of(runs, lambda: ping_ms(plain))
        base_sp = median_of(runs, lambda: sockperf_us(plain))
    emit({"test": "delay-baseline", "ping_rtt_ms": base_ping, "sockperf_one_way_us": base_sp})
    for label, ns in delays:
        row = {"test": "delay", "delay": label, "delay_ns": ns}
        for impl in ("fabemu", "netem"):
            shape = f"{{delay: {label}}}" if impl == "fabemu" else None
            with Lab(fabemu, tmp, shape) as lab:
                if impl == "netem":
                    try:
                        for node in ("h1", "h2"):
                            lab.tc(node, "qdisc", "add", "dev", "eth0", "root", "netem",
                                   "delay", label)
                    except BenchError as e:
                        row[impl] = {"unavailable": str(e)[-120:]}
                        continue
                added_rtt_us = (median_of(runs, lambda: ping_ms(lab)) - base_ping) * 1000
                added_sp_us = median_of(runs, lambda: sockperf_us(lab)) - base_sp
            want_us = ns / 1000
            err = added_rtt_us / 2 - want_us
            row[impl] = {"ping_added_one_way_us": added_rtt_us / 2, "ping_err_us": err,
                         "ping_err_pct": 100 * err / want_us,
                         "sockperf_added_one_way_us": added_sp_us,
                         "ok": abs(err) <= max(10.0, 0.05 * want_us)}
        emit(row)


def bench_loss(fabemu, tmp, losses, datagrams, emit):
    """Bernoulli loss p on h1 -> h2: the lost share of `datagrams` UDP datagrams (iperf3 counts)
    against the 99% binomial interval around p."""
    for label, p in losses:
        row = {"test": "loss", "loss": label, "p": p, "datagrams": datagrams}
        half = Z99 * math.sqrt(p * (1 - p) / datagrams)
        row["ci99"] = [p - half, p + half]
        for impl in ("fabemu", "netem"):
            shape = f"{{loss: {label}}}" if impl == "fabemu" else None
            with Lab(fabemu, tmp, shape) as lab:
                if impl == "fabemu":  # h1 -> h2 only, like netem on h1's port
                    run([fabemu, "link", "set", lab.name, "h2>h1", "--loss", "0"], timeout=120)
                else:
                    try:
                        lab.tc("h1", "qdisc", "add", "dev", "eth0", "root", "netem", "loss",
                               label)
                    except BenchError as e:
                        row[impl] = {"unavailable": str(e)[-120:]}
                        continue
                # 10 Mbit/s: far below what the VM carries, so only the link loses datagrams.
                r = iperf(lab, udp_bps=10e6, datagrams=datagrams)
            share = r["lost"] / r["packets"] if r["packets"] else float("nan")
            row[impl] = {"lost": r["lost"], "sent": r["packets"], "share": share,
                         "inside_ci99": abs(share - p) <= Z99 * math.sqrt(p * (1 - p) /
                                                                          max(r["packets"], 1))}
        emit(row)


def bench_ecn(fabemu, tmp, rate, threshold_us, ratios, emit):
    """ECN onset: ECT(0) UDP offered at 1.3x the rate holds the queue at its limit Q; the share
    of CE-marked datagrams tcpdump sees at h2, for Q from below to above the threshold K."""
    if not shutil.which("tcpdump"):
        emit({"test": "ecn", "skipped": "tcpdump is not installed"})
        return
    rate_bps = int(re.match(r"(\d+)mbit", rate).group(1)) * 10**6
    for ratio in ratios:
        queue_us = int(threshold_us * ratio)
        shape = f"{{rate: {rate}, queue: {queue_us}us, ecn_threshold: {threshold_us}us}}"
        with Lab(fabemu, tmp, shape) as lab:
            cap = subprocess.Popen(["ip", "netns", "exec", lab.ns("h2"), "tcpdump", "-i", "eth0",
                                    "-n", "-v", "-l", "-c", "3000", "udp", "and", "dst", "port",
                                    "5301"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, text=True, start_new_session=True)
            time.sleep(1.0)
            iperf(lab, udp_bps=rate_bps * 1.3 * UDP_PAYLOAD / UDP_FRAME, seconds=3,
                  extra=("-S", "2"))  # TOS 0x02: ECT(0)
            try:
                out, _ = cap.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(cap.pid, 2)  # SIGINT: tcpdump flushes what it has
                out, _ = cap.communicate()
            tos = re.findall(r"tos 0x([0-9a-f]+)", out)
            ce = sum(1 for t in tos if int(t, 16) & 3 == 3)
            counted = lab.counters("h1>h2")
        emit({"test": "ecn", "rate": rate, "threshold_us": threshold_us, "queue_us": queue_us,
              "queue_over_threshold": ratio, "captured": len(tos), "ce": ce,
              "ce_share": ce / len(tos) if tos else float("nan"),
              "model_ce_marks": counted["ce_marks"], "model_packets": counted["packets"]})


def bench_overhead(fabemu, tmp, runs, emit):
    """One TCP flow (cubic) and 64-byte UDP at full speed: a port with the link model at an
    unlimited rate against a plain veth, a plain veth with TSO/GSO off (ethtool), and the same
    fabemu port with the program taken off, which tells the program's cost from the cost of one
    packet per skb. UDP at full speed is limited by iperf3 itself and varies run to run."""
    row = {"test": "overhead"}
    variants = [("plain veth", None, "")]
    if shutil.which("ethtool"):
        variants.append(("plain veth, tso/gso off", None, "ethtool"))
    variants += [("fabemu port, program off", "{rate: 400gbit}", "detach"),
                 ("fabemu 400gbit", "{rate: 400gbit}", "")]
    for label, shape, change in variants:
        with Lab(fabemu, tmp, shape) as lab:
            for node in ("h1", "h2"):
                if change == "ethtool":
                    run(["ip", "netns", "exec", lab.ns(node), "ethtool", "-K", "eth0", "tso",
                         "off", "gso", "off", "gro", "off"])
                elif change == "detach":
                    detach_program(lab, node)
            # cubic: BBR without fq paces by a timer per skb, which with one packet per skb
            # measures the timer, not the port.
            tcp = median_of(runs, lambda: iperf(lab, extra=("-C", "cubic") + PIN)["bps"])
            pps = median_of(runs, lambda: _udp_pps(lab))
        row[label] = {"tcp_bps": tcp, "udp64_pps": pps}
    plain = row["plain veth"]
    for label in row:
        if label != "test" and label != "plain veth":
            row[label]["tcp_ratio"] = row[label]["tcp_bps"] / plain["tcp_bps"]
            row[label]["udp64_ratio"] = row[label]["udp64_pps"] / plain["udp64_pps"]
    # The program's own cost: the same port with and without it.
    bare, full = row["fabemu port, program off"], row["fabemu 400gbit"]
    row["program_cost"] = {"tcp_ratio": full["tcp_bps"] / bare["tcp_bps"],
                           "udp64_ratio": full["udp64_pps"] / bare["udp64_pps"]}
    emit(row)


# Run inside a port's namespace: takes the tcx program off `eth0` (BPF_PROG_QUERY, then
# BPF_PROG_GET_FD_BY_ID and BPF_PROG_DETACH by raw syscall: bpftool 7.1 knows no tcx). What
# remains is the port exactly as fabemu set it up (one packet per skb, offloads off, RPS, fq
# where there is one) without the program.
DETACH_TCX = r"""
import ctypes, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr.ljust(128, b"\0"), 128)
    r = libc.syscall(321, cmd, buf, 128)
    if r < 0: sys.exit(f"bpf({cmd}): errno {ctypes.get_errno()}")
    return r, buf.raw
idx = socket.if_nametoindex("eth0")
ids = (ctypes.c_uint32 * 4)()
_, out = bpf(16, struct.pack("IIIIQI", idx, 47, 0, 0, ctypes.addressof(ids), 4))
count = struct.unpack_from("I", out, 24)[0]
for i in range(count):
    fd, _ = bpf(13, struct.pack("I", ids[i]))
    bpf(9, struct.pack("IIII", idx, fd, 47, 0))
print(count)
"""


def detach_program(lab, node):
    out = run(["ip", "netns", "exec", lab.ns(node), sys.executable, "-c", DETACH_TCX],
              timeout=120).stdout
    if out.strip() == "0":
        raise BenchError(f"no tcx program on {node}'s eth0 (clsact kernel?)")


# Sender on CPU 0, receiver on CPU 1: where the scheduler puts them moves one flow's speed by
# 2x between runs on 2 CPUs, more than the differences measured here.
PIN = ("-A", "0,1") if (os.cpu_count() or 1) >= 2 else ()


def _udp_pps(lab, seconds=3):
    server = lab.spawn("h2", ["iperf3", "-s", "-1", "-p", "5301"])
    time.sleep(0.4)
    try:
        out = json.loads(lab.exec("h1", ["iperf3", "-c", lab.addr["h2"], "-p", "5301", "-u",
                                         "-b", "0", "-l", "64", "-t", str(seconds), "-J",
                                         *PIN], timeout=seconds + 60).stdout)
    finally:
        stop(server)
    s = out["end"]["sum"]
    return (s["packets"] - s["lost_packets"]) / s["seconds"]


# ------------------------------------------------------------------------------------------

def report(rows):
    out = []
    for r in rows:
        t = r["test"]
        if t == "rate":
            f, h = r["fabemu"], r["htb"]
            cpu = " (cpu-bound)" if f["cpu_bound"] or h["cpu_bound"] else ""
            out.append(f"rate {r['rate']:>8}: fabemu UDP {f['udp_err_pct']:+6.2f}% TCP "
                       f"{f['tcp_err_pct']:+6.2f}% | htb UDP {h['udp_err_pct']:+6.2f}% TCP "
                       f"{h['tcp_err_pct']:+6.2f}%{cpu}")
        elif t == "delay-baseline":
            out.append(f"delay baseline: ping rtt {r['ping_rtt_ms'] * 1000:.0f} us, sockperf "
                       f"one-way {r['sockperf_one_way_us']:.1f} us")
        elif t == "delay":
            f, n = r["fabemu"], r["netem"]
            if "unavailable" in n:
                n = {"ping_added_one_way_us": float("nan"), "ping_err_pct": float("nan"),
                     "sockperf_added_one_way_us": float("nan")}
            out.append(f"delay {r['delay']:>6}: fabemu +{f['ping_added_one_way_us']:.1f} us "
                       f"({f['ping_err_pct']:+.2f}%, {f['ping_err_us']:+.1f} us; sockperf "
                       f"+{f['sockperf_added_one_way_us']:.1f}) | netem "
                       f"+{n['ping_added_one_way_us']:.1f} us ({n['ping_err_pct']:+.2f}%; "
                       f"sockperf +{n['sockperf_added_one_way_us']:.1f})")
        elif t == "loss":
            f, n = r["fabemu"], r["netem"]
            if "unavailable" in n:
                n = {"share": float("nan"), "sent": 0, "inside_ci99": False}
            lo, hi = r["ci99"]
            out.append(f"loss {r['loss']:>5}: fabemu {100 * f['share']:.3f}% of {f['sent']} "
                       f"{'in' if f['inside_ci99'] else 'OUTSIDE'} | netem "
                       f"{100 * n['share']:.3f}% of {n['sent']} "
                       f"{'in' if n['inside_ci99'] else 'OUTSIDE'}  (99% CI "
                       f"{100 * lo:.3f}..{100 * hi:.3f}%)")
        elif t == "ecn":
            if "skipped" in r:
                out.append(f"ecn: skipped: {r['skipped']}")
                continue
            out.append(f"ecn K={r['threshold_us']}us queue {r['queue_over_threshold']:.2f}K: "
                       f"{100 * r['ce_share']:5.1f}% CE of {r['captured']} captured "
                       f"(model counted {r['model_ce_marks']}/{r['model_packets']})")
        elif t == "overhead":
            for label, v in r.items():
                if label == "test":
                    continue
                if label == "program_cost":
                    out.append(f"overhead: the program itself (same port with/without it): "
                               f"{v['tcp_ratio']:.2f}x TCP, {v['udp64_ratio']:.2f}x UDP64")
                    continue
                ratio = (f" = {v['tcp_ratio']:.2f}x TCP, {v['udp64_ratio']:.2f}x UDP64"
                         if "tcp_ratio" in v else "")
                out.append(f"overhead {label:>24}: TCP {v['tcp_bps'] / 1e9:.2f} Gbit/s, "
                           f"UDP64 {v['udp64_pps'] / 1e3:.0f} kpps{ratio}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=3, help="median of N runs per figure")
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--rates", default="10mbit,100mbit,500mbit,1gbit")
    ap.add_argument("--delays", default="100us,1ms,10ms")
    ap.add_argument("--losses", default="0.1%,1%,10%")
    ap.add_argument("--datagrams", type=int, default=20000)
    ap.add_argument("--only", default="rate,delay,loss,ecn,overhead")
    ap.add_argument("--json", type=Path, help="also write JSON lines here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("link_fidelity: needs root (it builds labs)")
    for tool in ("iperf3", "sockperf", "ping", "tc"):
        if not shutil.which(tool):
            sys.exit(f"link_fidelity: {tool} is not installed (scripts/install-deps)")
    rows = []
    jf = args.json.open("a") if args.json else None

    def emit(row):
        rows.append(row)
        print(json.dumps(row), flush=True)
        if jf:
            jf.write(json.dumps(row) + "\n")

    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "us": 1e3, "ms": 1e6, "s": 1e9}

    def parse(text):
        m = re.fullmatch(r"([\d.]+)([a-z]+)", text)
        return m.group(0), int(float(m.group(1)) * units[m.group(2)])

    only = set(args.only.split(","))
    with tempfile.TemporaryDirectory(prefix="fabemu-fid-") as tmp:
        probe = Lab(args.fabemu, tmp, "{rate: 1gbit}")
        mode = probe.mode
        probe.__exit__()
        cc = Path("/proc/sys/net/ipv4/tcp_congestion_control").read_text().strip()
        print(f"# kernel {os.uname().release}, link model mode: {mode}, TCP congestion control "
              f"{cc}, {os.cpu_count()} CPUs", flush=True)
        if mode != "fq":
            print("# no fq: the delay rows cannot be measured (policer adds no delay)")
            only.discard("delay")
        try:
            if "rate" in only:
                bench_rate(args.fabemu, tmp, args.runs,
                           [parse(r) for r in args.rates.split(",")], emit)
            if "delay" in only:
                bench_delay(args.fabemu, tmp, args.runs,
                            [parse(d) for d in args.delays.split(",")], emit)
            if "loss" in only:
                bench_loss(args.fabemu, tmp,
                           [(l, float(l.rstrip("%")) / 100) for l in args.losses.split(",")],
                           args.datagrams, emit)
            if "ecn" in only:
                bench_ecn(args.fabemu, tmp, "50mbit", 5000, (0.8, 0.9, 0.95, 1.05, 1.1, 1.25),
                          emit)
            if "overhead" in only:
                bench_overhead(args.fabemu, tmp, args.runs, emit)
        except (BenchError, subprocess.TimeoutExpired) as e:
            print(f"link_fidelity: {e}", file=sys.stderr)
            print(report(rows))
            sys.exit(1)
    print("\n" + report(rows))


if __name__ == "__main__":
    main()
