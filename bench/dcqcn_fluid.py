#!/usr/bin/python3
"""Reference: DCQCN's rate equations as a fluid model, for an N:1 incast of N QPs into one link
(the project's own code, after Zhu, Ghobadi, Misra and Padhye, "ECN or Delay: Lessons Learnt
from Analysis of DCQCN and TIMELY", CoNEXT 2016, section 3; the Mellanox variant HPCC's ns-3
runs and fabemu's eBPF implements: the rate increase timer, and a byte counter if one is given).

State, per QP (all N alike: they start together and see the same queue): the current rate Rc,
the target rate Rt and alpha; the bottleneck's queue q (bytes). Each delay tau_star (the
feedback loop: RTT, plus the notification point's CNP interval on average half) old:

  p(t)   = RED's marking probability of q: 0 up to kmin, pmax (q - kmin) / (kmax - kmin) up to
           kmax, 1 above
  cnp    = 1 - (1 - p)^(tau Rc): a QP gets a CNP in a window of tau = cnp_interval when one of
           its tau Rc frames of that window was marked (at most one per window)
  dalpha = g / tau_a (tau_a / tau cnp - alpha)            alpha updates every tau_a
  quiet  = (1 - p)^(T Rc): no frame marked over a rate increase timer T
  inc    = Rc p / ((1 - p)^(-T Rc) - 1): how often the timer fires with no CNP since the last
           (1 / T as p goes to 0)
  dRt    = -(Rt - Rc) cnp / tau quiet                      Rt = Rc at a cut after a timer round
         + inc (ai (quiet^F - quiet^(F+1)) + hai quiet^(F+1))   additive, then hyper increase
  dRc    = -Rc alpha cnp / (2 tau) + (Rt - Rc) / 2 inc
  dq     = N Rc - C                                         (q >= 0)

With a byte counter of B bytes, its events come at inc_B (inc with B's frames for T Rc) and
join the timer's: past fast recovery when either counter's stage is (1 - (1 - quiet^F)
(1 - quiet_B^F)), in hyper increase when both are (quiet^(F+1) quiet_B^(F+1)), and a cut
clamps Rt after either's round. alpha starts at `initial_alpha` (1 unless given).

(rates in frames per second of `mtu` bytes for the exponents). Two departures from the paper's
equations follow the Mellanox variant: Rt is set to Rc only by a cut that comes after a timer
round (clamp_target off: a run of CNPs keeps the target the QP had before the congestion, and
fast recovery heads back there), and hyper increase after F + 1 quiet rounds. Forward Euler in
steps of dt; the rates are clamped to [min_rate, line].

    python3 bench/dcqcn_fluid.py --senders 2 [--rate 100gbit] [--kmin 400K --kmax 1600K
        --pmax 0.2] [--duration 20ms] [--series 100us] [--json]

prints each QP's rate and the queue over time, then the steady state (the mean over the last
half) against the fair share line / N. `--check` runs the model's own consistency check: a 2:1
and an 8:1 incast's QPs average their fair share within 10% over the last half (the queue is
printed: with these parameters DCQCN oscillates around kmax, as ns-3 runs of it do)."""
import argparse
import json
import math
import sys

UNITS = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def rate(text):
    t = text.lower().strip()
    for suffix in ("bit", "bps"):
        if t.endswith(suffix):
            t = t[: -len(suffix)]
    unit = t[-1] if t and t[-1] in UNITS else ""
    return float(t[: len(t) - len(unit)]) * UNITS[unit]


def size(text):
    t = text.upper().strip()
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(t[-1:], 1)
    return float(t[:-1] if t[-1:] in "KMG" else t) * mult


def seconds(text):
    t = text.strip()
    for suffix, mult in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3), ("s", 1.0)):
        if t.endswith(suffix):
            return float(t[: -len(suffix)]) * mult
    raise ValueError(f"{text}: not a time like 300us")


def marking(q, kmin, kmax, pmax):
    if q <= kmin:
        return 0.0
    if q > kmax:
        return 1.0
    return pmax * (q - kmin) / (kmax - kmin)


def increase_rate(p, window_frames):
    """p / ((1 - p)^(-x) - 1): how often a timer of x frames' worth fires unmarked, per frame."""
    if p <= 0:
        return 1.0 / window_frames
    if p >= 1:
        return 0.0
    denom = math.expm1(-window_frames * math.log1p(-p))
    return p / denom if denom > 0 else 0.0


def simulate(a):
    """The model's time series: a list of (t, [Rc of each QP in bit/s], q in bytes)."""
    n, line, mtu = a.senders, a.rate, a.mtu
    frame_bits = 8.0 * mtu
    tau, tau_a, timer = a.cnp_interval, a.alpha_interval, a.rp_timer
    byte_counter = a.byte_counter
    ai = a.ai if a.ai is not None else 5e6 * line / 25e9
    hai = a.hai if a.hai is not None else 50e6 * line / 25e9
    # The QPs start at the line rate, alpha at its value at the first CNP.
    rc, rt, alpha, q = line, line, a.initial_alpha, 0.0
    history = []  # (t, rc, q) for the delayed feedback
    delay_steps = max(1, int(round(a.feedback_delay / a.dt)))
    out = []
    next_sample = 0.0
    steps = int(a.duration / a.dt)
    for i in range(steps + 1):
        t = i * a.dt
        history.append((rc, q))
        old_rc, old_q = history[max(0, len(history) - 1 - delay_steps)]
        if len(history) > delay_steps + 1:
            history.pop(0)
        p = marking(old_q, a.kmin, a.kmax, a.pmax)
        frames = old_rc / frame_bits  # frames per second
        cnp = -math.expm1(tau * frames * math.log1p(-p)) if p < 1 else 1.0
        inc = increase_rate(p, timer * frames) * frames  # per second
        quiet = (1 - p) ** (timer * frames)
        f_rounds, hyper_rounds = quiet ** a.fast_recovery, quiet ** (a.fast_recovery + 1)
        past = quiet
        if byte_counter:
            b_frames = byte_counter / mtu
            inc_b = increase_rate(p, b_frames) * frames
            quiet_b = (1 - p) ** b_frames
            f_rounds = 1 - (1 - f_rounds) * (1 - quiet_b ** a.fast_recovery)
            hyper_rounds *= quiet_b ** (a.fast_recovery + 1)
            past = 1 - (1 - quiet) * (1 - quiet_b)
            inc += inc_b
        clamp = 1.0 if a.clamp_target else past
        d_alpha = a.g / tau_a * (tau_a / tau * cnp - alpha)
        d_rt = -(rt - rc) * cnp / tau * clamp + inc * (ai * (f_rounds - hyper_rounds) +
                                                     hai * hyper_rounds)
        d_rc = -rc * alpha * cnp / (2 * tau) + (rt - rc) / 2 * inc
        d_q = (n * rc - line) / 8.0
        if t >= next_sample:
            out.append((t, [rc] * n, q))
            next_sample += a.series
        alpha = min(1.0, max(0.0, alpha + a.dt * d_alpha))
        rt = min(line, max(a.min_rate, rt + a.dt * d_rt))
        rc = min(line, max(a.min_rate, rc + a.dt * d_rc))
        q = max(0.0, q + a.dt * d_q)
    return out


def steady(series):
    half = series[len(series) // 2:]
    rates = [sum(r[0] for _, r, _ in half) / len(half)]
    queue = sum(q for _, _, q in half) / len(half)
    return rates[0], queue


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--senders", type=int, default=2)
    ap.add_argument("--rate", type=rate, default=rate("100gbit"), help="the bottleneck and NICs")
    ap.add_argument("--mtu", type=int, default=9000, help="frame bytes (the exponents' unit)")
    ap.add_argument("--kmin", type=size, default=size("400K"))
    ap.add_argument("--kmax", type=size, default=size("1600K"))
    ap.add_argument("--pmax", type=float, default=0.2)
    ap.add_argument("--g", type=float, default=1 / 256)
    ap.add_argument("--alpha-interval", type=seconds, default=seconds("1us"))
    ap.add_argument("--cnp-interval", type=seconds, default=seconds("50us"))
    ap.add_argument("--rp-timer", type=seconds, default=seconds("300us"))
    ap.add_argument("--ai", type=rate, default=None, help="default 5 Mbit/s per 25 Gbit/s")
    ap.add_argument("--hai", type=rate, default=None, help="default 50 Mbit/s per 25 Gbit/s")
    ap.add_argument("--min-rate", type=rate, default=rate("1gbit"))
    ap.add_argument("--clamp-target", action="store_true", help="every cut sets Rt = Rc")
    ap.add_argument("--byte-counter", type=size, default=0, help="bytes per increase (0: none)")
    ap.add_argument("--initial-alpha", type=float, default=1.0, help="alpha at the first CNP")
    ap.add_argument("--fast-recovery", type=int, default=1)
    ap.add_argument("--feedback-delay", type=seconds, default=seconds("30us"),
                    help="marking to rate cut: RTT plus half a CNP interval")
    ap.add_argument("--duration", type=seconds, default=seconds("20ms"))
    ap.add_argument("--dt", type=seconds, default=seconds("100ns"))
    ap.add_argument("--series", type=seconds, default=seconds("500us"), help="print every")
    ap.add_argument("--json", action="store_true", help="the series as JSON lines")
    ap.add_argument("--check", action="store_true", help="the model's own consistency checks")
    a = ap.parse_args()
    if a.check:
        return check(a)
    series = simulate(a)
    if a.json:
        for t, rates, q in series:
            print(json.dumps({"t_us": round(t * 1e6, 3), "qp_bps": rates, "queue_bytes": q}))
        return 0
    print(f"DCQCN fluid model: {a.senders}:1 incast at {a.rate / 1e9:g} Gbit/s, RED "
          f"{a.kmin / 1024:g}K-{a.kmax / 1024:g}K pmax {a.pmax:g}")
    print(f"{'t (us)':>9} {'QP rate (Gbit/s)':>17} {'queue (KB)':>11}")
    for t, rates, q in series:
        print(f"{t * 1e6:9.0f} {rates[0] / 1e9:17.2f} {q / 1024:11.1f}")
    rc, q = steady(series)
    print(f"steady state (last half): each QP {rc / 1e9:.2f} Gbit/s = "
          f"{rc * a.senders / a.rate:.3f} of the fair share, queue {q / 1024:.0f} KB")
    return 0


def check(a):
    failed = 0
    for n in (2, 8):
        a.senders = n
        rc, q = steady(simulate(a))
        share = rc * n / a.rate
        ok = 0.9 < share < 1.1
        failed += not ok
        print(f"{n}:1 -> each QP {share:.3f} of the fair share, queue {q / 1024:.0f} KB: "
              f"{'ok' if ok else 'FAILED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
