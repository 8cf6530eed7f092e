// Reading a lab's state: the journal, each namespace's interfaces, the link model, rxe devices.
#include "runtime/lab_status.h"

#include "util/units.h"

#include "apply/lab.h"

namespace fabemu {

const InterfaceState* LabStatus::interface(int node, const std::string& ifname) const {
  auto it = interfaces[node].find(ifname);
  return it == interfaces[node].end() ? nullptr : &it->second;
}

const DirectionState* LabStatus::direction(size_t link, bool back) const {
  return link_model ? &link_model->dirs[2 * link + (back ? 1 : 0)] : nullptr;
}

bool LabStatus::link_up(size_t l) const {
  const Link& link = model.topo.links[l];
  const auto* a = interface(link.a.node, link.a.ifname);
  const auto* b = interface(link.b.node, link.b.ifname);
  bool up = a && b && a->running && b->running;
  // `link down`: the veth is up, the link model drops everything.
  for (bool back : {false, true})
    if (const DirectionState* d = direction(l, back); d && d->shape.down.value_or(false))
      up = false;
  return up;
}

int LabStatus::shaped_ports() const {
  int n = 0;
  if (link_model)
    for (const auto& d : link_model->dirs) n += d.shaped;
  return n;
}

Result<LabStatus> read_lab_status(const LabPaths& paths) {
  LabStatus s;
  s.paths = paths;
  auto model = lab_model(paths, &s.journal);
  if (!model) return model.error();
  s.model = std::move(*model);
  const Topology& t = s.model.topo;
  s.interfaces.resize(t.nodes.size());
  std::map<std::string, std::vector<InterfaceState>> seen;  // switches may share a namespace
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (!local_node(s.model, static_cast<int>(n))) continue;  // another machine's
    const std::string netns = node_netns_path(s.model, paths, static_cast<int>(n));
    auto it = seen.find(netns);
    if (it == seen.end()) {
      auto r = read_interfaces(netns);
      if (!r) {
        s.missing.push_back(t.nodes[n].name);
        continue;
      }
      it = seen.emplace(netns, std::move(*r)).first;
    }
    for (const InterfaceState& i : it->second) s.interfaces[n][i.name] = i;
  }
  s.state = !s.journal.complete ? "incomplete" : s.missing.empty() ? "up" : "degraded";
  if (auto r = read_link_model(paths, s.model))
    s.link_model = std::move(*r);
  else
    s.link_model_error = r.error().what();
  s.read_ns = realtime_ns();
  if (s.model.rdma.rxe)
    for (int h : t.hosts()) {
      if (!local_node(s.model, h)) continue;
      const std::string& host = t.nodes[h].name;
      s.rdma[host] = read_rdma_device(paths.rxe_name(host));
    }
  return s;
}

std::vector<LabListing> list_lab_states(const LabPaths& base) {
  std::vector<LabListing> out;
  for (const auto& lab : list_labs(base.run_root)) {
    LabPaths p = base;
    p.lab = lab;
    auto j = read_journal(p.journal());
    out.push_back({lab,
                   !j            ? "broken (no journal)"
                   : j->complete ? "up"
                                 : "incomplete",
                   j ? j->scenario_file : ""});
  }
  return out;
}

}  // namespace fabemu
