#!/usr/bin/python3
"""Benchmark: fabemu bring-up/teardown of 16..512-host fabrics, kernel memory per host, and
Mininet's 512-host tree beside it. See README.md. sudo /usr/bin/python3 bench/fabric_build.py"""
import argparse
import ctypes
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchlib import BenchError, json_output

REPO = Path(__file__).resolve().parent.parent
RUN_ROOT, NETNS_DIR = Path("/run/fabemu"), Path("/run/netns")
BENCH_LAB = re.compile(r"^b(\d+)-\d+$")  # our lab names: b<pid>-<counter>, <= 12 chars
# Kernel memory; MemAvailable moves by 100s of MiB as other programs come and go: not a headline.
KERNEL_KEYS = ("Slab", "Percpu", "VmallocUsed")
MEM_KEYS = KERNEL_KEYS + ("SUnreclaim", "MemAvailable")
MEM_HOSTS = 512  # the fabric whose memory is measured, and the one set beside Mininet
MEM_FABRIC = f"leaf-spine {MEM_HOSTS}"
MN_ARGV = ["mn", "--topo", "tree,depth=3,fanout=8", "--switch", "lxbr",
           "--controller", "none", "--test", "none"]
CLONE_NEWNET = 0x40000000
LAB_IDS = itertools.count(1)  # lab names b<pid>-<n>: <= 12 chars for --runs <= 100


def fabrics(tmp):
    """(label, scenario file) per fabric: 8 hosts a leaf as in the 512-host target, >= 2 spines
    for ECMP; rdma off, as soft-RoCE devices would dominate bring-up and aren't measured here."""
    topologies = [(f"leaf-spine {h}", f"{{kind: leaf-spine, leaves: {h // 8}, "
                   f"spines: {min(8, max(2, h // 16))}, hosts_per_leaf: 8}}")
                  for h in (16, 64, 128, 256, 512)]
    topologies += [(f"fat-tree k={k}", f"{{kind: fat-tree, k: {k}}}") for k in (4, 6, 8)]
    for label, topology in topologies:
        path = tmp / (re.sub(r"[^a-z0-9]+", "-", label) + ".yaml")
        path.write_text(f"name: bench\nseed: 1\ntopology: {topology}\nrdma: {{enabled: off}}\n"
                        "fabric: {switch: router, ecmp_hash: l4, mtu: 1500}\n")
        yield label, path


def timed(argv, secs=300):
    """Run argv (never through a shell); wall seconds measured around the child process."""
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=secs)
    return time.perf_counter() - t0, p


def tail(text, lines=8):
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


def kernel_seconds(down):
    """How long `down` waited for the kernel to free the lab (0 when it did not wait)."""
    return float(down["kernel_seconds"] or 0.0)


def phases(up):
    """Where `up` spent its time: seconds by phase, in up's order."""
    return {p["phase"]: p["seconds"] for p in up["phases"]}


def summary(up):
    """up's counts as its summary line words them (for the --big lines)."""
    return (f"up in {up['seconds']:.2f} s: {up['hosts']} hosts, {up['switches']} switches, "
            f"{up['links']} links, {up['routes']} routes")


def meminfo(settle=0.5):
    """kB figures from /proc/meminfo and bytes per slab cache, after letting the kernel's
    deferred frees (RCU, the netns cleanup worker) settle."""
    time.sleep(settle)
    fields = (line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    mem = {key: int(value.split()[0]) for key, value in fields if key in MEM_KEYS}
    slabs = {f[0]: int(f[2]) * int(f[3])  # num_objs * objsize
             for f in map(str.split, Path("/proc/slabinfo").read_text().splitlines()[2:])}
    return mem, slabs


def mem_delta(before, after):
    """Growth in kB (MemAvailable: the amount that went away), kernel total, top slab caches."""
    (m0, s0), (m1, s1) = before, after
    d = {k: (m0[k] - m1[k]) if k == "MemAvailable" else (m1[k] - m0[k]) for k in m0 if k in m1}
    d["kernel"] = sum(d.get(k, 0) for k in KERNEL_KEYS)
    grown = sorted(((s1[c] - s0.get(c, 0)) // 1024, c) for c in s1)
    d["top_slabs"] = {c: kb for kb, c in reversed(grown[-4:])}
    return d


def pins(lab):
    """The namespaces of a lab as fabemu pins them (its tmpfs; /run/netns names only for small
    labs)."""
    return len(list((RUN_ROOT / lab / "ns").glob("*")))


def bench_objects(pid=r"\d+"):
    """Journals (/run/fabemu/LAB) and namespaces (fabemu-LAB-NODE) of bench labs."""
    labs = [p.name for p in RUN_ROOT.glob("b*") if re.fullmatch(rf"b{pid}-\d+", p.name)]
    return sorted(labs) + sorted(p.name for p in NETNS_DIR.glob("fabemu-b*")
                                 if re.match(rf"fabemu-b{pid}-\d+-", p.name))


def preflight(fabemu):
    """Labs left by a benchmark that died are removed; one that is alive would disturb figures."""
    for lab in (name for name in bench_objects() if BENCH_LAB.match(name)):
        pid = int(BENCH_LAB.match(lab).group(1))
        if Path(f"/proc/{pid}").exists():
            print(f"warning: lab {lab} is a running benchmark's: figures will be disturbed")
        else:
            print(f"leftover lab {lab} removed: exit {timed([fabemu, 'down', lab])[1].returncode}")
    others = [p.name for p in RUN_ROOT.glob("[!.]*") if p.is_dir() and not BENCH_LAB.match(p.name)]
    for lab in others:
        print(f"note: fabemu lab {lab} is up: it shares the kernel and CPUs with this run")


def cycle(fabemu, scenario, measure_memory=False, down_flags=()):
    """One `up` and `down` under a fresh lab name; always torn down, on error and Ctrl-C too.
    `down` waits for the kernel to free the lab (unless down_flags has --no-wait) and says
    how long that took: total_wall - kernel_s is up+down without that wait."""
    lab = f"b{os.getpid()}-{next(LAB_IDS)}"
    run, mem_before = {"lab": lab}, meminfo() if measure_memory else None
    try:
        run["up_wall"], p = timed([fabemu, "up", str(scenario), "--lab", lab, "-q", "--json"])
        up = json_output(p)
        run.update(up_self=float(up["seconds"]), hosts=up["hosts"], switches=up["switches"],
                   links=up["links"], routes=up["routes"], netns=pins(lab), phases=phases(up))
        if measure_memory:  # fabemu has exited: all that is left is what the kernel holds
            run["memory_kb"] = mem_delta(mem_before, meminfo())
    finally:
        t0 = time.perf_counter()
        down_wall, p = timed([fabemu, "down", lab, "--json", *down_flags])
    down = json_output(p)
    run.update(down_wall=down_wall, down_self=float(down["labs"][0]["seconds"]),
               kernel_s=kernel_seconds(down), total_wall=run["up_wall"] + down_wall)
    if measure_memory:  # `down` may return before the kernel's netns cleanup worker is done
        slab_left = mem_before[0]["Slab"] + run["memory_kb"]["Slab"] / 20
        while meminfo(0.02)[0]["Slab"] > slab_left and time.perf_counter() - t0 < 10:
            pass
        run["down_freed"] = time.perf_counter() - t0
    return run


def empty_netns_cost(n):
    """Kernel memory of n empty network namespaces (loopback only): the floor under any
    namespace-based emulator, whatever it puts inside. A thread (network namespaces are per
    thread) unshares n times; an fd on each keeps it alive while we read /proc/meminfo."""
    fds, before = [], meminfo()

    def make():
        libc = ctypes.CDLL(None, use_errno=True)
        while len(fds) < n and libc.unshare(CLONE_NEWNET) == 0:
            fds.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY))

    worker = threading.Thread(target=make)
    worker.start()
    worker.join()
    after = meminfo()
    for fd in fds:
        os.close(fd)
    return len(fds), mem_delta(before, after)


def free_and_wait(scratch, fds):
    """Closes `fds` and deletes the namespace `scratch`, and returns the seconds until the kernel
    has freed them, found the way `fabemu down` finds it: a veth from `scratch` into a watcher
    namespace goes when the kernel frees `scratch`, then a sentinel namespace dropped after it
    (joined the same way) is freed behind everything dropped before. (The veth is needed: the
    kernel may drop a lazily unmounted namespace's last reference later, from a worker.)"""
    watcher, sentinel = f"fabemu-floor-{os.getpid()}-w", f"fabemu-floor-{os.getpid()}-s"

    def veth(ns, peer):
        subprocess.run(["ip", "-n", ns, "link", "add", "x", "type", "veth", "peer", "name", peer,
                        "netns", watcher], check=True)

    def gone(name):
        deadline = time.perf_counter() + 60
        while subprocess.run(["ip", "-n", watcher, "link", "show", name],
                             capture_output=True).returncode == 0:
            if time.perf_counter() > deadline:
                raise BenchError("the kernel was still freeing namespaces after 60 s")
            time.sleep(0.002)

    subprocess.run(["ip", "netns", "add", watcher], check=True)
    try:
        veth(scratch, "probe")
        t0 = time.perf_counter()
        for fd in fds:
            os.close(fd)
        fds.clear()
        subprocess.run(["ip", "netns", "del", scratch], check=True)
        gone("probe")
        subprocess.run(["ip", "netns", "add", sentinel], check=True)
        veth(sentinel, "sentinel")
        subprocess.run(["ip", "netns", "del", sentinel], check=True)
        gone("sentinel")
        return time.perf_counter() - t0
    finally:
        subprocess.run(["ip", "netns", "del", watcher], check=True)


def floor_times(namespaces, veths, emit):
    """What the kernel alone takes for the same objects, with the least user space around it:
    `namespaces` network namespaces unshared by one thread (kept by an fd each), and `veths`
    veth pairs made by one `ip -batch` inside one scratch namespace (never the machine's); then
    freeing them all (the fds closed, the scratch namespace deleted) until the kernel is done."""
    fds = []

    def make():
        libc = ctypes.CDLL(None, use_errno=True)
        while len(fds) < namespaces and libc.unshare(CLONE_NEWNET) == 0:
            fds.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY))

    t0 = time.perf_counter()
    worker = threading.Thread(target=make)
    worker.start()
    worker.join()
    ns_s, made = time.perf_counter() - t0, len(fds)
    scratch = f"fabemu-floor-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", scratch], check=True)
    try:
        batch = "".join(f"link add f{i}a type veth peer name f{i}b\n" for i in range(veths))
        t0 = time.perf_counter()
        subprocess.run(["ip", "-n", scratch, "-batch", "-"], input=batch, text=True, check=True)
        veth_s = time.perf_counter() - t0
        free_s = free_and_wait(scratch, fds)
    finally:
        for fd in fds:
            os.close(fd)
        if Path(f"/run/netns/{scratch}").exists():
            subprocess.run(["ip", "netns", "del", scratch], check=False)
    print(f"floor: {made} empty network namespaces by one thread {ns_s:.2f} s; {veths} veth "
          f"pairs by one `ip -batch` in one namespace {veth_s:.2f} s; the kernel freeing them all "
          f"{free_s:.2f} s")
    emit({"bench": "floor", "namespaces": made, "namespaces_s": ns_s, "veths": veths,
          "veths_s": veth_s, "free_s": free_s})


def back_to_back(fabemu, scenario, cycles, emit):
    """`up` then `down` of the same fabric, again and again without a pause: with `down`
    waiting for the kernel to free the lab (its default), and with `down --no-wait`, where each
    `up` runs while the kernel still frees the last lab."""
    print()
    for how, flags in (("down waits for the kernel", ()), ("down --no-wait", ("--no-wait",))):
        time.sleep(2)  # whatever ran before is freed
        rs = [cycle(fabemu, scenario, down_flags=flags) for _ in range(cycles)]
        totals, ups = [r["total_wall"] for r in rs], [r["up_wall"] for r in rs]
        print(f"{MEM_FABRIC}, {cycles} cycles back to back, {how}: up+down "
              + ", ".join(f"{t:.2f}" for t in totals) + f" s, worst {max(totals) / totals[0]:.2f}x"
              + " the first; up " + ", ".join(f"{t:.2f}" for t in ups) + " s", flush=True)
        emit({"bench": "back_to_back", "fabric": MEM_FABRIC, "down_flags": list(flags),
              "totals": totals, "ups": ups})


def big_fabrics(fabemu, tmp, emit):
    """4096-host leaf-spine and fat-tree k=16, once each: up, down, kernel memory per host,
    and the time of `status` (a summary by tier) and `status --json` (every row)."""
    for label, topology in (("leaf-spine 4096", "{kind: leaf-spine, leaves: 256, spines: 16, "
                             "hosts_per_leaf: 16}"), ("fat-tree k=16", "{kind: fat-tree, k: 16}")):
        path = tmp / (re.sub(r"[^a-z0-9]+", "-", label) + ".yaml")
        path.write_text(f"name: bench\nseed: 1\ntopology: {topology}\nrdma: {{enabled: off}}\n"
                        "fabric: {switch: router, ecmp_hash: l4, mtu: 1500}\n")
        lab = f"b{os.getpid()}-{next(LAB_IDS)}"
        before = meminfo(2)
        try:
            up_s, p = timed([fabemu, "up", str(path), "--lab", lab, "-q", "--json"], 900)
            up = json_output(p)
            hosts = up["hosts"]
            mem = mem_delta(before, meminfo(2))
            status_s, _ = timed([fabemu, "status", lab])
            json_s, pj = timed([fabemu, "status", lab, "--json"])
            by_phase = phases(up)
        finally:
            down_s, pd = timed([fabemu, "down", lab, "--json"], 900)
        kernel_s = kernel_seconds(json_output(pd))
        print(f"{label}: {summary(up)}; up {up_s:.1f} s ("
              + ", ".join(f"{k} {v:.2f}" for k, v in by_phase.items()) + f"), down {down_s:.2f} s"
              f" ({kernel_s:.2f} s of it the kernel freeing the lab)"
              f", {mem['kernel'] / max(hosts, 1):.0f} KiB of kernel memory per host, status "
              f"{status_s:.2f} s, status --json {json_s:.2f} s ({len(pj.stdout) // 1024} KiB)",
              flush=True)
        emit({"bench": "big", "fabric": label, "up_s": up_s, "down_s": down_s,
              "kernel_s": kernel_s, "phases": by_phase,
              "kernel_kb": mem["kernel"], "hosts": hosts, "status_s": status_s,
              "status_json_s": json_s})
        time.sleep(1)  # `down` waited for the kernel to free the lab


def compare_mininet(runs, fabemu_row, emit):
    """Mininet's 512-host tree with Linux bridges, timed end to end (build + tear down)."""
    if not shutil.which("mn"):
        print("\nmininet not installed: skipped (apt-get install mininet bridge-utils)")
        return
    print(f"\nmininet: {runs} run(s) (default min(--runs, 3): each takes 0.5-3 min)")
    walls = []
    for i in range(runs):
        print(f"  mininet run {i + 1}/{runs} ...", flush=True)
        wall, p = timed(MN_ARGV, secs=1800)
        if p.returncode != 0 or "*** Done" not in p.stderr:  # mn exits 0 on its own errors
            err = p.stderr.split("*** Removing excess")[0]  # before the cleanup mn runs then
            print(f"mn failed (exit {p.returncode}); its stderr ends:\n{tail(err)}")
        else:
            walls.append(wall)
        clean_mininet()
    if walls:
        med = statistics.median(walls)
        # Mininet's own stop deletes its links one by one, and its hosts' namespaces (then
        # holding a loopback each) are freed by the kernel after it exits.
        total, returns = fabemu_row["total_wall"], fabemu_row["total_wall"] - fabemu_row["kernel_s"]
        print(f"mininet tree depth=3 fanout=8 (512 hosts, lxbr): {med:.1f} s (median of "
              f"{len(walls)}, [{min(walls):.1f}..{max(walls):.1f}])  -> fabemu 512 up+down is "
              f"{med / total:.1f}x faster ({total:.2f} s, the kernel's freeing waited for), "
              f"{med / returns:.1f}x ({returns:.2f} s, without that wait)")
        emit({"bench": "mininet", "argv": MN_ARGV, "median_wall": med, "walls": walls,
              "ratio": med / total, "ratio_no_wait": med / returns})


def clean_mininet():
    """Says so when Mininet left bridges or veths behind, and leaves them: `mn -c` would also
    kill every `ping` and controller on the machine and delete every OVS bridge and
    /tmp/*.log, which are not ours to touch. A clean Mininet exit removes all it made."""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    left = re.findall(r"^\d+: (s\d+|[hs]\d+-eth\d+)[@:]", links, re.M)
    if left:
        print(f"  mininet left {len(left)} bridges/links behind ({left[0]}, ...); "
              "`mn -c` removes them (it also kills every ping on the machine)")


def mib(kb, sign=""):
    return f"{round(kb / 1024):{sign}d} MiB"


def measure_fabrics(fabemu, tmp, runs, emit):
    """The table: median wall time of `up`, `down` and both, per fabric; then, for 512 hosts,
    when the kernel is done and where `up` spends its time (`up --json`'s phases)."""
    print(f"\n{'fabric':<16}{'hosts':>6}{'switches':>9}{'links':>6}{'routes':>7}{'netns':>6}"
          f"{'up(s)':>7}{'down(s)':>8}{'up+down(s)':>11}  {'[min..max]':<13}"
          "fabemu says up/down/kernel")
    rows, mem_runs = {}, []
    for label, scenario in fabrics(tmp):
        rs = []
        for _ in range(runs):
            rs.append(cycle(fabemu, scenario, measure_memory=label == MEM_FABRIC))
            time.sleep(0.5)  # `down` waited for the kernel; a pause for whatever else runs
        med = {k: statistics.median(r[k] for r in rs) for k, v in rs[0].items()
               if isinstance(v, float)}  # up/down/total wall, up/down self-reported
        r, lo, hi = rs[0], min(x["total_wall"] for x in rs), max(x["total_wall"] for x in rs)
        print(f"{label:<16}{r['hosts']:>6}{r['switches']:>9}{r['links']:>6}{r['routes']:>7}"
              f"{r['netns']:>6}{med['up_wall']:>7.2f}{med['down_wall']:>8.2f}"
              f"{med['total_wall']:>11.2f}  {f'[{lo:.2f}..{hi:.2f}]':<13}"
              f"{med['up_self']:.2f} / {med['down_self']:.2f} / {med['kernel_s']:.2f}", flush=True)
        med["phases"] = {k: statistics.median(r["phases"][k] for r in rs) for k in r["phases"]}
        rows[label] = med
        mem_runs += [r["memory_kb"] for r in rs if "memory_kb" in r]
        emit({"bench": "fabric", "fabric": label, "median": med, "runs": rs})
    big = rows[MEM_FABRIC]
    print(f"{MEM_FABRIC}: `down` waited {big['kernel_s']:.2f} s for the kernel to free it (Slab "
          f"back {big['down_freed']:.2f} s after `down` began); up+down without that wait "
          f"{big['total_wall'] - big['kernel_s']:.2f} s; up by phase: "
          + ", ".join(f"{k} {v:.2f} s" for k, v in big["phases"].items()))
    return rows, mem_runs


def report_memory(mem_runs, emit):
    """Kernel memory the 512-host lab holds once fabemu has exited, per host, beside the
    cost of the same number of empty namespaces."""
    mem = {k: statistics.median(m[k] for m in mem_runs) for k in MEM_KEYS + ("kernel",)}
    print(f"\nmemory: {MEM_HOSTS}-host fabric: {mib(mem['kernel'])} kernel memory, "
          f"{mem['kernel'] / MEM_HOSTS:.0f} KiB per host (median of {len(mem_runs)}; Slab "
          f"{mib(mem['Slab'], '+')} of it unreclaimable {mib(mem['SUnreclaim'], '+')}, Percpu "
          f"{mib(mem['Percpu'], '+')}, vmalloc {mib(mem['VmallocUsed'], '+')}; MemAvailable "
          f"{mib(-mem['MemAvailable'], '+')}, which other programs move too)")
    top = mem_runs[0]["top_slabs"].items()
    print("        grew most: " + ", ".join(f"{cache} {mib(kb, '+')}" for cache, kb in top))
    made, empty = empty_netns_cost(MEM_HOSTS)
    print(f"memory: {made} empty network namespaces: {mib(empty['kernel'])}, "
          f"{empty['kernel'] / max(made, 1):.0f} KiB each (Percpu "
          f"{empty['Percpu'] / max(made, 1):.0f} KiB each; per-CPU parts grow with the core count)")
    emit({"bench": "memory", "fabric": MEM_FABRIC, "median_kb": mem, "per_host_kib":
          mem["kernel"] / MEM_HOSTS, "runs": mem_runs, "empty_netns": {"count": made, "kb": empty}})


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5, choices=range(1, 101), metavar="N(1-100)")
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--no-mininet", action="store_true")
    ap.add_argument("--mininet-runs", type=int, help="default min(--runs, 3): 0.5-3 min each")
    ap.add_argument("--json", type=Path, help="also write JSON lines here")
    ap.add_argument("--big", action="store_true",
                    help="also 4096-host leaf-spine and fat-tree k=16 (a minute or two)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("fabric_build.py needs root (sudo /usr/bin/python3 bench/fabric_build.py)")
    if not os.access(args.fabemu, os.X_OK):
        sys.exit(f"no fabemu binary at {args.fabemu} (build it, or pass --fabemu PATH)")
    out = args.json.open("w") if args.json else None

    def emit(record):
        if out:
            print(json.dumps(record), file=out, flush=True)

    with tempfile.TemporaryDirectory(prefix="fabemu-bench-") as tmp:
        # A snapshot, so a concurrent rebuild of build/ can't swap the binary mid-run.
        fabemu = str(shutil.copy2(args.fabemu, Path(tmp) / "fabemu"))
        load = os.getloadavg()[0]
        commit = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                                capture_output=True, text=True).stdout.strip() or "?"
        print(f"fabemu bring-up benchmark, {time.strftime('%Y-%m-%d %H:%M')}, "
              f"{os.cpu_count()} cores, kernel {os.uname().release}, fabemu {commit}, "
              f"load average {load:.2f}{' (busy: expect noisier times)' if load > 0.5 else ''}"
              f", median of {args.runs} run(s)")
        emit({"bench": "machine", "cores": os.cpu_count(), "kernel": os.uname().release,
              "commit": commit, "loadavg": load, "runs": args.runs})
        preflight(fabemu)
        rows, mem_runs = measure_fabrics(fabemu, Path(tmp), args.runs, emit)
        report_memory(mem_runs, emit)  # before anything else leaves namespaces to free
        time.sleep(2)
        floor_times(MEM_HOSTS + 72, 1024, emit)
        time.sleep(2)
        back_to_back(fabemu, Path(tmp) / "leaf-spine-512.yaml", 5, emit)
        if args.big:
            print()
            big_fabrics(fabemu, Path(tmp), emit)
        if args.no_mininet:
            print("\nmininet: skipped (--no-mininet)")
        else:
            mn_runs = args.mininet_runs or min(args.runs, 3)
            compare_mininet(mn_runs, rows[MEM_FABRIC], emit)

    left = bench_objects(os.getpid())
    if left:
        print(f"ERROR: bench objects left behind: {left[:5]}", file=sys.stderr)
        return 1
    print(f"\nno bench namespaces or labs left; load average now {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, subprocess.TimeoutExpired) as e:
        sys.exit(f"benchmark broke: {e}")
    except KeyboardInterrupt:
        sys.exit("interrupted (labs torn down)")
