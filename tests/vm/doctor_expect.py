#!/usr/bin/python3
"""Checks `fabemu doctor --json` against what a lane's kernel must offer.

usage: doctor_expect.py full|degraded FABEMU
  full      a kernel >= 7.1 (the VM lane): every kernel feature present, rxe between namespaces
  degraded  Debian 12's 6.1: fq, netem and OVS present; rxe created but passing no traffic
            between namespaces
"""
import json
import subprocess
import sys

# Features a kernel provides (ovs_userspace is a package, not the kernel's).
KERNEL_FEATURES = ["netns", "uts_ns", "veth", "bridge", "ecmp", "bpf", "clsact", "tcx", "sch_fq",
                   "sch_netem", "sch_htb", "sch_tbf", "ifb", "ovs_kernel", "rxe", "cgroup_cpu",
                   "cgroup_memory", "bpf_qdisc", "ecmp_seed"]


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("full", "degraded"):
        sys.exit(__doc__)
    lane, fabemu = sys.argv[1], sys.argv[2]
    report = json.loads(subprocess.run([fabemu, "doctor", "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    status = {f["id"]: (f["status"], f["detail"]) for f in report["features"]}
    print(f"kernel {report['kernel']['release']}:")
    for fid in KERNEL_FEATURES:
        print(f"  {fid:14} {status[fid][0]:8} {status[fid][1]}")
    expected = {fid: "yes" for fid in KERNEL_FEATURES}
    if lane == "degraded":
        # 6.1 has no tcx, no BPF qdiscs (6.16+), no ECMP seed per namespace (6.11+), and runs
        # rxe only in the initial namespace.
        expected.update({"tcx": "no", "rxe": "no", "bpf_qdisc": "no", "ecmp_seed": "no"})
    wrong = [f"{fid}: {status[fid][0]}, expected {want}" for fid, want in expected.items()
             if status[fid][0] != want]
    if lane == "degraded" and "namespace" not in status["rxe"][1]:
        wrong.append("rxe: the detail does not say that traffic between namespaces fails")
    for w in wrong:
        print("MISMATCH " + w)
    print(f"{len(expected) - len(wrong)} passed, {len(wrong)} failed")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
