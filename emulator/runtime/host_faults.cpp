// Host faults through the kernel: signals to the host's processes, its cgroup's freezer, the
// link model on its links, policy rules on its switches.
#include "runtime/host_faults.h"

#include <signal.h>

#include "apply/cgroup.h"
#include "apply/link_control.h"
#include "apply/processes.h"
#include "apply/rtnl.h"
#include "util/netns.h"

namespace fabemu {

namespace {

// Rules of a partition: above the main table's (32766), below local (0).
constexpr uint32_t kPartitionRulePrio = 1000;

Result<int> host_id(const LabModel& m, const std::string& host) {
  const int id = m.topo.find(host);
  if (id < 0 || m.topo.nodes[id].role != Role::Host)
    return make_error("the lab has no host named '" + host + "'", ENOENT);
  if (!local_node(m, id)) return make_error(host + " is on another machine", EREMOTE);
  return id;
}

// Both directions of link `l` down (dropping everything in the link model) or up again.
Result<void> set_link_down(const LabModel& m, const LabPaths& paths, int l, bool down,
                           LinkShaper* maps) {
  LinkShape change;
  change.down = down;
  auto r = change_links(paths, m, link_name(m.topo, m.topo.links[l]), change, {}, maps);
  if (!r) return r.error();
  return ok();
}

Result<int> host_links_down(const LabModel& m, const LabPaths& paths, int id, bool down,
                            LinkShaper* maps) {
  int n = 0;
  for (int l : m.topo.links_of(id)) {
    FABEMU_TRY(set_link_down(m, paths, l, down, maps));
    ++n;
  }
  return n;
}

}  // namespace

Result<std::string> crash_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                               LinkShaper* maps) {
  auto id = host_id(m, host);
  if (!id) return id.error();
  // Links first: nothing the dying processes still send leaves the host.
  auto links = host_links_down(m, paths, *id, true, maps);
  if (!links) return links.error();
  const std::vector<int> pids =
      processes_in_namespaces({paths.netns_pin(host), paths.uts_path(host)});
  for (int pid : pids) ::kill(pid, SIGKILL);
  // A frozen host crashes too: cgroup v2 ends frozen tasks on SIGKILL, v1 only once thawed.
  if (host_has_cgroup(m, *id))
    (void)freeze_cgroup(detect_cgroups(), host_cgroup(paths, host), false);
  return "killed " + std::to_string(pids.size()) + " processes, " + std::to_string(*links) +
         " links down";
}

Result<std::string> restart_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                                 LinkShaper* maps) {
  auto id = host_id(m, host);
  if (!id) return id.error();
  auto links = host_links_down(m, paths, *id, false, maps);
  if (!links) return links.error();
  return std::to_string(*links) + " links up again";
}

Result<std::string> freeze_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                                bool frozen) {
  auto id = host_id(m, host);
  if (!id) return id.error();
  if (!host_has_cgroup(m, *id))
    return make_error(host +
                          " has no cgroup to freeze: give it a freeze fault in the scenario or "
                          "limits (hosts.overrides)",
                      ENOENT);
  FABEMU_TRY(freeze_cgroup(detect_cgroups(), host_cgroup(paths, host), frozen));
  return std::string(frozen ? "every task stopped (cgroup freezer)" : "thawed");
}

Result<std::string> set_nic(const LabModel& m, const LabPaths& paths, const std::string& host,
                            const std::string& nic, bool up, LinkShaper* maps) {
  auto id = host_id(m, host);
  if (!id) return id.error();
  for (int l : m.topo.links_of(*id))
    if (m.topo.links[l].end(*id).ifname == nic) {
      FABEMU_TRY(set_link_down(m, paths, l, !up, maps));
      return nic + "'s link " + link_name(m.topo, m.topo.links[l]) + (up ? " up" : " down");
    }
  return make_error(host + " has no NIC named '" + nic + "'", ENODEV);
}

Result<std::string> set_partition(const LabModel& m, const LabPaths& paths,
                                  const std::vector<std::vector<std::string>>& groups, bool cut) {
  const Topology& t = m.topo;
  // Every address of every host (a host with NICs on several switches has several).
  std::vector<std::vector<Ipv4>> addrs(groups.size());
  for (size_t g = 0; g < groups.size(); ++g)
    for (const std::string& h : groups[g]) {
      const int id = t.find(h);
      if (id < 0 || t.nodes[id].role != Role::Host)
        return make_error("partition: no host named '" + h + "'", ENOENT);
      for (int l : t.links_of(id)) addrs[g].push_back(m.addresses.address_of(t, l, id));
    }
  int rules = 0;
  std::set<int> switches;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const std::string& h : groups[g]) {
      const int id = t.find(h);
      for (int l : t.links_of(id)) {
        const int sw = t.links[l].peer(id).node;
        if (t.nodes[sw].role != Role::Switch || !local_node(m, sw)) continue;
        switches.insert(sw);
        FABEMU_TRY(run_in_netns(node_netns_path(m, paths, sw), [&]() -> Result<void> {
          auto sock = RtnlSocket::open();
          if (!sock) return sock.error();
          // From any of the host's addresses (routes over a second NIC send with the first's).
          for (int own : t.links_of(id)) {
            const Ipv4 from = m.addresses.address_of(t, own, id);
            for (size_t o = 0; o < groups.size(); ++o) {
              if (o == g) continue;
              for (const Ipv4& to : addrs[o]) {
                FABEMU_TRY(sock->blackhole_rule(Prefix{from, 32}, Prefix{to, 32},
                                                kPartitionRulePrio, cut));
                ++rules;
              }
            }
          }
          return ok();
        }));
      }
    }
  return std::string(cut ? "cut" : "healed") + ": " + std::to_string(rules) + " rules on " +
         std::to_string(switches.size()) + " switches";
}

}  // namespace fabemu
