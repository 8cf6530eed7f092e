// Host faults: signals to the host's processes, its cgroup's freezer, the link model on its
// links, policy rules on its switches; all through the lab's datapath.
#include "runtime/host_faults.h"

#include <set>

#include "apply/link_control.h"

namespace fabemu {

namespace {

Result<int> host_id(const LabModel& m, const std::string& host) {
  const int id = m.topo.find(host);
  if (id < 0 || m.topo.nodes[id].role != Role::Host)
    return make_error("the lab has no host named '" + host + "'", ENOENT);
  if (!local_node(m, id)) return make_error(host + " is on another machine", EREMOTE);
  return id;
}

// Both directions of link `l` down (dropping everything in the link model) or up again.
Result<void> set_link_down(const LabModel& m, const LabPaths& paths, int l, bool down,
                           LabDatapath& dp) {
  LinkShape change;
  change.down = down;
  auto r = change_links(paths, m, link_name(m.topo, m.topo.links[l]), change, {}, dp);
  if (!r) return r.error();
  return ok();
}

Result<int> host_links_down(const LabModel& m, const LabPaths& paths, int id, bool down,
                            LabDatapath& dp) {
  int n = 0;
  for (int l : m.topo.links_of(id)) {
    FABEMU_TRY(set_link_down(m, paths, l, down, dp));
    ++n;
  }
  return n;
}

}  // namespace

Result<std::string> crash_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                               LabDatapath& dp) {
  auto id = host_id(m, host);
  if (!id) return id.error();
  // Links first: nothing the dying processes still send leaves the host.
  auto links = host_links_down(m, paths, *id, true, dp);
  if (!links) return links.error();
  auto killed = dp.kill_host_processes(host);
  if (!killed) return killed.error();
  // A frozen host crashes too: cgroup v2 ends frozen tasks on SIGKILL, v1 only once thawed.
  if (host_has_cgroup(m, *id)) (void)dp.freeze_host(host, false);
  return "killed " + std::to_string(*killed) + " processes, " + std::to_string(*links) +
         " links down";
}

Result<std::string> restart_host(const LabModel& m, const LabPaths& paths, const std::string& host,
                                 LabDatapath& dp) {
  auto id = host_id(m, host);
  if (!id) return id.error();
  auto links = host_links_down(m, paths, *id, false, dp);
  if (!links) return links.error();
  return std::to_string(*links) + " links up again";
}

Result<std::string> freeze_host(const LabModel& m, const std::string& host, bool frozen,
                                LabDatapath& dp) {
  auto id = host_id(m, host);
  if (!id) return id.error();
  if (!host_has_cgroup(m, *id))
    return make_error(host +
                          " has no cgroup to freeze: give it a freeze fault in the scenario or "
                          "limits (hosts.overrides)",
                      ENOENT);
  FABEMU_TRY(dp.freeze_host(host, frozen));
  return std::string(frozen ? "every task stopped (cgroup freezer)" : "thawed");
}

Result<std::string> set_nic(const LabModel& m, const LabPaths& paths, const std::string& host,
                            const std::string& nic, bool up, LabDatapath& dp) {
  auto id = host_id(m, host);
  if (!id) return id.error();
  for (int l : m.topo.links_of(*id))
    if (m.topo.links[l].end(*id).ifname == nic) {
      FABEMU_TRY(set_link_down(m, paths, l, !up, dp));
      return nic + "'s link " + link_name(m.topo, m.topo.links[l]) + (up ? " up" : " down");
    }
  return make_error(host + " has no NIC named '" + nic + "'", ENODEV);
}

Result<std::string> set_partition(const LabModel& m,
                                  const std::vector<std::vector<std::string>>& groups, bool cut,
                                  LabDatapath& dp) {
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
  size_t rules = 0;
  std::set<int> switches;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const std::string& h : groups[g]) {
      const int id = t.find(h);
      for (int l : t.links_of(id)) {
        const int sw = t.links[l].peer(id).node;
        if (t.nodes[sw].role != Role::Switch || !local_node(m, sw)) continue;
        switches.insert(sw);
        // From any of the host's addresses (routes over a second NIC send with the first's).
        std::vector<std::pair<Prefix, Prefix>> pairs;
        for (int own : t.links_of(id))
          for (size_t o = 0; o < groups.size(); ++o)
            if (o != g)
              for (const Ipv4& to : addrs[o])
                pairs.push_back({Prefix{m.addresses.address_of(t, own, id), 32}, Prefix{to, 32}});
        FABEMU_TRY(dp.partition_rules(sw, pairs, cut));
        rules += pairs.size();
      }
    }
  return std::string(cut ? "cut" : "healed") + ": " + std::to_string(rules) + " rules on " +
         std::to_string(switches.size()) + " switches";
}

}  // namespace fabemu
