// What a shaped port needs besides the program: fq as its root qdisc (or, without fq, htb to
// hold the rate), offloads off, and the probes that tell whether this kernel has them.
#pragma once

#include <string>

#include "shaping/link_cfg.h"
#include "util/netlink.h"
#include "util/result.h"

namespace fabemu {

// Makes fq (with `p`'s limits) the root qdisc of the port, replacing whatever was there; on a
// port that already has fq its limits change and its queued packets stay.
Result<void> replace_root_fq(NetlinkSocket& rtnl, int ifindex, const FqParams& p);

// Makes htb (one class at `p`'s rate, a byte FIFO under it) the root qdisc of the port. On a
// port that has it already, only the class changes, and queued packets stay.
Result<void> replace_root_htb(NetlinkSocket& rtnl, int ifindex, const HtbParams& p, bool exists);

// Makes a qdisc without options (`kind`: e.g. a registered BPF qdisc's) the root qdisc of the
// port, replacing whatever was there.
Result<void> replace_root_kind(NetlinkSocket& rtnl, int ifindex, const std::string& kind);

// Back to the device's default root qdisc (for a veth: none). No root qdisc is success.
Result<void> remove_root_qdisc(NetlinkSocket& rtnl, int ifindex);

// Turns TSO, GSO and GRO off on `ifname` in the calling thread's namespace, so that the stack
// hands the port (and the next port after a forward) one wire packet at a time; with
// `tx_checksum` transmit checksumming too (every frame leaves with its checksums). Features a
// device does not have count as off.
Result<void> disable_offloads(const std::string& ifname, bool tx_checksum = false);

// Whether this kernel has sch_fq (sch_htb): makes it the root qdisc of `ifindex`, with the
// options `up` uses, then removes it again. The caller's thread must be in a throwaway
// namespace: the capability probe runs it on loopback there.
Result<void> try_root_fq(NetlinkSocket& rtnl, int ifindex);
Result<void> try_root_htb(NetlinkSocket& rtnl, int ifindex);

}  // namespace fabemu
