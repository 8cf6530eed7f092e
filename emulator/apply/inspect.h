// Reading back a running lab's kernel state: interfaces, their state and counters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace fabemu {

struct InterfaceState {
  std::string name;
  bool up = false;       // administratively up
  bool running = false;  // carrier (both veth ends up)
  uint32_t mtu = 0;
  uint64_t rx_packets = 0, tx_packets = 0, rx_bytes = 0, tx_bytes = 0;
  uint64_t rx_dropped = 0, tx_dropped = 0, rx_errors = 0, tx_errors = 0;
};

// Interfaces of the namespace pinned at `netns_path` (the calling thread returns home).
Result<std::vector<InterfaceState>> read_interfaces(const std::string& netns_path);

}  // namespace fabemu
