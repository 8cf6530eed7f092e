// `status`, `exec` and `doctor`: reading a running lab and acting inside its nodes.
#include <unistd.h>

#include <cstdio>
#include <map>

#include "apply/inspect.h"
#include "apply/journal.h"
#include "apply/lab.h"
#include "cli/commands.h"
#include "doctor/probe.h"
#include "runtime/spawn.h"
#include "util/json.h"
#include "util/units.h"

namespace fabemu::cli {

void print_error(const std::string& message) {
  std::fprintf(stderr, "fabemu: %s\n", message.c_str());
}

bool require_root(const char* command) {
  if (::geteuid() == 0) return true;
  print_error(std::string(command) +
              " needs root (namespaces, veths and routes are kernel objects): run it with sudo");
  return false;
}

namespace {

std::string shape_text(const LinkShape& s) {
  std::string out;
  auto add = [&](const std::string& t) { out += (out.empty() ? "" : " ") + t; };
  if (s.rate_bps) add(format_rate(*s.rate_bps));
  if (s.delay_ns) add("delay " + format_time_ns(*s.delay_ns));
  if (s.jitter_ns) add("jitter " + format_time_ns(*s.jitter_ns));
  if (s.loss) add("loss " + std::to_string(*s.loss * 100).substr(0, 5) + "%");
  if (s.queue_ns) add("queue " + format_time_ns(*s.queue_ns));
  if (s.queue_bytes) add("queue " + format_size(*s.queue_bytes));
  if (s.ecn_threshold_ns) add("ecn " + format_time_ns(*s.ecn_threshold_ns));
  if (s.down && *s.down) add("down");
  return out.empty() ? "-" : out;
}

void shape_json(JsonWriter& j, const LinkShape& s) {
  j.begin_object();
  if (s.rate_bps) j.field("rate_bps", *s.rate_bps);
  if (s.delay_ns) j.field("delay_ns", *s.delay_ns);
  if (s.jitter_ns) j.field("jitter_ns", *s.jitter_ns);
  if (s.loss) j.field("loss", *s.loss);
  if (s.queue_ns) j.field("queue_ns", *s.queue_ns);
  if (s.queue_bytes) j.field("queue_bytes", *s.queue_bytes);
  if (s.ecn_threshold_ns) j.field("ecn_threshold_ns", *s.ecn_threshold_ns);
  if (s.down) j.field("down", *s.down);
  j.end_object();
}

int list_labs_status(const LabPaths& base, bool json) {
  JsonWriter j;
  j.begin_array();
  for (const auto& lab : list_labs(base.run_root)) {
    LabPaths p = base;
    p.lab = lab;
    auto jr = read_journal(p.journal());
    std::string state = !jr ? "broken (no journal)" : jr->complete ? "up" : "incomplete";
    std::string scen = jr ? jr->scenario_file : "";
    if (json)
      j.begin_object().field("lab", lab).field("state", state).field("scenario", scen).end_object();
    else
      std::printf("%-12s %-20s %s\n", lab.c_str(), state.c_str(), scen.c_str());
  }
  j.end_array();
  if (json) std::printf("%s\n", j.str().c_str());
  return kExitOk;
}

}  // namespace

int cmd_status(const std::string& lab, bool json, const LabPaths& base) {
  if (lab.empty()) return list_labs_status(base, json);
  if (!require_root("status")) return kExitNeedsRoot;
  LabPaths paths = base;
  paths.lab = lab;
  JournalFile journal;
  auto model = lab_model(paths, &journal);
  if (!model) {
    print_error(model.error().what());
    return errno_of(model.error()) == ENOENT ? kExitNoLab : kExitFailed;
  }
  const Topology& t = model->topo;
  // Kernel view of every node's interfaces.
  std::vector<std::map<std::string, InterfaceState>> ifs(t.nodes.size());
  std::vector<std::string> missing;
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    auto r = read_interfaces(paths.netns_path(t.nodes[n].name));
    if (!r) {
      missing.push_back(t.nodes[n].name);
      continue;
    }
    for (auto& s : *r) ifs[n][s.name] = s;
  }
  auto end_state = [&](int node, const std::string& ifname) -> const InterfaceState* {
    auto it = ifs[node].find(ifname);
    return it == ifs[node].end() ? nullptr : &it->second;
  };
  const std::string state = !journal.complete ? "incomplete" : missing.empty() ? "up" : "degraded";

  if (json) {
    JsonWriter j;
    j.begin_object()
        .field("lab", lab)
        .field("state", state)
        .field("scenario", journal.scenario_file);
    j.field("pool", model->addresses.pool.str());
    j.key("nodes").begin_array();
    for (size_t n = 0; n < t.nodes.size(); ++n) {
      const Node& node = t.nodes[n];
      j.begin_object()
          .field("name", node.name)
          .field("role", node.role == Role::Host ? "host" : "switch");
      j.field("namespace", paths.ns_name(node.name));
      if (node.role == Role::Host) {
        j.field("rank", node.rank).field("address", model->addresses.host_address(t, n).str());
      } else {
        j.field("loopback", model->addresses.loopback[n]->str());
      }
      j.field("present", ifs[n].size() > 0);
      j.end_object();
    }
    j.end_array().key("links").begin_array();
    for (size_t l = 0; l < t.links.size(); ++l) {
      const Link& link = t.links[l];
      j.begin_object().field("name", t.nodes[link.a.node].name + ":" + t.nodes[link.b.node].name);
      j.field("class", link.cls);
      for (const auto* e : {&link.a, &link.b}) {
        j.key(e == &link.a ? "a" : "b").begin_object();
        j.field("node", t.nodes[e->node].name).field("ifname", e->ifname);
        j.field("address", model->addresses.address_of(t, l, e->node).str());
        if (const auto* s = end_state(e->node, e->ifname)) {
          j.field("up", s->up && s->running).field("tx_packets", s->tx_packets);
          j.field("tx_bytes", s->tx_bytes).field("rx_packets", s->rx_packets);
          j.field("rx_bytes", s->rx_bytes).field("tx_dropped", s->tx_dropped);
          j.field("rx_dropped", s->rx_dropped);
        } else {
          j.field("up", false);
        }
        j.end_object();
      }
      j.key("shape_a_to_b");
      shape_json(j, link.a_to_b);
      j.key("shape_b_to_a");
      shape_json(j, link.b_to_a);
      j.field("shaping_enforced", false);
      j.end_object();
    }
    j.end_array().end_object();
    std::printf("%s\n", j.str().c_str());
    return missing.empty() ? kExitOk : kExitFailed;
  }

  std::printf("lab %s: %s; %d hosts, %zu switches, %zu links; addresses %s; scenario %s\n",
              lab.c_str(), state.c_str(), t.host_count(), t.switches().size(), t.links.size(),
              model->addresses.pool.str().c_str(), journal.scenario_file.c_str());
  if (!missing.empty())
    std::printf("  missing namespaces: %zu (first: %s)\n", missing.size(), missing.front().c_str());
  std::printf("\n%-12s %-7s %-16s %s\n", "NODE", "ROLE", "ADDRESS", "NAMESPACE");
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const Node& node = t.nodes[n];
    bool host = node.role == Role::Host;
    Ipv4 ip = host ? model->addresses.host_address(t, n) : *model->addresses.loopback[n];
    std::printf("%-12s %-7s %-16s %s\n", node.name.c_str(), host ? "host" : "switch",
                ip.str().c_str(), paths.ns_name(node.name).c_str());
  }
  std::printf("\n%-22s %-5s %-17s %-17s %12s %12s %8s  %s\n", "LINK", "STATE", "A ADDRESS",
              "B ADDRESS", "A>B PKTS", "B>A PKTS", "DROPS", "SHAPE (configured, not enforced)");
  for (size_t l = 0; l < t.links.size(); ++l) {
    const Link& link = t.links[l];
    const auto* sa = end_state(link.a.node, link.a.ifname);
    const auto* sb = end_state(link.b.node, link.b.ifname);
    bool up = sa && sb && sa->running && sb->running;
    uint64_t drops =
        (sa ? sa->tx_dropped + sa->rx_dropped : 0) + (sb ? sb->tx_dropped + sb->rx_dropped : 0);
    std::string name = t.nodes[link.a.node].name + ":" + t.nodes[link.b.node].name;
    std::string shape = shape_text(link.a_to_b);
    if (!(link.a_to_b == link.b_to_a)) shape += " / " + shape_text(link.b_to_a);
    std::printf("%-22s %-5s %-17s %-17s %12llu %12llu %8llu  %s\n", name.c_str(),
                up ? "up" : "DOWN",
                (link.a.ifname + " " + model->addresses.links[l].a.str()).c_str(),
                (link.b.ifname + " " + model->addresses.links[l].b.str()).c_str(),
                static_cast<unsigned long long>(sa ? sa->tx_packets : 0),
                static_cast<unsigned long long>(sb ? sb->tx_packets : 0),
                static_cast<unsigned long long>(drops), shape.c_str());
  }
  return missing.empty() ? kExitOk : kExitFailed;
}

int cmd_exec(const std::string& target, bool all, bool no_tag, const std::vector<std::string>& argv,
             const LabPaths& base) {
  if (!require_root("exec")) return kExitNeedsRoot;
  auto colon = target.find(':');
  if (all == (colon != std::string::npos)) {
    print_error("exec: write LAB:NODE for one node, or LAB --all for every host (got '" + target +
                "')");
    return kExitBadInput;
  }
  LabPaths paths = base;
  paths.lab = target.substr(0, colon);
  auto model = lab_model(paths);
  if (!model) {
    print_error(model.error().what());
    return errno_of(model.error()) == ENOENT ? kExitNoLab : kExitFailed;
  }
  if (!all) {
    std::string node = target.substr(colon + 1);
    int id = model->topo.find(node);
    if (id < 0) {
      print_error("exec: lab " + paths.lab + " has no node named '" + node + "'");
      return kExitBadInput;
    }
    Error e = exec_in_node(node_context(*model, paths, id), argv);
    print_error(e.what());
    return errno_of(e) == ENOENT ? 127 : 126;
  }
  std::vector<NodeContext> nodes;
  for (int h : model->topo.hosts()) nodes.push_back(node_context(*model, paths, h));
  auto exits = run_in_nodes(nodes, argv, !no_tag);
  if (!exits) {
    print_error(exits.error().what());
    return kExitFailed;
  }
  int code = 0, failed = 0;
  for (const auto& e : *exits)
    if (e.status != 0) {
      if (failed++ < 8) print_error(e.node + ": exit status " + std::to_string(e.status));
      if (code == 0) code = e.status;
    }
  if (failed > 8) print_error("... and " + std::to_string(failed - 8) + " more hosts failed");
  return code;
}

int cmd_doctor(bool json) {
  auto kernel = kernel_info();
  auto probes = probe_features();
  if (json)
    std::printf("%s\n", doctor_json(kernel, probes).c_str());
  else
    std::printf("%s", format_doctor_table(kernel, probes).c_str());
  return kExitOk;
}

}  // namespace fabemu::cli
