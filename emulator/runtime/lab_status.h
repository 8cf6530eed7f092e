// What a running lab is now, read back from the kernel and the lab's files: every node's
// namespace and interfaces, the link model's shapes and counters, the hosts' rxe devices.
// Reading only; `fabemu status` renders it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apply/inspect.h"
#include "apply/journal.h"
#include "apply/link_control.h"
#include "apply/rdma.h"
#include "plan/plan.h"

namespace fabemu {

struct LabStatus {
  LabPaths paths;
  JournalFile journal;
  LabModel model;
  std::string state;                 // "up", "incomplete" (up never finished), "degraded"
  std::vector<std::string> missing;  // nodes whose namespace could not be read
  // Per node: its interfaces by name, as the kernel has them.
  std::vector<std::map<std::string, InterfaceState>> interfaces;
  std::optional<LinkModelState> link_model;  // unset: unreadable (link_model_error says why)
  std::string link_model_error;
  std::map<std::string, RdmaDeviceState> rdma;  // by host, when the lab has rxe
  // CLOCK_REALTIME when the link model's counters had been read: two reads' counters over the
  // time between them (divided by the time scale) are a rate in the real fabric's units.
  int64_t read_ns = 0;

  // One end's interface, or nullptr when its namespace or interface is gone.
  const InterfaceState* interface(int node, const std::string& ifname) const;
  // Direction `back` of link `link` in the link model, or nullptr when unreadable.
  const DirectionState* direction(size_t link, bool back) const;
  // Both ends running and neither direction `link down`.
  bool link_up(size_t link) const;
  // Link-model ports that carry the program and a shape.
  int shaped_ports() const;
};

// The status of lab `paths.lab`; ENOENT when there is no such lab.
Result<LabStatus> read_lab_status(const LabPaths& paths);

// Labs under run_root with their state ("up", "incomplete", "broken (no journal)") and the
// scenario each came from.
struct LabListing {
  std::string lab, state, scenario;
};
std::vector<LabListing> list_lab_states(const LabPaths& base);

}  // namespace fabemu
