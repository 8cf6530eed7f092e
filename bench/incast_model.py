#!/usr/bin/python3
"""Reference: a packet-level model of scenarios/incast-dcqcn.yaml's N:1 RDMA incast, with the
senders as soft-RoCE behaves and DCQCN as ebpf/dcqcn.h runs it (the project's own code).

What it models, in microseconds and bytes:
- N senders, each one QP writing `--bytes` in frames of 4096 bytes of payload (rxe's RoCE MTU
  under fabric.mtu 9000) plus 80 of headers, at 100 Gbit/s into one switch whose port to the
  receiver is the bottleneck (100 Gbit/s, FIFO).
- rxe: at most `--window` frames unacknowledged per QP (128 PSNs) and at most `--nic-queue`
  frames handed to the NIC's qdisc and not yet on the wire (rxe's 64 in-flight skbs). The
  receiver acknowledges every 16 frames (perftest's 64 KB messages), 3 us later.
- The reaction point stamps each frame's departure when rxe hands it over, at the QP's rate
  then (EDT, as fq releases it): a cut reaches the wire only after the frames already stamped.
- PFC at the switch: a sender's port is paused while more than Xoff (400K) of its frames sit in
  the switch, until fewer than Xon (300K) do. RED at the bottleneck on enqueue (40K to 160K,
  20%). The notification point answers a marked frame with a CNP if the QP had none for
  `--cnp-interval`; it reaches the sender 3 us later. DCQCN's timers fire in order.

It prints, per N, the pause time summed over the senders' ports and the receiver's goodput
(bytes over the time from its first to its last frame, of the line) with PFC alone and with
DCQCN, and the ratio of the pause times. The VM lane's bench (bench/incast_dcqcn.py) measures
the same on the lab; docs/congestion-control.md compares the two. `--nic-queue 4` models a
NIC that holds almost nothing ahead of the wire, as a ConnectX's scheduler does.

    python3 bench/incast_model.py [--senders 2,4,8] [--cnp-interval 50] [--alpha-interval 1]
        [--rp-timer 300] [--byte-counter 0] [--initial-alpha 1] [--nic-queue 64]"""
import argparse
import fractions
import heapq
import random
import sys

LINE = 12500.0  # bytes per us: 100 Gbit/s
PAYLOAD, FRAME = 4096, 4096 + 80
XOFF, XON = 400 * 1024, 300 * 1024
KMIN, KMAX, PMAX = 40 * 1024, 160 * 1024, 0.2
PROP, FEEDBACK, ACK_EVERY = 1.0, 3.0, 16


class Qp:
    def __init__(self, i, frames, line):
        self.i, self.total = i, frames
        self.sent = self.acked = self.received = 0
        self.rc = self.rt = line
        self.alpha, self.started = 0.0, False
        self.alpha_cnp = self.decrease_cnp = False
        self.stage = self.byte_stage = 0
        self.byte_count = 0.0
        self.next_send = self.link_free = 0.0
        self.increase_at = None
        self.nic = []  # departure stamps of the frames in the NIC's qdisc
        self.paused, self.pause_began, self.paused_us = False, 0.0, 0.0
        self.in_switch = 0
        self.cnps, self.last_cnp = 0, -1e18
        self.done = False


class Model:
    """One run: N QPs, PFC, RED and (cc == "dcqcn") DCQCN."""

    def __init__(self, a, senders, cc):
        self.a, self.cc = a, cc
        self.line = LINE
        self.ai, self.hai = 5e6 * 4 / 8e6, 50e6 * 4 / 8e6  # HPCC's, per 100 Gbit/s, bytes/us
        self.min_rate = 1e9 / 8e6
        self.events, self.seq, self.now = [], 0, 0.0
        self.qps = [Qp(i, int(a.bytes // PAYLOAD), LINE) for i in range(senders)]
        self.queue, self.queued, self.port_free = [], 0, 0.0
        self.first_rx = self.last_rx = None
        self.rx_bytes = 0
        self.rng = random.Random(a.seed)

    def at(self, t, f, *args):
        self.seq += 1
        heapq.heappush(self.events, (t, self.seq, f, args))

    # The reaction point's machine (ebpf/dcqcn.h).
    def increase(self, q, by_bytes):
        a = self.a
        lo = min(q.stage, q.byte_stage) if a.byte_counter else q.stage
        hi = max(q.stage, q.byte_stage) if a.byte_counter else q.stage
        if lo > a.fast_recovery:
            q.rt += self.hai
        elif hi >= a.fast_recovery:
            q.rt += self.ai
        q.rt = min(q.rt, self.line)
        q.rc = (q.rc + q.rt) / 2
        if by_bytes:
            q.byte_stage += 1
        else:
            q.stage += 1

    def alpha_update(self, q):
        g = self.a.g
        q.alpha = (1 - g) * q.alpha + (g if q.alpha_cnp else 0)
        q.alpha_cnp = False
        self.at(self.now + self.a.alpha_interval, self.alpha_update, q)

    def decrease_check(self, q):
        if q.decrease_cnp:
            if self.a.clamp_target or q.stage or q.byte_stage:
                q.rt = q.rc
            q.rc = max(self.min_rate, q.rc * (1 - q.alpha / 2))
            q.stage = q.byte_stage = 0
            q.byte_count = 0
            q.decrease_cnp = False
            q.increase_at = self.now + self.a.rp_timer
            self.at(q.increase_at, self.increase_timer, q, q.increase_at)
        self.at(self.now + self.a.decrease_interval, self.decrease_check, q)

    def increase_timer(self, q, when):
        if q.increase_at != when:
            return  # re-armed by a decrease since
        self.increase(q, False)
        q.increase_at = self.now + self.a.rp_timer
        self.at(q.increase_at, self.increase_timer, q, q.increase_at)

    def cnp(self, q):
        q.cnps += 1
        q.alpha_cnp = q.decrease_cnp = True
        if not q.started:
            q.started, q.alpha, q.alpha_cnp = True, self.a.initial_alpha, False
            self.at(self.now + self.a.alpha_interval, self.alpha_update, q)
            self.at(self.now + self.a.decrease_interval + 1e-3, self.decrease_check, q)

    # The sender: rxe hands frames to the NIC while its window and its skbs allow.
    def push(self, q):
        a = self.a
        while q.sent < q.total and q.sent - q.acked < a.window and len(q.nic) < a.nic_queue:
            paced = self.cc == "dcqcn" and q.started
            start = max(self.now, q.next_send)
            q.next_send = start + FRAME / (q.rc if paced else self.line)
            q.nic.append(start)
            q.sent += 1
            if paced and a.byte_counter:
                q.byte_count += FRAME
                if q.byte_count >= a.byte_counter:
                    q.byte_count = 0
                    self.increase(q, True)
            if len(q.nic) == 1:
                self.wake(q)

    def wake(self, q):
        if q.nic and not q.paused:
            self.at(max(self.now, q.nic[0], q.link_free), self.transmit, q)

    def transmit(self, q):
        if q.paused or not q.nic:
            return
        t = max(self.now, q.nic[0], q.link_free)
        if t > self.now + 1e-9:
            self.at(t, self.transmit, q)
            return
        q.nic.pop(0)
        q.link_free = self.now + FRAME / self.line
        self.at(q.link_free + PROP, self.switch_in, q)
        self.push(q)
        self.wake(q)

    # The switch: PFC per ingress port, RED and FIFO at the port to the receiver.
    def switch_in(self, q):
        marked = False
        if self.cc == "dcqcn" and self.queued > KMIN:
            p = 1.0 if self.queued > KMAX else PMAX * (self.queued - KMIN) / (KMAX - KMIN)
            marked = self.rng.random() < p
        self.queue.append((q, marked))
        self.queued += FRAME
        q.in_switch += FRAME
        if q.in_switch > XOFF and not q.paused:
            q.paused, q.pause_began = True, self.now
        if len(self.queue) == 1:
            self.at(max(self.now, self.port_free), self.switch_out)

    def switch_out(self):
        q, marked = self.queue.pop(0)
        self.port_free = self.now + FRAME / self.line
        self.queued -= FRAME
        q.in_switch -= FRAME
        if q.paused and q.in_switch < XON:
            q.paused = False
            q.paused_us += self.now - q.pause_began
            self.wake(q)
        self.at(self.port_free + PROP, self.receive, q, marked)
        if self.queue:
            self.at(self.port_free, self.switch_out)

    # The receiver: its NIC's notification point and rxe's acknowledgements.
    def receive(self, q, marked):
        self.rx_bytes += FRAME
        self.first_rx = self.now if self.first_rx is None else self.first_rx
        self.last_rx = self.now
        q.received += 1
        if marked and self.now - q.last_cnp >= self.a.cnp_interval:
            q.last_cnp = self.now
            self.at(self.now + FEEDBACK, self.cnp, q)
        if q.received % ACK_EVERY == 0 or q.received == q.total:
            self.at(self.now + FEEDBACK, self.ack, q, q.received)

    def ack(self, q, n):
        q.acked = max(q.acked, n)
        q.done = q.acked >= q.total
        self.push(q)

    def run(self):
        for q in self.qps:
            self.at(0.0, self.push, q)
        while self.events and not all(q.done for q in self.qps):
            self.now, _, f, args = heapq.heappop(self.events)
            f(*args)
        span = self.last_rx - self.first_rx
        return {"pause_us": sum(q.paused_us for q in self.qps),
                "goodput": self.rx_bytes / (self.line * span) if span > 0 else 0.0,
                "cnps": sum(q.cnps for q in self.qps)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--senders", default="2,4,8", help="the incasts' N (comma-separated)")
    ap.add_argument("--bytes", type=float, default=2e-3 * 100e9 / 8,
                    help="each sender's (default 2 ms of the receiver's line, as the bench)")
    ap.add_argument("--alpha-interval", type=float, default=1.0, help="us")
    ap.add_argument("--decrease-interval", type=float, default=4.0, help="us")
    ap.add_argument("--rp-timer", type=float, default=300.0, help="us")
    ap.add_argument("--cnp-interval", type=float, default=50.0, help="us")
    ap.add_argument("--g", type=lambda t: float(fractions.Fraction(t)), default=1 / 256)
    ap.add_argument("--byte-counter", type=float, default=0, help="bytes (0: none)")
    ap.add_argument("--initial-alpha", type=lambda t: float(fractions.Fraction(t)), default=1.0)
    ap.add_argument("--fast-recovery", type=int, default=1)
    ap.add_argument("--clamp-target", action="store_true")
    ap.add_argument("--window", type=int, default=128, help="rxe's unacknowledged frames")
    ap.add_argument("--nic-queue", type=int, default=64,
                    help="frames rxe may have in the NIC's qdisc (rxe: 64 skbs per QP)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    print(f"# incast model: RED 40K-160K 20%, PFC 400K/300K, NIC queue {a.nic_queue} frames, "
          f"CNP interval {a.cnp_interval:g} us, alpha {a.alpha_interval:g} us, RP timer "
          f"{a.rp_timer:g} us, g {a.g:g}, byte counter {a.byte_counter:g}, initial alpha "
          f"{a.initial_alpha:g}")
    print(f"{'N':>2} {'mode':>10} {'CNPs':>6} {'paused':>11} {'goodput':>8}")
    for n in [int(x) for x in a.senders.split(",") if x]:
        runs = {cc: Model(a, n, cc).run() for cc in ("dcqcn", "none")}
        for cc, name in (("dcqcn", "PFC+DCQCN"), ("none", "PFC alone")):
            r = runs[cc]
            print(f"{n:>2} {name:>10} {r['cnps']:>6} {r['pause_us']:>9.0f}us {r['goodput']:>8.3f}")
        cut = runs["none"]["pause_us"] / max(runs["dcqcn"]["pause_us"], 1e-9)
        print(f"   pause time PFC alone / PFC+DCQCN: {cut:.1f}x" if cut < 1e6 else
              "   pause time PFC alone / PFC+DCQCN: infx")
    return 0


if __name__ == "__main__":
    sys.exit(main())
