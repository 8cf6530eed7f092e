// Building a node's context: paths from LabPaths, rank environment from the model.
#include "runtime/host_env.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "apply/ovs.h"
#include "util/host_clock.h"
#include "util/process.h"

namespace fabemu {

std::string workload_dir(const LabModel& m, const LabPaths& paths) {
  if (m.part && !m.part->shared_dir.empty()) return m.part->shared_dir + "/" + paths.lab;
  return paths.shared_dir();
}

NodeContext node_context(const LabModel& m, const LabPaths& paths, int id) {
  const Topology& t = m.topo;
  const Node& n = t.nodes[id];
  NodeContext c;
  c.lab = paths.lab;
  c.node = n.name;
  c.host = n.role == Role::Host;
  c.netns_path = node_netns_path(m, paths, id);
  c.etc_dir = paths.etc_dir();
  c.env = {{"FABEMU_LAB", paths.lab},
           {"FABEMU_NODE", n.name},
           {"FABEMU_SHARED_DIR", workload_dir(m, paths)}};
  std::string ifnames;
  for (int l : t.links_of(id)) ifnames += (ifnames.empty() ? "" : ",") + t.links[l].end(id).ifname;
  c.env.push_back({"FABEMU_IFNAMES", ifnames});
  // An OVS switch is a bridge in the lab's OVS namespace: ovs-vsctl, ovs-ofctl and ovs-appctl
  // there reach the lab's own daemons.
  if (!c.host && ovs_switches(m)) {
    const auto env = ovs_env(paths.ovs_dir());
    c.env.insert(c.env.end(), env.begin(), env.end());
  }
  // A BGP router's FRR: vtysh there reaches its own daemons.
  if (!c.host && bgp_router(m, id))
    c.binds = {{paths.frr_etc(n.name), "/etc/frr"}, {paths.frr_run(n.name), "/run/frr"}};
  if (!c.host) return c;

  c.uts_path = paths.uts_path(n.name);
  // hosts.tmp: shared leaves the machine's /tmp in view.
  if (m.scenario.hosts.tmp == HostTmp::Private) c.tmp_dir = paths.host_tmp(n.name);
  if (host_has_cgroup(m, id)) c.cgroup = host_cgroup(paths, n.name);
  const auto hosts = t.hosts();
  const std::string primary = host_nic(t, id);
  // UCX on the rxe device's port 1 when the lab has one, else on the NIC.
  const std::string ucx_devices = m.rdma.rxe ? paths.rxe_name(n.name) + ":1" : primary;
  c.env.insert(c.env.end(), {
                                {"RANK", std::to_string(n.rank)},
                                {"WORLD_SIZE", std::to_string(hosts.size())},
                                {"LOCAL_RANK", std::to_string(n.local_rank)},
                                {"LOCAL_WORLD_SIZE", std::to_string(n.local_size)},
                                {"MASTER_ADDR", m.addresses.host_address(t, hosts.front()).str()},
                                {"MASTER_PORT", "29500"},
                                {"FABEMU_ADDR", m.addresses.host_address(t, id).str()},
                                {"GLOO_SOCKET_IFNAME", primary},
                                {"NCCL_SOCKET_IFNAME", primary},
                                {"UCX_NET_DEVICES", ucx_devices},
                                {"OMPI_MCA_btl_tcp_if_include", primary},
                                {"OMPI_MCA_oob_tcp_if_include", primary},
                                {"TMPDIR", "/tmp"},
                            });
  // Soft-RoCE: the host's own rxe device (names are global, every host sees all of them) and
  // GID index 1, its RoCEv2 entry with the NIC's IPv4 address. NCCL matches NCCL_IB_HCA as a
  // prefix (h1 would take h10's too) unless it starts with '='.
  // Time dilation: the factor for programs that scale their own sleeps and timeouts, and the
  // transports' retransmission timers that can be set from the environment, dilated.
  c.env.push_back({"FABEMU_TIME_SCALE", format_factor(m.time_scale.factor)});
  if (m.time_scale.dilated()) {
    // NCCL: 4.096 us x 2^NCCL_IB_TIMEOUT, 20 by default; UCX: 1 s by default.
    const int extra = static_cast<int>(std::ceil(std::log2(m.time_scale.factor)));
    c.env.push_back({"NCCL_IB_TIMEOUT", std::to_string(std::min(31, 20 + extra))});
    c.env.push_back({"UCX_RC_TIMEOUT", format_factor(m.time_scale.factor) + "s"});
  }
  if (m.rdma.rxe)
    c.env.insert(c.env.end(), {{"NCCL_IB_HCA", "=" + paths.rxe_name(n.name)},
                               {"NCCL_IB_GID_INDEX", "1"},
                               {"FABEMU_RDMA_DEVICE", paths.rxe_name(n.name)}});
  return c;
}

Result<NodeContext> program_context(const LabModel& m, const LabPaths& paths, int id,
                                    std::optional<HostClock> clock) {
  NodeContext c = node_context(m, paths, id);
  if (!c.host || clock.value_or(m.scenario.hosts.clock) != HostClock::Fabric) return c;
  // Asked for, the libraries must be there even when the lab runs in real time, so that a
  // scenario fails on a machine without them whatever its time_scale turned out to be.
  auto libs = find_clock_libraries(self_exe());
  if (!libs) return libs.error();
  if (!m.time_scale.dilated()) return c;
  const char* preload = std::getenv("LD_PRELOAD");
  const auto env = fabric_clock_env(m.time_scale.factor, *libs, preload ? preload : "");
  c.env.insert(c.env.end(), env.begin(), env.end());
  return c;
}

}  // namespace fabemu
