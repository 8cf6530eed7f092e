#!/usr/bin/python3
"""Benchmark: replayed training steps (docs/replay.md) against the model, and a comparison.
For each scenario (default: scenarios/replay/tp8-dp2.yaml, 16 GPUs TP8 x DP2 on a rail-optimized
400G fabric, and scenarios/replay/chakra-tp4-dp2.yaml, a Chakra trace of 8 ranks) at each time
scale (default: auto and 1000), --runs runs of `fabemu run --json`: the median iteration time
of the real fabric, the model's, their ratio, the elements checked and wrong, the dilation
factor and the wall clock. Then --compare's pair (default: the 16-GPU step on a leaf-spine at
1:1 and at 2:1) at --compare-scale: the median iteration times, the delta beside the model's
and whether they go the same way. --replay FILE replaces every scenario's workload (SimAI's
example/microAllReduce.txt, say).
    sudo /usr/bin/python3 bench/replay.py [--runs 3] [--scales auto,1000] [--replay FILE]
Long: ~1-2 min a run at x1000. See README.md for the last results."""
import argparse
import os
import sys
from pathlib import Path

from benchlib import BenchError, fabemu_json, median

REPO = Path(__file__).resolve().parent.parent


def replay_run(args, scenario, scale, lab):
    """One `fabemu run` of a replay; its figures, read from the run's records."""
    argv = [args.fabemu, "run", scenario, "--lab", lab, "--accept-degraded"]
    if scale != "scenario":
        argv += ["--time-scale", scale]
    if args.replay:
        argv += ["--replay", args.replay, "--format", args.format]
    out = fabemu_json(argv, timeout=3600, check=False)
    records = out.get("records", [])
    replay = [r for r in records if r["type"] == "replay"]
    iterations = [r for r in records if r["type"] == "replay_iteration"]
    steps = [r for r in records if r["type"] == "step"]
    if not replay or not iterations or not steps:
        failure = steps[0]["failure"] if steps else "no step ran"
        raise BenchError(f"{scenario}: no replayed iteration ({failure})")
    return {
        "time_s": median(r["time_s"] for r in iterations),
        "model_s": replay[0]["model_iteration_s"],
        "checked": replay[0]["checked"],
        "wrong": replay[0]["wrong"],
        "scale": replay[0]["time_scale"],
        "wall_s": steps[0]["wall_seconds"],
        "ok": out.get("ok", False),
    }


def ms(s):
    return f"{s * 1e3:.3g} ms" if s is not None else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fabemu", default=str(REPO / "build/emulator/fabemu"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scales", default="auto,1000",
                    help="time scales, comma-separated ('scenario': the scenario's own)")
    ap.add_argument("--scenarios", default=",".join(
        str(REPO / "scenarios/replay" / s) for s in ("tp8-dp2.yaml", "chakra-tp4-dp2.yaml")))
    ap.add_argument("--replay", help="a workload file to replay in place of the scenarios'")
    ap.add_argument("--format", default="simai")
    ap.add_argument("--compare", default=",".join(
        str(REPO / "scenarios/replay" / s)
        for s in ("tp8-dp2-leaf-spine.yaml", "tp8-dp2-leaf-spine-2to1.yaml")),
        help="two scenarios ('' to skip)")
    ap.add_argument("--compare-scale", default="2000")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root (it builds labs)")
    if not 1 <= args.runs <= 20:
        sys.exit("--runs: 1 to 20")
    lab = f"rb{os.getpid() % 10000}"
    print(f"{'SCENARIO':<28} {'SCALE':>6} {'ITERATION':>10} {'MODEL':>10} {'RATIO':>6} "
          f"{'CHECKED':>12} {'WRONG':>5} {'WALL':>7}  (median of {args.runs} runs)")
    for scenario in args.scenarios.split(","):
        for scale in args.scales.split(","):
            runs = [replay_run(args, scenario, scale, lab) for _ in range(args.runs)]
            t, model = median(r["time_s"] for r in runs), runs[0]["model_s"]
            print(f"{Path(scenario).name:<28} {runs[0]['scale']:>6g} {ms(t):>10} {ms(model):>10} "
                  f"{t / model if model else float('nan'):>6.2f} {runs[0]['checked']:>12} "
                  f"{max(r['wrong'] for r in runs):>5} {median(r['wall_s'] for r in runs):>6.1f}s",
                  flush=True)
    if args.compare:
        pair = args.compare.split(",")
        if len(pair) != 2:
            sys.exit("--compare: two scenarios")
        base, variant = ([replay_run(args, s, args.compare_scale, lab) for _ in range(args.runs)]
                         for s in pair)
        tb, tv = median(r["time_s"] for r in base), median(r["time_s"] for r in variant)
        mb, mv = base[0]["model_s"], variant[0]["model_s"]
        delta, model_delta = (tv / tb - 1) * 100, (mv / mb - 1) * 100
        same = (delta >= 0) == (model_delta >= 0)
        print(f"compare at x{args.compare_scale}: {Path(pair[0]).name} {ms(tb)} (model {ms(mb)}), "
              f"{Path(pair[1]).name} {ms(tv)} (model {ms(mv)}): {delta:+.1f}% against the "
              f"model's {model_delta:+.1f}%, {'the same' if same else 'the opposite'} direction")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        sys.exit(f"replay: {e}")
