#!/usr/bin/python3
"""Benchmark (VM lane: a kernel with rdma_rxe and sch_fq): DCQCN against PFC alone.
scenarios/incast-dcqcn.yaml (RDMA writes from N = 2, 4, 8 senders to h1 over rxe, every link
with PFC and RED marking; the N = 4 step with a victim flow) run twice in one invocation: as it
is (rdma: {cc: dcqcn}) and with cc: none (PFC alone), the peer measured in the same run, and
the same incasts over TCP (iperf3; the step marks it with the lossless class's DSCP) with DCTCP
and with CUBIC on the hosts (--modes picks). Per step and mode: CNPs, frames of the lossless class dropped, frames
tail-dropped, the time links were paused (summed
over directions), the receiver's goodput as a share of its link, Jain's fairness among the
senders and the victim's rate; then the ratio of pause time PFC alone / DCQCN. For the 2:1 step
with DCQCN, each QP's sampled rate over time against bench/dcqcn_fluid.py's fluid model of the
same incast: the mean absolute error as a share of the model's mean rate. DCTCP needs the
tcp_dctcp module and `dctcp` in net.ipv4.tcp_allowed_congestion_control (the VM lane: run
`modprobe tcp_dctcp; sysctl -w net.ipv4.tcp_allowed_congestion_control="reno cubic dctcp"` in
the guest first); a mode that cannot run is told and left out.
    scripts/vm-run -- /usr/bin/python3 bench/incast_dcqcn.py [--runs 1] [--modes M,..] [--json]"""
import argparse
import fractions
import json
import os
import re
import sys
import tempfile
import types
from pathlib import Path

from benchlib import BenchError, median, run

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import dcqcn_fluid  # noqa: E402  (the project's own reference model)

LINE_BPS = 100e9


# The modes: RDMA over rxe with DCQCN or with PFC alone; TCP (iperf3, in the lossless class by
# the step's DSCP) with DCTCP or CUBIC on the hosts, over the same links and RED marking.
MODES = {"dcqcn": "PFC+DCQCN", "none": "PFC alone", "dctcp": "TCP DCTCP", "cubic": "TCP CUBIC"}
TCP_MODES = ("dctcp", "cubic")


def scenario_text(path, cc, duration):
    text = Path(path).read_text()
    if cc != "dcqcn":
        text = text.replace("cc: dcqcn", "cc: none")
    if cc in TCP_MODES:
        text = text.replace("transport: rdma", "transport: tcp")
        text += f"hosts: {{tcp_congestion: {cc}}}\n"
    text = text.replace("duration: 400us", f"duration: {duration}")
    # Samples every 10 us of the fabric's time: 40 over a 400 us step.
    return text + "telemetry: {interval: 10us}\n"


def run_once(fabemu, scenario, cc, duration, tmp):
    sc = Path(tmp) / f"incast-{cc}.yaml"
    sc.write_text(scenario_text(scenario, cc, duration))
    report = Path(tmp) / f"report-{cc}"
    p = run([fabemu, "run", str(sc), "--lab", "icdq", "-q", "--report", str(report)],
            timeout=3 * 3600, check=False)
    path = report / "report.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    if not any(r["type"] == "step" for r in recs):
        raise BenchError(f"fabemu run ({cc}): exit {p.returncode}, no step ran: "
                         f"{p.stdout[-1500:]} {p.stderr[-1500:]}")
    return recs


def sample_at(samples, t):
    """The first sample at or after t (real s), else the last."""
    for s in samples:
        if s["t_s"] >= t:
            return s
    return samples[-1]


def growth(samples, start, end, key):
    a, b = sample_at(samples, start), sample_at(samples, end)
    before = {d["name"]: d.get(key, 0) for d in a["directions"]}
    return sum(max(0, d.get(key, 0) - before.get(d["name"], 0)) for d in b["directions"])


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else 0.0


def step_figures(recs):
    steps = {r["index"]: r for r in recs if r["type"] == "step"}
    samples = [r for r in recs if r["type"] == "sample"]
    out = {}
    for i, s in sorted(steps.items()):
        flows = [f for f in recs if f["type"] == "flow" and f["step"] == i]
        senders = [f for f in flows if f["role"] != "victim"]
        victim = [f for f in flows if f["role"] == "victim"]
        start, end = s["start_s"], s["start_s"] + s["seconds"]
        out[i] = {
            "n": len(senders),
            "ok": s["ok"],
            "cnps": sum(f["cnps"] or 0 for f in senders),
            "lossless_drops": growth(samples, start, end, "lossless_drops"),
            "drops": growth(samples, start, end, "drop_queue"),
            "pause_s": growth(samples, start, end, "pause_ns") / 1e9,
            # What the receiver's NIC took over the step (a sender's own rate counts its QP's
            # active time only).
            "goodput": (s.get("receiver_bps") or 0) / LINE_BPS,
            "jain": jain([f["bps"] for f in senders]),
            "victim_bps": victim[0]["bps"] if victim else None,
            "start_s": start,
            "end_s": end,
            "senders": sorted(f["from"] for f in senders),
        }
    return out, samples


def dcqcn_keys(text):
    """rdma.dcqcn's keys as the scenario writes them on one line (`dcqcn: {k: v, ...}`)."""
    m = re.search(r"dcqcn:\s*\{([^}]*)\}", text)
    pairs = [kv.split(":", 1) for kv in m[1].split(",") if ":" in kv] if m else []
    return {k.strip(): v.strip() for k, v in pairs}


def model_of(scenario):
    """What the fluid model takes from the scenario's text: the links' RED marking (kmin and
    kmax in bytes, pmax) and DCQCN's parameters where the scenario sets them (the alpha and CNP
    intervals, the rate increase timer, g, the byte counter, clamp_target, initial_alpha; the
    defaults otherwise)."""
    text = Path(scenario).read_text()
    m = re.search(r"ecn:\s*\{kmin:\s*(\d+)([KM]?),\s*kmax:\s*(\d+)([KM]?),\s*pmax:\s*([\d.]+)%",
                  text)
    if not m:
        raise BenchError(f"{scenario}: no `ecn: {{kmin: .., kmax: .., pmax: ..%}}` on its links")
    unit = {"": 1, "K": 1024, "M": 1024 * 1024}
    d = dcqcn_keys(text)
    try:
        time = lambda k, dflt: dcqcn_fluid.seconds(d[k]) if k in d else dflt  # noqa: E731
        g = d.get("g", "1/256")
        byte_counter = d.get("byte_counter", "off")
        return {"kmin": int(m[1]) * unit[m[2]], "kmax": int(m[3]) * unit[m[4]],
                "pmax": float(m[5]) / 100,
                "cnp_interval": time("cnp_interval", 50e-6),
                "alpha_interval": time("alpha_interval", 1e-6),
                "rp_timer": time("rp_timer", 300e-6),
                "g": float(fractions.Fraction(g)),
                "byte_counter": 0 if byte_counter == "off" else dcqcn_fluid.size(byte_counter),
                "clamp_target": d.get("clamp_target", "false") in ("true", "on", "yes"),
                "initial_alpha": float(fractions.Fraction(d.get("initial_alpha", "1")))}
    except ValueError as e:
        raise BenchError(f"{scenario}: rdma.dcqcn: {e}")


def fluid_mae(samples, start, end, senders, params):
    """Each QP's sampled rate against the fluid model of a 2:1 incast, from the QP's first
    sample (its first frame) on: mean |measured - model| / mean model."""
    model = dcqcn_fluid.simulate(types.SimpleNamespace(
        senders=2, rate=LINE_BPS, mtu=9000, kmin=params["kmin"], kmax=params["kmax"],
        pmax=params["pmax"], g=params["g"], alpha_interval=params["alpha_interval"],
        cnp_interval=params["cnp_interval"], rp_timer=params["rp_timer"], ai=None, hai=None,
        min_rate=1e9, clamp_target=params["clamp_target"], fast_recovery=1,
        byte_counter=params["byte_counter"], initial_alpha=params["initial_alpha"],
        feedback_delay=30e-6,
        duration=end - start, dt=1e-7, series=1e-6))
    def model_at(t):
        k = min(len(model) - 1, max(0, int(round(t / 1e-6))))
        return model[k][1][0]
    seen, errs, refs = {}, [], []
    for s in samples:
        if not start <= s["t_s"] <= end:
            continue
        for q in s.get("qps", []):
            if q["host"] not in senders:  # the receiver's QPs carry its acknowledgements
                continue
            key = (q["host"], q["peer"], q["qpn"])
            t0 = seen.setdefault(key, s["t_s"])
            ref = model_at(s["t_s"] - t0)
            errs.append(abs(q["rate_bps"] - ref))
            refs.append(ref)
    if not refs:
        return None, 0
    return sum(errs) / sum(refs), len(seen)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--scenario", default=str(REPO / "scenarios/incast-dcqcn.yaml"),
                    help="the incasts (its steps and its `cc: dcqcn`, as the default's)")
    ap.add_argument("--runs", type=int, default=1, help="runs of each mode (medians)")
    ap.add_argument("--duration", default="2ms", help="each incast's (the fabric's time)")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="which of " + ", ".join(MODES) + " (comma-separated)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if not modes or any(m not in MODES for m in modes):
        sys.exit(f"incast_dcqcn: --modes: each of {', '.join(MODES)}")
    if os.geteuid() != 0:
        sys.exit("incast_dcqcn: needs root (namespaces)")
    # Read before anything runs: a scenario the model cannot follow fails now, not after a run.
    model_params = model_of(args.scenario) if "dcqcn" in modes else None
    by_mode = {m: [] for m in modes}
    mae = []
    with tempfile.TemporaryDirectory(dir=REPO / "build") as tmp:
        for _ in range(args.runs):
            for cc in modes:
                # A mode this machine cannot run (DCTCP not allowed in namespaces) is told and
                # left out; the others still run.
                try:
                    recs = run_once(args.fabemu, args.scenario, cc, args.duration, tmp)
                except BenchError as e:
                    print(f"incast_dcqcn: {MODES[cc]} not run: {e}", file=sys.stderr, flush=True)
                    continue
                figures, samples = step_figures(recs)
                by_mode[cc].append(figures)
                if cc == "dcqcn" and 0 in figures:
                    mae.append(fluid_mae(samples, figures[0]["start_s"], figures[0]["end_s"],
                                         figures[0]["senders"], model_params))
    keys = ("cnps", "lossless_drops", "drops", "pause_s", "goodput", "jain", "victim_bps")
    modes = [m for m in modes if by_mode[m]]
    if not modes:
        raise BenchError("no mode ran")
    med = {}
    for cc in modes:
        runs = by_mode[cc]
        med[cc] = {}
        for i in sorted(runs[0]):
            med[cc][i] = {"n": runs[0][i]["n"], "ok": all(r[i]["ok"] for r in runs if i in r)}
            for k in keys:
                xs = [r[i][k] for r in runs if i in r and r[i][k] is not None]
                med[cc][i][k] = median(xs) if xs else None
    if args.json:
        print(json.dumps({"modes": med, "fluid_mae": mae}))
        return
    print(f"# {Path(args.scenario).name}, 100 Gbit/s x10000, incasts of {args.duration}, "
          f"{args.runs} run(s) per mode (medians); pause time summed over link directions; "
          "goodput: the receiver's, of its link")
    print(f"{'N':>2} {'mode':>10} {'CNPs':>6} {'LL drops':>9} {'drops':>7} {'paused':>10} "
          f"{'goodput':>8} {'Jain':>6} {'victim':>12}")
    for i in sorted(med[modes[0]]):
        for cc in modes:
            f = med[cc].get(i)
            if not f:
                continue
            victim = f"{f['victim_bps'] / 1e9:.2f} Gbit/s" if f["victim_bps"] else "-"
            print(f"{f['n']:>2} {MODES[cc]:>10} {f['cnps']:>6.0f} {f['lossless_drops']:>9.0f} "
                  f"{f['drops']:>7.0f} {f['pause_s'] * 1e6:>8.1f}us {f['goodput']:>8.3f} "
                  f"{f['jain']:>6.3f} {victim:>12}{'' if f['ok'] else '  (step FAILED)'}")
        d = med.get("dcqcn", {}).get(i, {}).get("pause_s")
        n = med.get("none", {}).get(i, {}).get("pause_s")
        if d is not None and n is not None:
            print(f"   pause time PFC alone / PFC+DCQCN: "
                  f"{(n / d) if d else float('inf'):.1f}x")
    for err, qps in mae:
        print(f"2:1 QP rates against the fluid model: MAE {err * 100:.1f}% of the model's mean "
              f"({qps} QPs)" if err is not None else "2:1: no QP sampled")


if __name__ == "__main__":
    try:
        main()
    except BenchError as e:
        sys.exit(f"incast_dcqcn: {e}")
