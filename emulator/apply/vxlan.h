// VXLAN tunnel ends for links between machines, through libnl: made in the caller's network
// namespace (whose underlay carries the encapsulated frames) and placed straight in a node's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "model/addressing.h"
#include "util/result.h"

namespace fabemu {

struct VxlanEnd {
  int ns_fd = -1;  // the node's namespace, where the device lives
  std::string ifname;
  uint32_t ifindex = 0;
  uint32_t vni = 0;
  Ipv4 local, remote;
  int underlay_ifindex = 0;  // the lower device, in the caller's namespace
  uint16_t port = 4789;
  uint32_t mtu = 1500;
  std::optional<std::array<uint8_t, 6>> mac;
};

// `ip link add IFNAME type vxlan id VNI local L remote R dev UNDERLAY dstport P nolearning
// netns NS`, with the ifindex, MTU and MAC given. The device is down; EBUSY when the ifindex is
// taken, EEXIST when the VNI already has a device on this machine's port.
Result<void> create_vxlan(const VxlanEnd& end);

}  // namespace fabemu
