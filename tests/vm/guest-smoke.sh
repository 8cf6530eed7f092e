#!/usr/bin/env bash
# Smoke test for the VM lane, run inside the guest (scripts/vm-run -- tests/vm/guest-smoke.sh):
# proves the guest kernel has what the test lanes need. Everything it makes lives in two
# network namespaces of its own, removed at the end. Exit status: the number of failed checks.
# shellcheck disable=SC2317 # the check functions are run through check() and trap
set -uo pipefail

kernel_min=7.1 # rxe between namespaces needs it (per-netns rxe sockets)
ns_a=smoke-$$-a ns_b=smoke-$$-b
failures=0

pass() { echo "PASS $1"; }
fail() {
  echo "FAIL $1${2:+: $2}"
  failures=$((failures + 1))
}
skip() { echo "SKIP $1: $2"; }

# check NAME CMD... runs CMD quietly and records the outcome under NAME, with CMD's own
# error output as the reason when it fails.
check() {
  local name=$1 err
  shift
  if err=$("$@" 2>&1 >/dev/null); then pass "$name"; else fail "$name" "$(tail -n 1 <<<"$err")"; fi
}

cleanup() {
  ip netns exec "$ns_a" rdma link delete rxe-a 2>/dev/null
  ip netns exec "$ns_b" rdma link delete rxe-b 2>/dev/null
  ip netns delete "$ns_a" 2>/dev/null
  ip netns delete "$ns_b" 2>/dev/null
}
trap cleanup EXIT

kernel_at_least() {
  local have
  have=$(uname -r)
  [ "$(printf '%s\n' "$kernel_min" "${have%%-*}" | sort -V | head -n 1)" = "$kernel_min" ]
}

fs_type_is() { [ "$(stat -f -c %T "$1")" = "$2" ]; }

# Two namespace "hosts" joined by a veth pair, 10.99.0.1 and 10.99.0.2.
make_hosts() {
  ip netns add "$ns_a" && ip netns add "$ns_b" &&
    ip link add va netns "$ns_a" type veth peer name vb netns "$ns_b" &&
    ip -n "$ns_a" addr add 10.99.0.1/24 dev va && ip -n "$ns_b" addr add 10.99.0.2/24 dev vb &&
    ip -n "$ns_a" link set va up && ip -n "$ns_b" link set vb up &&
    ip -n "$ns_a" link set lo up && ip -n "$ns_b" link set lo up
}

qdisc_is() { tc -n "$1" qdisc show dev "$2" | grep -q "^qdisc $3 "; }

rxe_active() { ip netns exec "$1" rdma link show "$2/1" | grep -q 'state ACTIVE'; }

# An RC ping-pong between the two rxe devices, if rdma-core's ibverbs-utils are installed:
# devices that exist but pass no traffic are what older kernels give.
rxe_pingpong() {
  command -v ibv_rc_pingpong >/dev/null || { skip "rxe traffic between namespaces" "no ibv_rc_pingpong"; return; }
  local gid=1 # RoCEv2, IPv4-mapped: the second GID entry of a fresh rxe device
  ip netns exec "$ns_a" timeout 30 ibv_rc_pingpong -d rxe-a -g "$gid" -n 50 >/dev/null 2>&1 &
  sleep 1
  check "rxe traffic between namespaces (ibv_rc_pingpong)" \
    ip netns exec "$ns_b" timeout 20 ibv_rc_pingpong -d rxe-b -g "$gid" -n 50 10.99.0.1
  wait
}

echo "kernel $(uname -r)"
check "kernel >= $kernel_min" kernel_at_least
check "bpffs at /sys/fs/bpf" fs_type_is /sys/fs/bpf bpf_fs
check "cgroup2 at /sys/fs/cgroup" fs_type_is /sys/fs/cgroup cgroup2fs
check "/ is writable (overlay)" touch /.smoke-$$
rm -f /.smoke-$$

check "veth between two namespaces" make_hosts
check "ping across the veth" ip netns exec "$ns_a" ping -c 1 -W 5 10.99.0.2
check "tc qdisc fq" tc -n "$ns_a" qdisc add dev va root fq
check "fq installed" qdisc_is "$ns_a" va fq
check "tc qdisc netem" tc -n "$ns_b" qdisc add dev vb root netem delay 1ms
check "bridge" ip -n "$ns_a" link add smoke-br type bridge
check "ifb" ip -n "$ns_a" link add smoke-ifb type ifb
check "tun" ip -n "$ns_a" tuntap add dev smoke-tap mode tap

check "rdma link add rxe (namespace a)" ip netns exec "$ns_a" rdma link add rxe-a type rxe netdev va
check "rdma link add rxe (namespace b)" ip netns exec "$ns_b" rdma link add rxe-b type rxe netdev vb
check "rxe-a port ACTIVE" rxe_active "$ns_a" rxe-a
rxe_pingpong

check "modprobe openvswitch" modprobe openvswitch
check "/sys/module/openvswitch" test -d /sys/module/openvswitch
check "genetlink family ovs_datapath" genl ctrl get name ovs_datapath

echo "$failures failed"
exit "$failures"
