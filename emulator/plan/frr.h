// FRR's configuration for a BGP router switch (routing: bgp): zebra, bfdd and bgpd files as
// the daemons read them, from the model's BGP plan. Pure text; `up` writes and starts them.
#pragma once

#include <string>
#include <vector>

#include "model/lab_model.h"
#include "util/result.h"

namespace fabemu {

struct FrrConfig {
  std::string file;  // zebra.conf, bfdd.conf, bgpd.conf, vtysh.conf
  std::string text;
};

// The daemons every router runs, in start order (bgpd last: its sessions ask bfdd).
std::vector<std::string> frr_daemons(const LabModel& m);

// BGP keepalive and hold times (FRR's datacenter profile: 3 s and 9 s) and the BFD interval
// in the lab's wall time, in the units FRR takes (s, ms); frr_timers_fit says when a dilated
// lab's timers exceed what BGP or FRR accept.
struct FrrTimers {
  uint64_t keepalive_s = 3, hold_s = 9;
  uint64_t bfd_interval_ms = 0;  // 0: no BFD
  uint32_t bfd_multiplier = 3;
};
FrrTimers frr_timers(const LabModel& m);
Result<void> frr_timers_fit(const LabModel& m);

std::vector<FrrConfig> frr_configs(const LabModel& m, const BgpRouter& r, const FrrTimers& t);

}  // namespace fabemu
