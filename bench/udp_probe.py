#!/usr/bin/python3
"""A UDP probe stream for convergence measurements, run on two hosts of a lab by one exec step
(`fabemu run`): the host named by --to receives, every other sends. The sender spreads its
packets over --flows source ports (so that ECMP puts some flows on every path), one packet
every --spacing seconds in all, for --seconds; the receiver records what arrived and writes a
JSON summary to --out: per flow, packets sent and received and the longest gap between arrivals
(the outage that flow saw, less its own spacing)."""
import argparse
import json
import os
import socket
import struct
import time

PORT = 9000
HEADER = struct.Struct("!IId")  # flow, sequence, send time


def send(args):
    socks = []
    for _ in range(args.flows):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("0.0.0.0", 0))
        socks.append(s)
    dest = (args.to, PORT)
    time.sleep(args.start_delay)  # the receiver binds first
    start = time.monotonic()
    seq = [0] * args.flows
    n = 0
    while True:
        due = start + n * args.spacing
        now = time.monotonic()
        if due - start >= args.seconds:
            break
        if due > now:
            time.sleep(due - now)
        f = n % args.flows
        socks[f].sendto(HEADER.pack(f, seq[f], time.time()).ljust(64, b"\0"), dest)
        seq[f] += 1
        n += 1
    for _ in range(5):  # the end: every flow sent this many
        socks[0].sendto(HEADER.pack(0xFFFFFFFF, 0, 0.0) + json.dumps(seq).encode(), dest)
        time.sleep(0.05)


def receive(args):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", PORT))
    s.settimeout(args.seconds + 30)
    last, gap, got = {}, {}, {}
    sent = None
    try:
        while True:
            data, _ = s.recvfrom(2048)
            now = time.monotonic()
            flow, seq, _ = HEADER.unpack_from(data)
            if flow == 0xFFFFFFFF:
                sent = json.loads(data[HEADER.size:].decode())
                break
            got[flow] = got.get(flow, 0) + 1
            if flow in last:
                gap[flow] = max(gap.get(flow, 0.0), now - last[flow])
            last[flow] = now
    except socket.timeout:
        pass
    spacing = args.spacing * args.flows
    flows = []
    for f in range(args.flows):
        flows.append({"sent": sent[f] if sent else None, "received": got.get(f, 0),
                      "outage_s": max(0.0, gap.get(f, 0.0) - spacing)})
    with open(args.out, "w") as out:
        json.dump({"flows": flows, "spacing_s": args.spacing}, out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--to", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--seconds", type=float, default=4)
    p.add_argument("--spacing", type=float, default=0.001)
    p.add_argument("--flows", type=int, default=16)
    p.add_argument("--start-delay", type=float, default=0.5)
    args = p.parse_args()
    if os.environ.get("FABEMU_NODE") == args.to:
        receive(args)
    else:
        send(args)


if __name__ == "__main__":
    main()
