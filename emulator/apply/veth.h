// Veth pairs by raw rtnetlink: libnl cannot fix a device's ifindex on both ends of a pair or
// set its GSO limits, and the link model needs both.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "util/netlink.h"
#include "util/result.h"

namespace fabemu {

struct VethEnd {
  int ns_fd = -1;  // the namespace the end is created in
  std::string ifname;
  uint32_t ifindex = 0;                       // 0: the kernel picks
  std::optional<std::array<uint8_t, 6>> mac;  // unset: random
};

// Creates a veth pair with each end straight in its namespace (never visible in ours). End a
// is up, end b still down: the kernel cannot open a veth whose peer is not joined yet.
// gso_max_segs 0 keeps the kernel's default. Fails with EBUSY when an ifindex is taken.
Result<void> create_veth_pair(NetlinkSocket& rtnl, const VethEnd& a, const VethEnd& b, uint32_t mtu,
                              uint32_t gso_max_segs);

// Changes the GSO segment limit of a device in the socket's namespace (kernels >= 5.19).
// Sockets already connected keep the limit they cached until their route is looked up again.
Result<void> set_gso_max_segs(NetlinkSocket& rtnl, int ifindex, uint32_t segs);

}  // namespace fabemu
