// build_topology: generates the graph, then resolves link shapes and host limits from the
// scenario, checking every name the scenario mentions against the graph.
#include <algorithm>

#include "model/generators.h"
#include "model/topology.h"
#include "util/units.h"

namespace fabemu {
namespace {

Error at(const SourceLoc& loc, const std::string& msg) {
  return make_error(loc.str() + ": " + msg);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

struct LinkRef {
  std::string a, b;
  bool one_way = false;  // "a>b": only the a->b direction
};

Result<LinkRef> parse_link_ref(const std::string& s, const SourceLoc& loc, const char* field) {
  auto pos = s.find_first_of(":>");
  if (pos == std::string::npos || pos == 0 || pos + 1 == s.size())
    return at(loc, std::string(field) + ": '" + s + "' is not a link; write 'a:b' or 'a>b'");
  return LinkRef{s.substr(0, pos), s.substr(pos + 1), s[pos] == '>'};
}

// Resolves "a:b" against the graph, with an error naming what is missing.
Result<std::vector<int>> resolve_link(const Topology& t, const LinkRef& ref, const SourceLoc& loc,
                                      const char* field) {
  for (const auto* n : {&ref.a, &ref.b})
    if (t.find(*n) < 0) return at(loc, std::string(field) + ": no node named '" + *n + "'");
  auto links = find_links(t, ref.a, ref.b);
  if (links.empty())
    return at(loc, std::string(field) + ": '" + ref.a + "' and '" + ref.b + "' are not linked");
  return links;
}

Result<void> resolve_shapes(const Scenario& s, Topology& t) {
  auto classes = link_classes(s.topology.kind);
  for (const auto& [cls, loc] : s.links.class_locs)
    if (std::find(classes.begin(), classes.end(), cls) == classes.end())
      return at(loc, "links." + cls + ": no such link class in this topology; valid: default, " +
                         join(classes) + ", overrides");

  for (size_t i = 0; i < t.links.size(); ++i) {
    Link& l = t.links[i];
    LinkShape shape = s.links.defaults;
    if (auto it = s.links.classes.find(l.cls); it != s.links.classes.end()) shape.merge(it->second);
    if (s.topology.kind == TopologyKind::RailOptimized && l.cls == "scale-up")
      shape.merge(s.topology.rail.scale_up);
    if (s.topology.kind == TopologyKind::Explicit) shape.merge(s.topology.explicit_.links[i].shape);
    l.a_to_b = l.b_to_a = shape;
  }

  for (const auto& o : s.links.overrides) {
    auto ref = parse_link_ref(o.link, o.loc, "links.overrides.link");
    if (!ref) return ref.error();
    auto ids = resolve_link(t, *ref, o.loc, "links.overrides.link");
    if (!ids) return ids.error();
    int from = t.find(ref->a);
    for (int id : *ids) {
      Link& l = t.links[id];
      bool a_first = l.a.node == from;
      (a_first ? l.a_to_b : l.b_to_a).merge(o.shape);
      if (!ref->one_way) (a_first ? l.b_to_a : l.a_to_b).merge(o.shape);
    }
  }
  return ok();
}

// fabric.gso: TCP keeps up to two super-frames of a flow in its port's queue (TCP small queues);
// a shallower queue drops them whole, and TCP through it collapses. Faults and workload steps
// that set loss or damage (drawn per frame) are refused as the links' own are (loader.cpp).
Result<void> check_gso(const Scenario& s, const Topology& t) {
  if (!s.fabric.gso_bytes) return ok();
  const std::string per_frame =
      ": loss and damage are drawn per frame, and with fabric.gso a super-frame would meet them "
      "whole; set gso: off";
  for (const auto& f : s.faults)
    if (f.set && per_frame_draw(*f.set)) return at(f.loc, "faults.set" + per_frame);
  for (const auto& w : s.workload)
    if (const auto* ls = std::get_if<LinksStep>(&w.step); ls && per_frame_draw(ls->set))
      return at(w.loc, "workload.links.set" + per_frame);
  const uint64_t need = 2 * uint64_t{s.fabric.gso_bytes};
  for (const Link& l : t.links)
    for (bool b_to_a : {false, true}) {
      const LinkShape& shape = b_to_a ? l.b_to_a : l.a_to_b;
      const auto q = queue_capacity_bytes(shape);
      if (!q || *q >= need) continue;
      const std::string a = t.nodes[l.a.node].name, b = t.nodes[l.b.node].name;
      return at(s.fabric.gso_loc,
                "fabric.gso: a port's queue must hold two super-frames (" + format_size(need) +
                    "), and " + (b_to_a ? b + ">" + a : a + ">" + b) + " (" + shape.str() +
                    ") holds " + format_size(*q) +
                    " before it drops; give its links a deeper queue (queue: " + format_size(need) +
                    ") or make gso smaller");
    }
  return ok();
}

// fabric.load_balance's overrides, and a load_balance step's, name tiers or switches of this
// topology; a step needs router switches, as the fabric's modes do.
Result<void> check_load_balance(const Scenario& s, const Topology& t) {
  auto check = [&](const std::vector<LoadBalanceOverride>& overrides,
                   const std::string& key) -> Result<void> {
    for (const auto& o : overrides) {
      if (switch_tier_named(o.target)) continue;
      const int n = t.find(o.target);
      if (n < 0 || t.nodes[n].role != Role::Switch)
        return at(o.loc, key + "." + o.target +
                             ": not a switch of this topology, nor a tier (leaf, spine, core, "
                             "edge, agg), nor default");
    }
    return ok();
  };
  FABEMU_TRY(check(s.fabric.load_balance_overrides, "fabric.load_balance"));
  for (const auto& o : s.switch_buffers.overrides) {
    if (switch_tier_named(o.target)) continue;
    const int n = t.find(o.target);
    if (n < 0 || t.nodes[n].role != Role::Switch)
      return at(o.loc, "switches." + o.target +
                           ": not a switch of this topology, nor a tier (leaf, spine, core, edge, "
                           "agg), nor buffer or alpha");
  }
  for (const auto& w : s.workload)
    if (const auto* lb = std::get_if<LoadBalanceStep>(&w.step)) {
      if (s.fabric.switch_kind != SwitchKind::Router)
        return at(w.loc,
                  "workload.load_balance: fabemu's eBPF balancer runs on router switches; use "
                  "fabric.switch: router");
      FABEMU_TRY(check(lb->overrides, "workload.load_balance"));
    }
  return ok();
}

Result<void> resolve_hosts(const Scenario& s, Topology& t) {
  for (auto& n : t.nodes)
    if (n.role == Role::Host) n.limits = s.hosts.defaults;
  for (const auto& o : s.hosts.overrides) {
    int id = t.find(o.host);
    if (id < 0) return at(o.loc, "hosts.overrides.host: no host named '" + o.host + "'");
    if (t.nodes[id].role != Role::Host)
      return at(o.loc, "hosts.overrides.host: '" + o.host + "' is a switch; limits apply to hosts");
    t.nodes[id].limits.merge(o.limits);
  }
  return ok();
}

Result<void> check_workload_and_faults(const Scenario& s, const Topology& t) {
  for (const auto& f : s.faults) {
    for (const auto& group : f.partition)
      for (const std::string& h : group) {
        const int id = t.find(h);
        if (id < 0 || t.nodes[id].role != Role::Host)
          return at(f.loc, "faults.partition: no host named '" + h + "'");
      }
    if (!f.partition.empty()) continue;
    if (!f.host.empty()) {
      const int id = t.find(f.host);
      if (id < 0 || t.nodes[id].role != Role::Host)
        return at(f.loc, "faults.host: no host named '" + f.host + "'");
      const std::string& nic = f.nic_down.empty() ? f.nic_up : f.nic_down;
      if (!nic.empty()) {
        std::string nics;
        bool found = false;
        for (int l : t.links_of(id)) {
          found |= t.links[l].end(id).ifname == nic;
          nics += (nics.empty() ? "" : ", ") + t.links[l].end(id).ifname;
        }
        if (!found)
          return at(f.loc,
                    "faults: host " + f.host + " has no NIC '" + nic + "' (it has " + nics + ")");
      }
      continue;
    }
    auto ref = parse_link_ref(f.link, f.loc, "faults.link");
    if (!ref) return ref.error();
    if (ref->one_way && !f.set)
      return at(f.loc, "faults.link: '" + f.link +
                           "' is one direction; down, up and flap take a whole link (a:b)");
    auto ids = resolve_link(t, *ref, f.loc, "faults.link");
    if (!ids) return ids.error();
  }
  for (const auto& w : s.workload) {
    if (const auto* ls = std::get_if<LinksStep>(&w.step)) {
      if (ls->select == "all") continue;
      bool cls = false;
      for (const Link& l : t.links) cls |= l.cls == ls->select;
      if (cls) continue;
      auto ref = parse_link_ref(ls->select, w.loc, "workload.links.select");
      if (!ref) return ref.error();
      auto ids = resolve_link(t, *ref, w.loc, "workload.links.select");
      if (!ids) return ids.error();
      continue;
    }
    if (const auto* in = std::get_if<IncastStep>(&w.step)) {
      std::vector<std::string> names = in->senders;
      if (!in->is_traffic()) names.push_back(in->receiver);
      if (in->victim) names.insert(names.end(), {in->victim->from, in->victim->to});
      for (const auto& [from, to] : in->flows) names.insert(names.end(), {from, to});
      for (const std::string& name : names) {
        const int id = t.find(name);
        if (id < 0 || t.nodes[id].role != Role::Host)
          return at(w.loc, std::string("workload.") + (in->is_traffic() ? "traffic" : "incast") +
                               ": no host named '" + name + "'");
      }
      continue;
    }
    if (std::holds_alternative<LoadBalanceStep>(w.step)) continue;  // check_load_balance
    const auto* ex = std::get_if<ExecStep>(&w.step);
    if (!ex || ex->hosts == "all") continue;
    std::string rest = ex->hosts;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      std::string name = rest.substr(0, comma);
      rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      int id = t.find(name);
      if (id < 0 || t.nodes[id].role != Role::Host)
        return at(w.loc, "workload.exec.hosts: no host named '" + name + "'");
    }
  }
  return ok();
}

}  // namespace

Result<Topology> build_topology(const Scenario& s) {
  Topology t;
  switch (s.topology.kind) {
    case TopologyKind::LeafSpine:
      t = generate_leaf_spine(s.topology.leaf_spine);
      break;
    case TopologyKind::FatTree:
      t = generate_fat_tree(s.topology.fat_tree);
      break;
    case TopologyKind::RailOptimized:
      t = generate_rail_optimized(s.topology.rail);
      break;
    case TopologyKind::Explicit:
      t = generate_explicit(s.topology.explicit_);
      break;
  }
  if (t.host_count() == 0) return at(s.topology.loc, "topology: has no hosts");
  if (s.fabric.switch_kind == SwitchKind::Ovs) {
    for (size_t i = 0; i < t.nodes.size(); ++i)
      if (is_reserved_with_ovs(t.nodes[i].name)) {
        const SourceLoc& loc = s.topology.kind == TopologyKind::Explicit
                                   ? s.topology.explicit_.nodes[i].loc
                                   : s.topology.loc;
        return at(loc, "topology.nodes.name: '" + t.nodes[i].name +
                           "' is taken with fabric.switch: ovs (the lab's OVS namespace and its "
                           "devices: ovs, ovs-system, ovs-netdev); pick another name");
      }
    t.name_ovs_ports();
  }
  FABEMU_TRY(resolve_shapes(s, t));
  FABEMU_TRY(check_load_balance(s, t));
  FABEMU_TRY(check_gso(s, t));
  FABEMU_TRY(resolve_hosts(s, t));
  FABEMU_TRY(check_workload_and_faults(s, t));
  for (size_t m = 0; m < s.placement.machines.size(); ++m)
    for (size_t i = 0; i < s.placement.machines[m].size(); ++i)
      if (t.find(s.placement.machines[m][i]) < 0)
        return at(s.placement.locs[m][i], "placement[" + std::to_string(m) + "]: no node named '" +
                                              s.placement.machines[m][i] + "' in the topology");
  return t;
}

}  // namespace fabemu
