// Building a lab's model from its scenario, and the facts every layer above asks of it.
#include "model/lab_model.h"

#include <algorithm>

namespace fabemu {

Result<LabModel> build_model(const Scenario& scenario, int pool) {
  LabModel m;
  m.scenario = scenario;
  auto topo = build_topology(scenario);
  if (!topo) return topo.error();
  m.topo = std::move(*topo);
  auto addrs = plan_addresses(m.topo, lab_pool(pool));
  if (!addrs) return addrs.error();
  m.addresses = std::move(*addrs);
  auto routes = plan_routes(m.topo, m.addresses);
  if (!routes) return routes.error();
  m.routes = std::move(*routes);
  if (scenario.fabric.routing == Routing::Bgp) {
    auto bgp = plan_bgp(m.topo, m.addresses);
    if (!bgp) return bgp.error();
    m.bgp = std::move(*bgp);
  }
  if (!scenario.time_scale.automatic && scenario.time_scale.factor != 1) {
    m.time_scale.factor = scenario.time_scale.factor;
    m.time_scale_why = "time_scale in the scenario";
  }
  return m;
}

bool Placement::cut(int link) const {
  return std::binary_search(cut_links.begin(), cut_links.end(), link);
}

std::vector<int> Placement::nodes_of(int m) const {
  std::vector<int> out;
  for (size_t n = 0; n < machine_of.size(); ++n)
    if (machine_of[n] == m) out.push_back(static_cast<int>(n));
  return out;
}

const BgpRouter* bgp_router(const LabModel& m, int node) {
  for (const BgpRouter& r : m.bgp)
    if (r.node == node) return &r;
  return nullptr;
}

bool local_node(const LabModel& m, int node) {
  return !m.part || m.part->local(node);
}

bool ovs_switches(const LabModel& m) {
  return m.scenario.fabric.switch_kind == SwitchKind::Ovs;
}

bool host_has_cgroup(const LabModel& m, int host) {
  const Node& n = m.topo.nodes[host];
  if (n.role != Role::Host) return false;
  if (!n.limits.empty()) return true;
  for (const FaultEvent& f : m.scenario.faults)
    if (f.host == n.name) return true;
  return false;
}

std::string host_nic(const Topology& t, int host) {
  const auto links = t.links_of(host);
  return links.empty() ? "" : t.links[links.front()].end(host).ifname;
}

std::string link_name(const Topology& t, const Link& l) {
  return t.nodes[l.a.node].name + ":" + t.nodes[l.b.node].name;
}

std::string direction_name(const Topology& t, int link, bool b_to_a) {
  const Link& l = t.links[link];
  const std::string& a = t.nodes[l.a.node].name;
  const std::string& b = t.nodes[l.b.node].name;
  return b_to_a ? b + ">" + a : a + ">" + b;
}

}  // namespace fabemu
