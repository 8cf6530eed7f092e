#!/usr/bin/python3
"""Benchmark: a lab seen with other people's tools (docs/observability.md).
1. capture: a 100G link dilated x1000 (2 hosts under a leaf), iperf3 h1 -> h2, `fabemu capture
   LAB h1>leaf1 -c 3000`, read by tshark: the gaps between h1's back-to-back 1514-byte frames
   (median, p10, p90, and the train's mean, which counts TCP's idle moments too) against their
   serialization time at 100 Gbit/s (121.1 ns), per run and the median over --runs.
2. prometheus: the same fabric under `fabemu run` with a 25 s iperf3 step; a real Prometheus
   scrapes `fabemu metrics` every second; rate() of h1>leaf1's bytes times the dilation,
   evaluated at the end of a window, against `status --json`'s bytes over the same window.
3. scale (--hosts N, default 1024): a leaf-spine of N hosts, every link shaped; the time of one
   read as `metrics` and `top` make it (the exporter's fabemu_exporter_read_seconds), beside
   `status --json` on the same lab in the same run (--unshaped: no link shaped, so reads take
   the kernel's counters namespace by namespace).
    sudo /usr/bin/python3 bench/observability.py [--runs 3] [--hosts 1024] [--parts capture,...]
See README.md for the last results."""
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

from benchlib import BenchError, median, run

REPO = Path(__file__).resolve().parent.parent
SERIALIZATION_NS = 1514 * 8 / 100.0

FABRIC_100G = """name: obsbench
topology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 2}
links:
  host-leaf: {rate: 100gbit}
  leaf-spine: {rate: 100gbit}
rdma: {enabled: off}
time_scale: 1000
"""

IPERF_STEP = """workload:
  - exec:
      hosts: [h1, h2]
      timeout: 120s
      command: [sh, -c, 'if [ $(hostname) = h2 ]; then iperf3 -s -1; else sleep 1; iperf3 -c h2 -t 25; fi']
"""


def fab(args, *argv, **kw):
    return run([args.fabemu, *argv], **kw)


def capture_once(args, tmp, lab):
    scenario = tmp / "g100.yaml"
    scenario.write_text(FABRIC_100G)
    fab(args, "up", str(scenario), "--lab", lab)
    try:
        fab(args, "exec", f"{lab}:h2", "--", "iperf3", "-s", "-D", "-1")
        time.sleep(0.3)
        client = subprocess.Popen([args.fabemu, "exec", f"{lab}:h1", "--", "iperf3", "-c", "h2",
                                   "-t", "5"], stdout=subprocess.DEVNULL)
        time.sleep(1.5)
        pcap = tmp / "cap.pcapng"
        fab(args, "capture", lab, "h1>leaf1", "-c", "3000", "-w", str(pcap))
        client.wait(timeout=60)
        # Seconds since the first frame: an epoch time as a double would keep only ~240 ns.
        out = run(["tshark", "-r", str(pcap), "-Y", "frame.len == 1514", "-T", "fields", "-e",
                   "frame.time_relative"]).stdout
        times = [float(t) * 1e9 for t in out.split()]
        if len(times) < 1000:
            raise BenchError(f"only {len(times)} full frames captured")
        gaps = sorted(b - a for a, b in zip(times, times[1:]))
        pct = lambda q: gaps[int(q * (len(gaps) - 1))]
        return (times[-1] - times[0]) / (len(times) - 1), pct(0.5), pct(0.1), pct(0.9)
    finally:
        fab(args, "down", lab, check=False)


def prom_query(server, expr, at):
    out = run(["promtool", "query", "instant", "-o", "json", "--time", str(at), server, expr],
              check=False)
    try:
        return float(json.loads(out.stdout)[0]["value"][1])
    except (ValueError, IndexError, KeyError, TypeError):
        return None


def status_bytes(args, lab, link, direction):
    j = json.loads(fab(args, "status", lab, "--json").stdout)
    for l in j["links"]:
        if l["name"] == link:
            return l[direction]["counters"]["bytes"], j["read_at_ns"], j["time_scale"]
    raise BenchError(f"no link {link} in status")


def prometheus_once(args, tmp, lab, port):
    scenario = tmp / "run.yaml"
    scenario.write_text(FABRIC_100G + IPERF_STEP)
    runner = subprocess.Popen([args.fabemu, "run", str(scenario), "--lab", lab, "--report",
                               str(tmp / "report")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    procs = []
    try:
        deadline = time.time() + 60
        while not Path(f"/run/fabemu/{lab}/step").exists():
            if time.time() > deadline:
                raise BenchError("the run's workload did not start")
            time.sleep(0.1)
        exporter = f"127.0.0.1:{port}"
        server = f"http://127.0.0.1:{port + 1}"
        procs.append(subprocess.Popen([args.fabemu, "metrics", lab, "--listen", exporter],
                                      stderr=subprocess.DEVNULL))
        (tmp / "prometheus.yml").write_text(
            "global: {scrape_interval: 1s, scrape_timeout: 1s}\nscrape_configs:\n"
            f"  - job_name: fabemu\n    static_configs:\n      - targets: ['{exporter}']\n")
        shutil.rmtree(tmp / "tsdb", ignore_errors=True)
        procs.append(subprocess.Popen(
            ["prometheus", f"--config.file={tmp / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp / 'tsdb'}", f"--web.listen-address=127.0.0.1:{port + 1}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        series = f'fabemu_link_tx_bytes_total{{lab="{lab}",direction="h1>leaf1"}}'
        for _ in range(30):
            n = prom_query(server, f"count_over_time({series}[1m])", time.time())
            if n and n >= 3:
                break
            time.sleep(1)
        else:
            raise BenchError("Prometheus did not scrape the exporter")
        b0, t0, scale = status_bytes(args, lab, "h1:leaf1", "a_to_b")
        time.sleep(10)
        b1, t1, _ = status_bytes(args, lab, "h1:leaf1", "a_to_b")
        time.sleep(1.5)
        window = (t1 - t0) / 1e9
        status_bps = (b1 - b0) * 8 / (window / scale)
        prom = prom_query(server, f"rate({series}[{int(window * 1000)}ms]) * on(lab) group_left "
                          "fabemu_lab_time_dilation", t1 / 1e9)
        if prom is None:
            raise BenchError("no rate() from Prometheus")
        runner.wait(timeout=180)
        return status_bps, prom * 8
    finally:
        for p in procs:
            p.terminate()
            p.wait(timeout=10)
        if runner.poll() is None:
            runner.terminate()
            runner.wait(timeout=120)
        fab(args, "down", lab, check=False)


def scale_once(args, tmp, lab, port):
    leaves = max(2, args.hosts // 32)
    scenario = tmp / "big.yaml"
    scenario.write_text(
        f"name: obsscale\ntopology: {{kind: leaf-spine, leaves: {leaves}, spines: 4, "
        f"hosts_per_leaf: {args.hosts // leaves}}}\n" +
        ("" if args.unshaped else "links: {default: {rate: 100gbit}}\n") +
        "rdma: {enabled: off}\n")
    fab(args, "up", str(scenario), "--lab", lab, timeout=1800)
    try:
        reads, status = [], []
        for _ in range(3):
            text = fab(args, "metrics", lab, "--once").stdout
            reads.append(float(re.search(r"^fabemu_exporter_read_seconds\S* (\S+)$", text,
                                         re.M).group(1)))
            start = time.monotonic()
            fab(args, "status", lab, "--json")
            status.append(time.monotonic() - start)
        start = time.monotonic()
        frames = fab(args, "top", lab, "--batch", "-n", "3", "--interval", "1").stdout
        top_s = time.monotonic() - start
        directions = len(re.findall(r"^fabemu_link_tx_bytes_total", text, re.M))
        return median(reads), median(status), top_s, frames.count("fabemu top: lab"), directions
    finally:
        fab(args, "down", lab, check=False, timeout=600)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=1024)
    ap.add_argument("--parts", default="capture,prometheus,scale")
    ap.add_argument("--unshaped", action="store_true",
                    help="scale: no link shaped (every read falls back to the kernel's counters)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("observability.py: needs root (sudo)")
    parts = args.parts.split(",")
    lab = f"ob{os.getpid() % 10000}"
    port = 21000 + os.getpid() % 20000
    with tempfile.TemporaryDirectory(prefix="fabemu-obsbench-") as d:
        tmp = Path(d)
        if "capture" in parts:
            medians = []
            for i in range(args.runs):
                mean, med, p10, p90 = capture_once(args, tmp, lab)
                medians.append(med)
                print(f"capture run {i + 1}: gap between back-to-back frames: median {med:.1f} ns "
                      f"(p10 {p10:.1f}, p90 {p90:.1f}; the train's mean {mean:.1f}, idle times "
                      f"included) against {SERIALIZATION_NS:.1f} ns of serialization: "
                      f"{med / SERIALIZATION_NS:.3f}", flush=True)
            m = median(medians)
            print(f"capture: median of {args.runs} runs' median gaps {m:.1f} ns, "
                  f"{(m / SERIALIZATION_NS - 1) * 100:+.1f}% of 100 Gbit/s serialization")
        if "prometheus" in parts:
            ratios = []
            for i in range(args.runs):
                status_bps, prom_bps = prometheus_once(args, tmp, lab, port)
                ratios.append(prom_bps / status_bps)
                print(f"prometheus run {i + 1}: status {status_bps / 1e9:.2f} Gbit/s, rate() "
                      f"{prom_bps / 1e9:.2f} Gbit/s, ratio {ratios[-1]:.4f}", flush=True)
            print(f"prometheus: median ratio of rate() to status {median(ratios):.4f}")
        if "scale" in parts:
            read, status, top_s, frames, dirs = scale_once(args, tmp, lab, port)
            print(f"scale: {args.hosts} hosts{' (unshaped)' if args.unshaped else ''}, "
                  f"{dirs} directions: one read for metrics/top "
                  f"{read * 1e3:.0f} ms (median of 3), status --json {status * 1e3:.0f} ms "
                  f"({status / read:.1f}x); top --batch -n 3 drew {frames} frames in "
                  f"{top_s:.1f} s")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"observability.py: {e}")
