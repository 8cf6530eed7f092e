#!/usr/bin/python3
"""Benchmark: how long traffic is lost when a spine link fails, by routing mode. A UDP probe
stream (bench/udp_probe.py: one packet every 1 ms over 16 source ports, so that ECMP puts some
flows on each spine) runs from h1 to h2 of a 2-leaf, 2-spine fabric; `leaf1:spine1` goes down
in the middle. Modes: static (the fault player installs the converged routes at once), BGP with
BFD at three timer settings, and BGP without BFD (its hold timer, FRR's datacenter 9 s); and
with no routing protocol at all (the fault's `reroute: false`): static ECMP (blackholed to the
end) and fabemu's eBPF balancer (`fabric.load_balance`: adaptive, spray, flowlet), whose
switches stop using a member whose link is down at once. --link spine1:leaf2 fails a link the
sender's leaf is not on: the balancer's choice is local, so only a routing protocol helps there.
For each mode, the median over --runs runs of: packets lost, the longest outage any flow saw
between two arrivals, the worst flow's lost time (its losses x its spacing: a blackhole to the
end included),
when the FIBs changed after the fault (BGP), and the outage less BFD's detection time.
    sudo /usr/bin/python3 bench/convergence.py [--runs 3] [--modes static,bfd-100ms]
        [--link leaf1:spine1] [--spacing 0.001]"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlib import median_known as med

REPO = Path(__file__).resolve().parent.parent
FABEMU = REPO / "build" / "emulator" / "fabemu"

# mode -> (fabric line, seconds of probe, BFD detection time in s or None, the fault reroutes)
MODES = {
    "static": ("fabric: {routing: static}", 4, None),
    "static-no-reroute": ("fabric: {routing: static}", 4, None, False),
    "adaptive": ("fabric: {routing: static, load_balance: adaptive}", 4, None, False),
    "spray": ("fabric: {routing: static, load_balance: spray}", 4, None, False),
    "flowlet": ("fabric: {routing: static, load_balance: {flowlet: {gap: 50us}}}", 4, None, False),
    # BGP + BFD with the balancer, whose groups follow the routers' FIBs.
    "bfd-100ms-adaptive": ("fabric: {routing: bgp, bfd: {interval: 100ms, multiplier: 3}, "
                           "load_balance: adaptive}", 4, 0.3),
    "bfd-300ms": ("fabric: {routing: bgp, bfd: {interval: 300ms, multiplier: 3}}", 5, 0.9),
    "bfd-100ms": ("fabric: {routing: bgp, bfd: {interval: 100ms, multiplier: 3}}", 4, 0.3),
    "bfd-50ms": ("fabric: {routing: bgp, bfd: {interval: 50ms, multiplier: 3}}", 4, 0.15),
    "bgp-no-bfd": ("fabric: {routing: bgp, bfd: off}", 14, 9.0),
}
FAULT_AT = 1.5


def scenario(mode, out, seconds, link, spacing):
    fabric = MODES[mode][0]
    reroute = "" if len(MODES[mode]) < 4 or MODES[mode][3] else ", reroute: false"
    probe = REPO / "bench" / "udp_probe.py"
    return f"""name: conv
topology: {{kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}}
{fabric}
rdma: {{enabled: off}}
workload:
  - exec: {{hosts: [h1, h2], command: [/usr/bin/python3, {probe}, --to, h2, --out, {out},
           --seconds, "{seconds}", --spacing, "{spacing}"], timeout: 120s}}
faults:
  - {{at: {int(FAULT_AT * 1000)}ms, link: "{link}", down: true{reroute}}}
"""


def one_run(mode, work, link, spacing):
    out = work / f"probe-{mode}.json"
    out.unlink(missing_ok=True)
    sc = work / f"{mode}.yaml"
    sc.write_text(scenario(mode, out, MODES[mode][1], link, spacing))
    report = work / f"report-{mode}"
    shutil.rmtree(report, ignore_errors=True)
    p = subprocess.run([str(FABEMU), "run", str(sc), "--lab", "bconv", "--report", str(report),
                        "-q"], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{mode}: fabemu run exited {p.returncode}\n{p.stdout}\n{p.stderr}")
    probe = json.loads(out.read_text())
    flows = probe["flows"]
    lost = sum((f["sent"] or 0) - f["received"] for f in flows)
    # The time the worst flow's packets went nowhere: its losses times its own spacing (a
    # blackhole to the end has no last gap between arrivals, but it has losses).
    lost_time = max(((f["sent"] or 0) - f["received"]) * spacing * len(flows) for f in flows)
    outage = max(f["outage_s"] for f in flows)
    fib_first = fib_last = None
    for line in (report / "report.jsonl").read_text().splitlines():
        j = json.loads(line)
        if j.get("type") == "fault":
            fib_first, fib_last = j.get("fib_first_s"), j.get("fib_last_s")
    return {"lost": lost, "outage": outage, "lost_time": lost_time, "fib_first": fib_first, "fib_last": fib_last,
            "affected": sum(1 for f in flows if (f["sent"] or 0) > f["received"])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--link", default="leaf1:spine1", help="the link that fails")
    ap.add_argument("--spacing", type=float, default=0.001, help="s between probe packets")
    args = ap.parse_args()
    modes = args.modes.split(",")
    # Not under /tmp: every host has a /tmp of its own.
    work = Path(tempfile.mkdtemp(prefix="fabemu-conv-", dir=REPO / "build"))
    print(f"probe: 1 packet every {args.spacing * 1e3:g} ms over 16 flows h1 -> h2; {args.link} "
          f"down at {FAULT_AT} s; "
          f"median of {args.runs} runs")
    print(f"{'MODE':<12} {'LOST':>6} {'OUTAGE':>9} {'FIB FIRST':>10} {'FIB LAST':>9} "
          f"{'DETECT':>7} {'OUTAGE-DETECT':>14} {'FLOWS HIT':>9} {'LOST TIME':>9}  "
          "RUNS (lost/outage ms)")
    try:
        for mode in modes:
            runs = [one_run(mode, work, args.link, args.spacing) for _ in range(args.runs)]
            detect = MODES[mode][2]
            outage = med([r["outage"] for r in runs])
            ms = lambda v: ("-" if v is None else f"{v * 1e6:.0f} us" if abs(v) < 0.01
                            else f"{v * 1e3:.0f} ms")
            print(f"{mode:<12} {med([r['lost'] for r in runs]):>6.0f} {ms(outage):>9} "
                  f"{ms(med([r['fib_first'] for r in runs])):>10} "
                  f"{ms(med([r['fib_last'] for r in runs])):>9} {ms(detect):>7} "
                  f"{ms(outage - detect if detect is not None else None):>14} "
                  f"{med([r['affected'] for r in runs]):>9.0f} "
                  f"{ms(med([r['lost_time'] for r in runs])):>9}  "
                  + " ".join(f"{r['lost']}/{r['outage'] * 1e3:.0f}" for r in runs))
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
