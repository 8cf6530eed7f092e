// `status` for rxe: sysfs (/sys/class/infiniband) read for each host's device.
#include "cli/rdma_status.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "apply/rdma.h"

namespace fabemu::cli {
namespace {

void counters_json(JsonWriter& j, const std::map<std::string, uint64_t>& counters) {
  j.begin_object();
  for (const auto& [name, v] : counters) j.field(name, v);
  j.end_object();
}

// "0000:0000:0000:0000:0000:ffff:0a00:0001" -> "::ffff:10.0.0.1"; other GIDs as they are.
std::string short_gid(const std::string& gid) {
  static const std::string kMapped = "0000:0000:0000:0000:0000:ffff:";
  if (gid.size() != kMapped.size() + 9 || gid.compare(0, kMapped.size(), kMapped) != 0) return gid;
  const unsigned long hi = std::strtoul(gid.substr(kMapped.size(), 4).c_str(), nullptr, 16);
  const unsigned long lo = std::strtoul(gid.substr(kMapped.size() + 5, 4).c_str(), nullptr, 16);
  return "::ffff:" + std::to_string(hi >> 8) + "." + std::to_string(hi & 0xff) + "." +
         std::to_string(lo >> 8) + "." + std::to_string(lo & 0xff);
}

uint64_t counter(const RdmaDeviceState& s, const std::string& name) {
  auto it = s.hw_counters.find(name);
  return it == s.hw_counters.end() ? 0 : it->second;
}

}  // namespace

void rdma_status_json(JsonWriter& j, const LabModel& m, const LabPaths& paths) {
  j.key("rdma").begin_object().field("mode", m.rdma.rxe ? "rxe" : "off");
  if (!m.rdma.rxe) {
    j.field("reason", m.rdma.why_not).end_object();
    return;
  }
  j.field("gid_index", 1);
  j.key("devices").begin_array();
  for (int h : m.topo.hosts()) {
    const std::string& host = m.topo.nodes[h].name;
    const RdmaDeviceState s = read_rdma_device(paths.rxe_name(host));
    j.begin_object().field("host", host).field("device", s.name).field("present", s.present);
    j.field("nic", host_nic(m.topo, h));
    if (s.present) {
      j.field("netdev", s.netdev).field("state", s.state).field("phys_state", s.phys_state);
      j.field("gid1", s.gid1).field("gid1_type", s.gid1_type);
      j.key("hw_counters");
      counters_json(j, s.hw_counters);
      j.key("counters");
      counters_json(j, s.counters);
    }
    j.end_object();
  }
  j.end_array().end_object();
}

void print_rdma_status(const LabModel& m, const LabPaths& paths) {
  if (!m.rdma.rxe) {
    std::printf("\nrdma: off (%s)\n", m.rdma.why_not.c_str());
    return;
  }
  const auto hosts = m.topo.hosts();
  std::printf("\nrdma: soft-RoCE (rxe) on %zu hosts, RoCEv2 GID index 1\n", hosts.size());
  std::printf("%-12s %-24s %-8s %-8s %12s %12s  %s\n", "HOST", "DEVICE", "NETDEV", "STATE",
              "SENT_PKTS", "RCVD_PKTS", "GID 1");
  for (int h : hosts) {
    const std::string& host = m.topo.nodes[h].name;
    const RdmaDeviceState s = read_rdma_device(paths.rxe_name(host));
    if (!s.present) {
      std::printf("%-12s %-24s MISSING\n", host.c_str(), s.name.c_str());
      continue;
    }
    std::printf(
        "%-12s %-24s %-8s %-8s %12llu %12llu  %s\n", host.c_str(), s.name.c_str(), s.netdev.c_str(),
        s.state.c_str(), static_cast<unsigned long long>(counter(s, "sent_pkts")),
        static_cast<unsigned long long>(counter(s, "rcvd_pkts")), short_gid(s.gid1).c_str());
    // The rest only where something happened: retries, sequence errors, RNR NAKs, ...
    std::string other;
    for (const auto* set : {&s.hw_counters, &s.counters})
      for (const auto& [name, v] : *set)
        if (v && name != "sent_pkts" && name != "rcvd_pkts")
          other += (other.empty() ? "" : ", ") + name + " " + std::to_string(v);
    if (!other.empty()) std::printf("%-12s %s\n", "", other.c_str());
  }
}

}  // namespace fabemu::cli
