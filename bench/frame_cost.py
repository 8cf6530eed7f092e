#!/usr/bin/python3
"""Benchmark: what a frame-hop costs this machine's CPUs in a fabemu lab, beside the kernel's
floor for the same frames measured in the same run, and what a collective step costs beyond the
link model.

- floor (ip): a bare chain h1 - r1 - r2 - r3 - h2 of namespaces (fabemu-built, no link model on
  any port, offloads off so that every frame is one MTU-sized skb, as in a shaped lab), one
  iperf3 TCP flow across it as fast as the machine goes, forwarded by the routers' IP stacks;
- floor (bpf): the same chain, the routers forwarding by a tc program at every port's ingress
  (bench/fib_redirect.bpf.c: bpf_fib_lookup, TTL, MACs, bpf_redirect), skipping their IP stacks;
- the same chain with fabemu's link model on every port, once counting only (a loss of 0) and
  once holding a rate (10x the lab's, so that the flow is the machine's, not the links'): what
  the link model and its qdiscs add to a frame-hop, without the lab's processes;
- lab: the calibration's lab (8 hosts, 2 leaves, 2 spines, every link at RATE; `doctor
  --calibrate` runs it to find the highest rate that keeps pace) with the calibration's load, a
  Gloo allreduce sized to ~0.25 s an iteration, run by `fabemu exec --all` as the workload runs it;
- step: a 16K allreduce in that lab (latency, not bandwidth): its time beyond the model's, over
  the ring's 2(n-1) steps;
- lab with GSO: the same lab with `fabric: {gso: 64K}` (TCP's super-frames through the fabric,
  1M queues) at the rate the GSO calibration found (`capacity_gso`), where it has one.

A frame-hop is a frame sent by one port (the link model's count on a shaped port, where a
super-frame is its frames; the interface's tx_packets elsewhere; ACKs included); CPU is the
machine's busy time over the measurement (/proc/stat), so "per core" is what one fully busy core
carries. Ratios are against the IP-stack floor of the same run. With --peer, a second fabemu
(e.g. an earlier build, with its fabemu-collective beside it) runs the lab rows alternately with
the first, and the ratios between the two are printed too. With --profile, `perf record -a` over
one lab run attributes the CPU to the stack's parts (see README.md).

Needs root. Medians of --runs (3). Usage:
  sudo bench/frame_cost.py [--fabemu build/emulator/fabemu] [--rate 100mbit] [--peer OTHER]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from benchlib import BenchError, Lab, fabemu_json, median, run

REPO = Path(__file__).resolve().parent.parent
HOPS = 4  # the chain's links: h1-r1, r1-r2, r2-r3, r3-h2 (the lab's path across its spines)


def cpu_busy_s():
    """Busy CPU-seconds of the whole machine so far (user, nice, system, irq, softirq, steal)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
    return busy / os.sysconf("SC_CLK_TCK")


def parse_rate(text):
    m = re.fullmatch(r"([0-9.]+)\s*([kmg]?)bit", text.strip().lower())
    if not m:
        raise BenchError(f"--rate {text}: expected e.g. 100mbit")
    return float(m.group(1)) * {"": 1, "k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)]


def collective_of(fabemu):
    """The fabemu-collective that `fabemu` stages for its workloads: beside it, or in the build's
    collective/ directory."""
    d = Path(fabemu).resolve().parent
    for c in (d / "fabemu-collective", d / "collective" / "fabemu-collective"):
        if c.exists():
            return str(c)
    raise BenchError(f"no fabemu-collective beside {fabemu}")


def frames(lab):
    """Frames sent by every port of the lab so far (its links' two ends): the link model's count
    where a direction is shaped (a GSO super-frame is its frames), the interface's elsewhere."""
    total = 0
    for l in lab.status()["links"]:
        for d, end in (("a_to_b", "a"), ("b_to_a", "b")):
            shaped = l.get(d, {}).get("shaped")
            total += l[d]["counters"]["packets"] if shaped else l[end]["tx_packets"]
    return total


# ---- the floor: a bare chain of namespaces ---------------------------------------------------

CHAIN = ("name: chain\nseed: 1\ntopology:\n  kind: explicit\n"
         "  nodes: [{name: h1, role: host}, {name: r1, role: switch}, {name: r2, role: switch},"
         " {name: r3, role: switch}, {name: h2, role: host}]\n"
         "  links: [{a: h1, b: r1}, {a: r1, b: r2}, {a: r2, b: r3}, {a: r3, b: h2}]\n"
         "fabric: {mtu: 1500}\nrdma: {enabled: off}\n")


# The link model on every port with nothing to do but count (a loss of 0 is a shape).
COUNTED = "links: {default: {loss: 0%}}\n"


def bpf_object(tmp):
    obj = Path(tmp) / "fib_redirect.o"
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    argv = ["clang", "-O2", "-g", "-target", "bpf", "-c", REPO / "bench" / "fib_redirect.bpf.c",
            "-o", obj]
    if multiarch:
        argv[1:1] = [f"-I/usr/include/{multiarch}"]
    run(argv, timeout=120)
    return obj


def chain_floor(fabemu, tmp, seconds, obj=None, links=""):
    """Frame-hops per busy CPU-second of one iperf3 TCP flow h1 -> h2 across the chain, by the IP
    stack or (obj) by the BPF program at the routers' ports; `links`: the scenario's links (the
    link model on every port)."""
    with Lab(fabemu, tmp, CHAIN + links, prefix="fc") as lab:
        st = lab.status()
        ports = [(l[e]["node"], l[e]["ifname"]) for l in st["links"] for e in ("a", "b")]
        for node, ifname in ports:
            lab.exec(node, ["ethtool", "-K", ifname, "tso", "off", "gso", "off", "gro", "off"])
            if obj and node.startswith("r"):
                lab.exec(node, ["tc", "qdisc", "add", "dev", ifname, "clsact"])
                lab.exec(node, ["tc", "filter", "add", "dev", ifname, "ingress", "bpf", "da",
                                "obj", obj, "sec", "tc"])
        addr = {n["name"]: n.get("address") for n in st["nodes"]}
        lab.exec("h1", ["ping", "-c", "3", "-i", "0.2", "-q", addr["h2"]])  # neighbours known
        server = lab.spawn("h2", ["iperf3", "-s", "-1"])
        try:
            time.sleep(0.5)
            f0, c0 = frames(lab), cpu_busy_s()
            lab.exec("h1", ["iperf3", "-c", addr["h2"], "-t", str(seconds), "-M", "1448"],
                     timeout=seconds + 60)
            c1, f1 = cpu_busy_s(), frames(lab)
        finally:
            server.kill()
        return (f1 - f0) / max(c1 - c0, 1e-9)


# ---- the calibration's lab -------------------------------------------------------------------

def lab_text(rate_bps, gso=None):
    """The calibration's lab (runtime/calibrate.cpp's scenario_text), with `gso` its queues as
    deep as the calibration makes them."""
    fabric = f"{{mtu: 1500, gso: {gso}}}" if gso else "{mtu: 1500}"
    queue = ", queue: 1M" if gso else ""
    return ("name: cal\nseed: 1\n"
            "topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 4}\n"
            f"fabric: {fabric}\nrdma: {{enabled: off}}\n"
            f"links: {{default: {{rate: {int(rate_bps)}bit{queue}}}}}\n")


def load_size(rate_bps):
    """The calibration's allreduce size at `rate_bps` (runtime/calibrate.cpp's size_for): ~0.25 s
    an iteration, a ring moving 1.75 times it per rank."""
    return min(max(256 << 10, int(rate_bps / 8 * 0.25 / 1.75)), 256 << 20) & ~4095


def allreduce(lab, collective, size, iterations, run_id):
    """One allreduce run by every host's rank (exec --all, as the workload starts them): rank 0's
    result record."""
    p = run([lab.fabemu, "exec", lab.name, "--all", "--", collective, "--collective", "allreduce",
             "--sizes", str(size), "-n", str(iterations), "-w", "1", "--run-id", run_id,
             "--json"], timeout=900)
    for line in p.stdout.splitlines():
        text = line.split("] ", 1)[-1]
        if text.startswith("{") and '"type":"result"' in text.replace(" ", ""):
            record = json.loads(text)
            if record.get("wrong"):
                raise BenchError(f"allreduce of {size} B: {record['wrong']} wrong elements")
            return record
    raise BenchError(f"no result from the allreduce: {p.stdout[-600:]}{p.stderr[-600:]}")


def lab_rows(fabemu, tmp, rate_bps, tag, gso=None):
    """The lab at the calibration's load: frame-hops per busy CPU-second, frame-hops per second,
    busbw over the rate; and the 16K allreduce's seconds per ring step beyond the model."""
    collective = collective_of(fabemu)
    size = load_size(rate_bps)
    with Lab(fabemu, tmp, lab_text(rate_bps, gso), prefix="fc") as lab:
        allreduce(lab, collective, 64 << 10, 2, f"{tag}-warm")  # ranks' pages, ARP, caches
        f0, c0, t0 = frames(lab), cpu_busy_s(), time.monotonic()
        big = allreduce(lab, collective, size, 10, f"{tag}-big")
        t1, c1, f1 = time.monotonic(), cpu_busy_s(), frames(lab)
        small = allreduce(lab, collective, 16 << 10, 20, f"{tag}-small")
    n = small["ranks"]
    model_s = (16 << 10) * 2 * (n - 1) / n * 8 / rate_bps
    step_s = max(0.0, small["time_us"] * 1e-6 - model_s) / (2 * (n - 1))
    return {"per_core": (f1 - f0) / max(c1 - c0, 1e-9), "per_s": (f1 - f0) / (t1 - t0),
            "busy": (c1 - c0) / (t1 - t0), "ratio": big["busbw_gbps"] * 8e9 / rate_bps,
            "step_ms": step_s * 1e3}


def calibrated_rates(fabemu):
    """The calibration's link rates, one frame per skb and with GSO super-frames (None where the
    calibration found none), calibrating first when this boot has not."""
    def rates(d):
        f = {f["id"]: f.get("figures") for f in d["features"]}
        return tuple((f.get(i) or {}).get("link_bps") for i in ("capacity", "capacity_gso"))
    plain, gso = rates(fabemu_json([fabemu, "doctor"], timeout=600))
    if not plain or not gso:
        plain, gso = rates(fabemu_json([fabemu, "doctor", "--calibrate"], timeout=900))
    if not plain:
        raise BenchError("`fabemu doctor --calibrate` measured no capacity")
    return plain, gso


# ---- where the CPU goes ----------------------------------------------------------------------

# (part, pattern of a kernel function): a sample's stack is walked from its leaf to its root,
# and the first frame that matches names the part. Time in interrupts shows at the point where
# interrupts were enabled again (no NMI-driven sampling in a VM), so the interrupt entry in the
# stack names those: the timer's and the IPIs' (remote wake-ups).
PARTS = [
    ("idle", r"(pv_native_safe_halt|default_idle|do_idle|cpu_startup_entry)$"),
    ("timer interrupts (hrtimers: htb/fq watchdogs, TCP timers)",
     r"(sysvec_apic_timer_interrupt|hrtimer_interrupt|__hrtimer_run_queues|hrtimer_run_softirq)$"),
    ("IPIs (wake-ups on the other CPU)", r"(sysvec_call_function_single|sysvec_reschedule_ipi)$"),
    ("link model (BPF)", r"(bpf_prog_\w*fabemu_shape|__bpf_spin_\w+|bpf_skb_ecn_set_ce)$"),
    ("qdiscs (htb, fq, fifo)", r"(htb_\w+|fq_\w+|bfifo_\w+|pfifo_\w+|__qdisc_run|qdisc_\w+|"
                               r"sch_direct_xmit|net_tx_action)$"),
    ("switches' IP forwarding", r"(ip_forward\w*|ip_route_input\w*|fib_\w+|ip_finish_output2|"
                                r"neigh_\w+|ip_rcv_finish\w*)$"),
    ("hosts' TCP", r"(tcp_\w+|__tcp_\w+|inet_\w+|ip_queue_xmit|__ip_queue_xmit|ip_local_deliver\w*|"
                   r"sock_\w+|sk_\w+|release_sock|lock_sock\w*|skb_copy_datagram_iter)$"),
    ("veth and backlogs", r"(veth_\w+|__netif_rx|netif_rx\w*|enqueue_to_backlog|process_backlog|"
                          r"__netif_receive_skb\w*|netif_receive_skb\w*|eth_type_trans|"
                          r"dev_hard_start_xmit|__dev_queue_xmit|ip_rcv|ip_rcv_core|net_rx_action)$"),
    ("scheduler, wake-ups, epoll, futex", r"(schedule|__schedule|try_to_wake_up|finish_task_switch\S*|"
                                          r"ep_poll\w*|do_epoll_wait|futex_\w+|__wake_up\w*)$"),
    ("memory (skbs, slabs, copies)", r"(kmem_cache_\w+|__slab_\w+|___slab_alloc|kmalloc\w*|__kmalloc\w*|"
                                     r"kfree\w*|skb_release\w*|__alloc_skb|skb_clone|_copy_to_iter|"
                                     r"_copy_from_iter|__pi_memcpy)$"),
    ("syscalls (other)", r"(do_syscall_64|entry_SYSCALL_64\w*)$"),
]


def classify(comm, frames):
    if frames and "[kernel" not in frames[0]:
        return f"user space: {comm}"
    for frame in frames:
        m = re.match(r"\s*[0-9a-f]+ (\S+?)\+0x", frame)
        if not m:
            continue
        for part, pattern in PARTS:
            if re.match(pattern, m.group(1)):
                return part
    return "kernel (other)"


def profile(fabemu, tmp, rate_bps, seconds=8):
    """perf record -a -g over the lab at the calibration's load; the share of each part."""
    data = Path(tmp) / "perf.data"
    collective = collective_of(fabemu)
    size = load_size(rate_bps)
    with Lab(fabemu, tmp, lab_text(rate_bps, gso), prefix="fc") as lab:
        allreduce(lab, collective, 64 << 10, 2, "prof-warm")
        load = subprocess.Popen(
            [fabemu, "exec", lab.name, "--all", "--", collective, "--collective", "allreduce",
             "--sizes", str(size), "-n", "40", "-w", "1", "--run-id", "prof", "--json"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(2)
            run(["perf", "record", "-F", "999", "-a", "-g", "-o", data, "--", "sleep",
                 str(seconds)], timeout=seconds + 120)
        finally:
            load.kill()
            load.wait()
    text = run(["perf", "script", "-i", data], timeout=600).stdout
    parts = {}
    for block in text.split("\n\n"):
        lines = [l for l in block.splitlines() if l.strip()]
        if not lines:
            continue
        part = classify(lines[0].split()[0], lines[1:])
        parts[part] = parts.get(part, 0) + 1
    total = sum(parts.values())
    busy = total - parts.get("idle", 0)
    print(f"\nwhere the CPU goes: perf record -a -g, {seconds} s of the lab at "
          f"{rate_bps / 1e6:g} Mbit/s links ({total} samples; share of busy time)")
    for part, n in sorted(parts.items(), key=lambda kv: -kv[1]):
        if part != "idle":
            print(f"  {100 * n / busy:5.1f}%  {part}")
    print(f"  (idle: {100 * parts.get('idle', 0) / total:.1f}% of all samples)")


# ---- main ------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build" / "emulator" / "fabemu"))
    ap.add_argument("--peer", help="a second fabemu whose lab rows run beside the first's")
    ap.add_argument("--rate", help="the lab's link rate (default: the calibrated one, "
                                   "`fabemu doctor --calibrate`)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5, help="of each floor's iperf3 flow")
    ap.add_argument("--profile", action="store_true", help="also where the lab's CPU goes")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("frame_cost.py: needs root (it builds labs)")
    rate, gso_rate = calibrated_rates(args.fabemu)
    rate = parse_rate(args.rate) if args.rate else rate
    bins = {"lab": args.fabemu}
    if args.peer:
        bins["peer"] = args.peer
    rows = {k: [] for k in ["ip", "bpf", "counted", "shaped", "gso"] + list(bins)}
    with tempfile.TemporaryDirectory(prefix="fabemu-frame-cost-") as tmp:
        obj = bpf_object(tmp)
        for i in range(args.runs):
            rows["ip"].append(chain_floor(args.fabemu, tmp, args.seconds))
            rows["bpf"].append(chain_floor(args.fabemu, tmp, args.seconds, obj))
            rows["counted"].append(chain_floor(args.fabemu, tmp, args.seconds, links=COUNTED))
            rows["shaped"].append(chain_floor(args.fabemu, tmp, args.seconds,
                                              links=f"links: {{default: {{rate: {int(10 * rate)}bit}}}}\n"))
            for name, fabemu in bins.items():
                rows[name].append(lab_rows(fabemu, tmp, rate, f"{os.getpid()}-{name}-{i}"))
            if gso_rate:
                rows["gso"].append(lab_rows(args.fabemu, tmp, gso_rate, f"{os.getpid()}-gso-{i}",
                                            gso="64K"))
            print(f"run {i + 1}/{args.runs}: floor ip {rows['ip'][-1]:.3g}, bpf "
                  f"{rows['bpf'][-1]:.3g}; " + ", ".join(
                      f"{n} {rows[n][-1]['per_core']:.3g} frame-hops/core-s" for n in bins),
                  flush=True)
        ip, bpf = median(rows["ip"]), median(rows["bpf"])
        print(f"\nframe-hops per busy CPU-second, medians of {args.runs} "
              f"({os.cpu_count()} CPUs; MTU 1500 frames, offloads off):")
        print(f"  {'floor: IP stack forwarding (chain of 3 routers)':58s} {ip:10.3g}   1.00")
        print(f"  {'floor: BPF fib_lookup + redirect (same chain)':58s} {bpf:10.3g}   "
              f"{bpf / ip:4.2f}")
        for k, what in (("counted", "chain, the link model on every port (counting only)"),
                        ("shaped", f"chain, links at {10 * rate / 1e6:g} Mbit/s (10x the lab's)")):
            v = median(rows[k])
            print(f"  {what:58s} {v:10.3g}   {v / ip:4.2f}")
        for name, fabemu in bins.items():
            m = {k: median(r[k] for r in rows[name]) for k in rows[name][0]}
            print(f"  {'lab ' + name + f' ({rate / 1e6:g} Mbit/s links, 8-rank allreduce)':58s} "
                  f"{m['per_core']:10.3g}   {m['per_core'] / ip:4.2f}")
            print(f"      {fabemu}: {m['per_s']:.3g} frame-hops/s at {m['busy']:.2f} busy CPUs, "
                  f"busbw {m['ratio']:.2f}x the rate; a 16K allreduce's ring step "
                  f"{m['step_ms']:.3f} ms beyond the model")
        if rows["gso"]:
            m = {k: median(r[k] for r in rows["gso"]) for k in rows["gso"][0]}
            lab = median(r["per_core"] for r in rows["lab"])
            print(f"  {f'lab, fabric.gso 64K ({gso_rate / 1e6:g} Mbit/s links, calibrated)':58s} "
                  f"{m['per_core']:10.3g}   {m['per_core'] / ip:4.2f}")
            print(f"      {m['per_s']:.3g} frame-hops/s at {m['busy']:.2f} busy CPUs, busbw "
                  f"{m['ratio']:.2f}x the rate; ring step {m['step_ms']:.3f} ms beyond the model; "
                  f"{m['per_core'] / lab:.2f}x the lab's frame-hops per core-s, "
                  f"{m['per_s'] / median(r['per_s'] for r in rows['lab']):.2f}x per s")
        if args.peer:
            for k, what in (("per_core", "frame-hops per core-s"), ("step_ms", "step ms")):
                a = median(r[k] for r in rows["lab"])
                b = median(r[k] for r in rows["peer"])
                print(f"  lab / peer, {what}: {a / b if b else float('nan'):.2f}")
        if args.profile:
            profile(args.fabemu, tmp, rate)


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"frame_cost.py: {e}")
