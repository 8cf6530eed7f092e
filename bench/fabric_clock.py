#!/usr/bin/python3
"""Benchmark: programs on the real fabric's clock (`hosts: {clock: fabric}`, `exec --clock`).
Does a program in a dilated lab time itself in the real fabric's units, and which do not?
Sections (all by default):
  clock     a 2-host lab at x20: `sleep 1` (wall clock it takes), Python's clocks, sleeps and
            timed waits, and what a clock read costs under libfaketime.so.1 and libfaketimeMT
  tools     the same lab: ping (kernel timestamps) and ping -U, iperf3, sockperf, perftest (where
            the lab has rxe): what each prints on the fabric's clock beside the wall clock's / N
  torch     scenarios/ai-400g.yaml at --time-scale (3000): torch.distributed's all_reduce timed by
            the program itself with time.perf_counter on the fabric's clock
            (bench/fabric_clock_allreduce.py), against fabemu-collective's Gloo allreduce in the
            same lab (the wall clock / N); median of --runs runs each, and their ratio
    sudo /usr/bin/python3 bench/fabric_clock.py [--sections clock,tools,torch] [--runs 3]"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import BenchError, fabemu_json, median, run

REPO = Path(__file__).resolve().parent.parent
FAKETIME_DIR = "/usr/lib/x86_64-linux-gnu/faketime"


def timed(argv, timeout=3600, check=True):
    start = time.monotonic()
    p = run(argv, timeout, check)
    return p, time.monotonic() - start


class Lab:
    """A lab up for a `with` block, torn down whatever happens."""

    def __init__(self, fabemu, scenario, name, extra=()):
        self.fabemu, self.scenario, self.name, self.extra = fabemu, scenario, name, list(extra)

    def __enter__(self):
        fabemu_json([self.fabemu, "up", self.scenario, "--lab", self.name, "-q",
                     "--accept-degraded"] + self.extra, timeout=3600)
        return self

    def __exit__(self, *exc):
        run([self.fabemu, "down", self.name], timeout=3600, check=False)

    def exec(self, node, argv, clock="fabric", timeout=3600, check=True):
        return timed([self.fabemu, "exec", f"{self.name}:{node}", "--clock", clock, "--"] + argv,
                     timeout, check)

    def spawn(self, node, argv, clock="fabric"):
        return subprocess.Popen([self.fabemu, "exec", f"{self.name}:{node}", "--clock", clock,
                                 "--"] + argv, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)

    def address(self, node):
        status = fabemu_json([self.fabemu, "status", self.name])
        return next(n["address"] for n in status["nodes"] if n["name"] == node)


SMALL_N = 20
SMALL = f"""name: fc
time_scale: {SMALL_N}
topology:
  kind: explicit
  nodes: [{{name: h1, role: host}}, {{name: sw, role: switch}}, {{name: h2, role: host}}]
  links: [{{a: h1, b: sw}}, {{a: sw, b: h2}}]
links:
  default: {{rate: 10gbit}}
rdma: {{enabled: auto}}
"""

PYTHON_CLOCKS = r"""
import os, queue, select, threading, time
def wall(): return os.times().elapsed   # times(2): not faked
def lock():
    l = threading.Lock(); l.acquire(); l.acquire(timeout=1)
def get():
    try: queue.Queue().get(timeout=1)
    except queue.Empty: pass
for name, f in [("time.sleep(1)", lambda: time.sleep(1)),
                ("select.select(timeout=1)", lambda: select.select([], [], [], 1)),
                ("select.poll().poll(1000)", lambda: select.poll().poll(1000)),
                ("select.epoll().poll(1)", lambda: select.epoll().poll(1)),
                ("threading.Event().wait(1)", lambda: threading.Event().wait(1)),
                ("Lock.acquire(timeout=1)", lock), ("queue.Queue().get(timeout=1)", get)]:
    w, p, m, t = wall(), time.perf_counter(), time.monotonic(), time.time()
    f()
    print(f"{name:30} perf_counter {time.perf_counter() - p:6.3f} s  monotonic "
          f"{time.monotonic() - m:6.3f} s  time {time.time() - t:6.3f} s  wall {wall() - w:6.2f} s",
          flush=True)
"""

CLOCK_COST = r"""
import os, time
n = 200000
w = os.times().elapsed
for _ in range(n): time.monotonic()
print(f"{(os.times().elapsed - w) / n * 1e9:.0f}")
"""


def section_clock(args, tmp):
    print(f"\n## clock: a lab dilated x{SMALL_N}, hosts' programs on the fabric's clock")
    with Lab(args.fabemu, tmp / "fc.yaml", args.lab + "c") as lab:
        _, wall = lab.exec("h1", ["sleep", "1"])
        print(f"sleep 1: {wall:.2f} s of wall clock (x{SMALL_N}: {SMALL_N} s expected)")
        _, wall = lab.exec("h1", ["sleep", "1"], clock="wall")
        print(f"sleep 1 with --clock wall: {wall:.2f} s of wall clock")
        p, _ = lab.exec("h1", ["/usr/bin/python3", "-c", PYTHON_CLOCKS])
        print(p.stdout, end="")
    print("\nwhat one time.monotonic() costs in Python (200000 calls, wall clock), no lab:")
    for name, env in [("no preload", {}),
                      ("libfaketime.so.1", {"LD_PRELOAD": f"{FAKETIME_DIR}/libfaketime.so.1"}),
                      ("libfaketimeMT.so.1", {"LD_PRELOAD": f"{FAKETIME_DIR}/libfaketimeMT.so.1"})]:
        env = dict(os.environ, **env, FAKETIME="+0 x0.05") if env else dict(os.environ)
        ns = [float(subprocess.run(["/usr/bin/python3", "-c", CLOCK_COST], env=env, text=True,
                                   capture_output=True, check=True).stdout) for _ in range(3)]
        print(f"  {name:20} {median(ns):6.0f} ns (median of 3)")


def last_line(text, pattern):
    lines = [l for l in text.splitlines() if re.search(pattern, l)]
    return lines[-1].strip() if lines else "(no such line: " + pattern + ")"


def section_tools(args, tmp):
    print(f"\n## tools: x{SMALL_N}, 10 Gbit/s links; on the fabric's clock, and the wall clock's "
          f"figure / {SMALL_N}")
    with Lab(args.fabemu, tmp / "fc.yaml", args.lab + "t") as lab:
        h2 = lab.address("h2")
        for flags in ([], ["-U"]):
            fab, wall_s = lab.exec("h1", ["ping", "-c", "5", "-i", "0.2"] + flags + [h2])
            wall, _ = lab.exec("h1", ["ping", "-c", "5", "-i", "0.2"] + flags + [h2], clock="wall")
            print(f"ping {' '.join(flags):2} fabric: {last_line(fab.stdout, 'rtt')} "
                  f"({wall_s:.1f} s of wall)")
            print(f"ping {' '.join(flags):2} wall:   {last_line(wall.stdout, 'rtt')}")
        for clock in ("fabric", "wall"):
            server = lab.spawn("h2", ["iperf3", "-s", "-1", "-p", "5301"], clock=clock)
            time.sleep(1)
            p, wall_s = lab.exec("h1", ["iperf3", "-c", h2, "-p", "5301", "-t", "1"], clock=clock,
                                 check=False)
            server.wait(timeout=120)
            print(f"iperf3 -t 1, both ends on the {clock} clock ({wall_s:.1f} s of wall):")
            print("  " + last_line(p.stdout, "sender"))
            print("  " + last_line(p.stdout, "receiver"))
        for clock in ("fabric", "wall"):
            server = lab.spawn("h2", ["timeout", "300", "sockperf", "sr", "-i", h2, "-p", "11311"],
                               clock="wall")
            time.sleep(1)
            p, wall_s = lab.exec("h1", ["sockperf", "pp", "-i", h2, "-p", "11311", "-t", "1"],
                                 clock=clock, check=False)
            server.kill()
            server.wait()
            print(f"sockperf pp -t 1 on the {clock} clock ({wall_s:.1f} s of wall):")
            print("  " + last_line(p.stdout + p.stderr, r"Total Run\]"))
            print("  " + last_line(p.stdout + p.stderr, "Summary: Latency"))
        status = fabemu_json([args.fabemu, "status", lab.name])
        if status["rdma"]["mode"] != "rxe":
            print(f"perftest: not run, the lab has no rxe ({status['rdma'].get('reason', '')})")
        else:
            for clock in ("fabric", "wall"):
                server = lab.spawn("h2", ["ib_write_lat", "-d", "fabemu-" + lab.name + "-h2",
                                          "-x", "1"], clock=clock)
                time.sleep(1)
                p, _ = lab.exec("h1", ["ib_write_lat", "-d", "fabemu-" + lab.name + "-h1", "-x",
                                       "1", h2], clock=clock, check=False)
                server.wait(timeout=120)
                print(f"ib_write_lat on the {clock} clock: "
                      + last_line(p.stdout, r"^\s*2\s"))


def collective_ref(args, lab, sizes, rid):
    out = f"/run/fabemu/{lab.name}/shared/ref-{rid}.jsonl"
    collective = str(Path(args.fabemu).parent / "collective/fabemu-collective")
    run([args.fabemu, "exec", lab.name, "--all", "--clock", "wall", "--", collective, "--library",
         "gloo", "--collective", "allreduce", "--sizes", sizes, "--iterations",
         str(args.iterations), "--transport", "tcp", "--run-id", rid, "--json-out", out,
         "--timeout", "3600"], timeout=3600)
    return {j["size"]: j["time_us"] for j in map(json.loads, Path(out).read_text().splitlines())
            if j["type"] == "result"}


def torch_program(args, lab, sizes):
    p, wall = timed([args.fabemu, "exec", lab.name, "--all", "--clock", "fabric", "--no-tag",
                     "--", "/usr/bin/python3", str(REPO / "bench/fabric_clock_allreduce.py"),
                     sizes, str(args.iterations)])
    got = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            j = json.loads(line)
            got[j["size"]] = (j["time_us"], j["wall_time_us"])
    return got, wall


def section_torch(args, tmp):
    sizes = ",".join(str(s) for s in args.sizes)
    n = args.time_scale
    print(f"\n## torch: scenarios/ai-400g.yaml at x{n}, Gloo over TCP, {args.iterations} "
          f"iterations after 2 warm-ups; time of the slowest rank, us of the real fabric")
    ref, prog, walls = {}, {}, []
    with Lab(args.fabemu, REPO / "scenarios/ai-400g.yaml", args.lab + "g",
             ["--time-scale", str(n)]) as lab:
        for r in range(args.runs):
            for size, t in collective_ref(args, lab, sizes, f"{os.getpid()}-{r}").items():
                ref.setdefault(size, []).append(t)
            got, wall = torch_program(args, lab, sizes)
            walls.append(wall)
            for size, t in got.items():
                prog.setdefault(size, []).append(t)
            print(f"# run {r}: fabemu-collective {ref}, torch {prog}, torch job {wall:.0f} s of "
                  f"wall clock", file=sys.stderr, flush=True)
    print(f"{'size':>9} {'fabemu-collective':>18} {'torch perf_counter':>19} {'ratio':>6} "
          f"{'torch wall/N':>13}")
    for size in args.sizes:
        f = median(ref.get(size, [float("nan")]))
        t = median([p[0] for p in prog.get(size, [(float("nan"), 0)])])
        w = median([p[1] for p in prog.get(size, [(0, float("nan"))])]) / n
        print(f"{size:9d} {f:15.1f} us {t:16.1f} us {t / f:6.3f} {w:10.1f} us")
    print(f"a torch job (import, init_process_group, {len(args.sizes)} sizes, destroy): "
          f"{median(walls):.0f} s of wall clock (median)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--sections", default="clock,tools,torch")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--time-scale", type=int, default=3000)
    ap.add_argument("--sizes", default="4194304,16777216", help="bytes")
    ap.add_argument("--iterations", type=int, default=5)
    args = ap.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.lab = f"fc{os.getpid() % 1000}"
    if os.geteuid() != 0:
        sys.exit("fabric_clock: needs root (namespaces)")
    print(f"# programs on the fabric's clock, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{os.cpu_count()} CPUs, kernel {os.uname().release}, "
          f"libfaketime {run(['dpkg-query', '-W', '-f=${Version}', 'libfaketime'], check=False).stdout}")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        (tmp / "fc.yaml").write_text(SMALL)
        for name in args.sections.split(","):
            globals()[f"section_{name}"](args, tmp)
            sys.stdout.flush()


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"fabric_clock: {e}")
