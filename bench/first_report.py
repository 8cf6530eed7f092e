#!/usr/bin/python3
"""Benchmark: a fresh machine's time from a clone of fabemu to its first report.

A fresh Debian (debootstrap --variant=minbase, from the machine's own apt mirror) becomes the
root of a private mount namespace (pivot_root, so that the namespaces fabemu makes inherit it,
as they would on a real machine); fabemu is cloned into it, and each phase of the first-report
path is timed there: installing packages, building, `fabemu run` on the default scenario.
`--mode after` is today's scripts/run-default (`install-deps --run`, `build --run`); `--mode
before` is what it did until the minimal set existed (every package of the test lanes, every
target). Each mode gets a fresh tree. See README.md.

sudo /usr/bin/python3 bench/first_report.py [--mode before|after|both] [--keep] [--json FILE]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITE = "bookworm"

# Runs as PID 1's child in the new mount namespace: mounts what a booted machine has, makes the
# fresh tree the root, and runs the phases given on the command line, one line of JSON each.
INNER = r"""
set -eu
new=$1; shift
mount --make-rprivate /
mount --bind "$new" "$new"
mount -t proc proc "$new/proc"
mount --rbind /sys "$new/sys"
mount --rbind /dev "$new/dev"
mount -t tmpfs tmpfs "$new/run"
mount -t tmpfs tmpfs "$new/tmp"
cp /etc/resolv.conf "$new/etc/resolv.conf"
mkdir -p "$new/.old"
cd "$new"
pivot_root . .old
umount -l /.old
rmdir /.old
cd /root/fabemu
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
TIMEFORMAT='%R %U %S'
for phase in "$@"; do
  name=${phase%%=*}; cmd=${phase#*=}
  rc=0
  { time bash -c "$cmd" > "/root/$name.log" 2>&1 || rc=$?; } 2> /root/time
  read -r real user sys < /root/time
  # Wall time, and the CPU time of the phase's processes (what a busy machine cannot inflate).
  echo "{\"phase\": \"$name\", \"seconds\": $real, \"cpu_seconds\": $(echo "$user + $sys" | bc), \"rc\": $rc}"
  [ $rc -eq 0 ] || exit 0
done
"""

RUN = "build/emulator/fabemu run scenarios/ai-400g.yaml --accept-degraded --report /root/report"
MODES = {
    "before": [("install", "scripts/install-deps"), ("build", "scripts/build"), ("run", RUN)],
    "after": [("install", "scripts/install-deps --run"), ("build", "scripts/build --run"),
              ("run", RUN)],
}


def debootstrap(target: Path, cache: Path) -> float:
    start = time.perf_counter()
    # The base tree once per invocation, then copied: the machine's starting point is the same
    # for every mode, and debootstrap's own time is not the user's.
    if not (cache / "etc/os-release").exists():
        mirror = "http://deb.debian.org/debian"
        subprocess.run(["debootstrap", "--variant=minbase", "--include=git,ca-certificates,bc",
                        SUITE, str(cache), mirror], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cp", "-a", f"{cache}/.", str(target)], check=True)
    return time.perf_counter() - start


def run_mode(mode: str, base: Path, cache: Path) -> dict:
    tree = base / mode
    tree.mkdir()
    prepare = debootstrap(tree, cache)
    # A clone of this checkout's HEAD, as a user's `git clone` would make it.
    subprocess.run(["git", "clone", "-q", str(REPO), str(tree / "root/fabemu")], check=True)
    phases = [f"{name}={cmd}" for name, cmd in MODES[mode]]
    out = subprocess.run(["unshare", "--mount", "--fork", "bash", "-c", INNER, "inner",
                          str(tree)] + phases, stdout=subprocess.PIPE, text=True)
    results = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    record = {"mode": mode, "prepare_s": round(prepare, 1), "phases": results}
    report = tree / "root/report"
    record["report"] = (report / "report.jsonl").exists()
    for r in results:
        if r["rc"] != 0:
            log = (tree / f"root/{r['phase']}.log").read_text(errors="replace")
            record["failed_log_tail"] = log[-2000:]
    total = sum(r["seconds"] for r in results)
    record["total_s"] = round(total, 1)
    return record


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["before", "after", "both"], default="both")
    p.add_argument("--dir", default="/var/tmp", help="where the fresh trees go (default /var/tmp)")
    p.add_argument("--keep", action="store_true", help="leave the trees for a look")
    p.add_argument("--json", help="write the records as JSON lines to this file")
    a = p.parse_args()
    if os.geteuid() != 0:
        print("first_report: run as root (debootstrap, mount namespaces)", file=sys.stderr)
        return 1
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the trees go on kill too
    if not shutil.which("debootstrap"):
        print("first_report: needs debootstrap (apt-get install debootstrap)", file=sys.stderr)
        return 1
    base = Path(tempfile.mkdtemp(prefix="fabemu-fresh-", dir=a.dir))
    cache = base / "base"
    cache.mkdir()
    records = []
    try:
        for mode in (["after", "before"] if a.mode == "both" else [a.mode]):
            rec = run_mode(mode, base, cache)
            records.append(rec)
            phases = ", ".join(f"{r['phase']} {r['seconds']:.0f} s ({r['cpu_seconds']:.0f} s CPU)" +
                               ("" if r["rc"] == 0 else f" (exit {r['rc']})")
                               for r in rec["phases"])
            print(f"{mode:6}: {phases}; clone to first report {rec['total_s']:.0f} s"
                  f"{'' if rec['report'] else ', NO REPORT'}", flush=True)
            if "failed_log_tail" in rec:
                print(rec["failed_log_tail"], file=sys.stderr)
    finally:
        if a.json:
            with open(a.json, "w") as f:
                for r in records:
                    f.write(json.dumps(r) + "\n")
        if not a.keep:
            shutil.rmtree(base, ignore_errors=True)
    ok = all(r["report"] for r in records)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
