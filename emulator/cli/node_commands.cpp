// `status`, `exec` and `doctor`: reading a running lab and acting inside its nodes.
#include <unistd.h>

#include <cstdio>
#include <map>

#include "apply/inspect.h"
#include "apply/journal.h"
#include "apply/lab.h"
#include "apply/link_control.h"
#include "cli/commands.h"
#include "cli/rdma_status.h"
#include "doctor/probe.h"
#include "runtime/spawn.h"
#include "util/json.h"
#include "util/units.h"

namespace fabemu::cli {

void print_error(const std::string& message) {
  std::fprintf(stderr, "fabemu: %s\n", message.c_str());
}

int lab_error(const Error& e) {
  print_error(e.what());
  return errno_of(e) == ENOENT ? kExitNoLab : kExitFailed;
}

bool require_root(const char* command) {
  if (::geteuid() == 0) return true;
  print_error(std::string(command) +
              " needs root (namespaces, veths and routes are kernel objects): run it with sudo");
  return false;
}

namespace {

std::string shape_text(const LinkShape& s) {
  std::string out = s.str();
  return out.empty() ? "-" : out;
}

void shape_json(JsonWriter& j, const LinkShape& s) {
  j.begin_object();
  if (s.rate_bps) j.field("rate_bps", *s.rate_bps);
  if (s.delay_ns) j.field("delay_ns", *s.delay_ns);
  if (s.jitter_ns) j.field("jitter_ns", *s.jitter_ns);
  if (s.loss) j.field("loss", *s.loss);
  if (s.loss_burst) {
    j.key("loss_burst").begin_object().field("p", s.loss_burst->p).field("r", s.loss_burst->r);
    j.field("loss_bad", s.loss_burst->loss_bad).field("loss_good", s.loss_burst->loss_good);
    j.end_object();
  }
  if (s.reorder) j.field("reorder", *s.reorder);
  if (s.queue_ns) j.field("queue_ns", *s.queue_ns);
  if (s.queue_bytes) j.field("queue_bytes", *s.queue_bytes);
  if (s.ecn_threshold_ns) j.field("ecn_threshold_ns", *s.ecn_threshold_ns);
  if (s.down) j.field("down", *s.down);
  j.end_object();
}

void direction_json(JsonWriter& j, const DirectionState& d) {
  j.begin_object().field("direction", d.name).field("shaped", d.shaped);
  j.key("shape");
  shape_json(j, d.shape);
  const LinkCounters& c = d.counters;
  j.key("counters").begin_object();
  j.field("packets", c.packets).field("bytes", c.bytes);
  j.field("drop_loss", c.drop_loss).field("drop_queue", c.drop_queue);
  j.field("drop_down", c.drop_down).field("ce_marks", c.ce_marks);
  j.field("queue_delay_p50_ns", queue_delay_quantile(c, 0.5));
  j.field("queue_delay_p99_ns", queue_delay_quantile(c, 0.99));
  j.key("queue_delay_hist").begin_array();
  for (uint64_t n : c.queue_delay_hist) j.value(n);
  j.end_array().end_object().end_object();
}

std::string mode_text(const std::optional<LinkModelState>& lm, const std::string& why_not) {
  if (!lm) return "unavailable: " + why_not;
  int shaped = 0;
  for (const auto& d : lm->dirs) shaped += d.shaped;
  if (shaped == 0) return "loaded, no port shaped (`fabemu link set` shapes one)";
  if (lm->mode.fq)
    return "eBPF + fq (EDT) on " + std::to_string(shaped) +
           " ports: rate, delay, jitter, loss, queue, ECN enforced";
  if (lm->mode.htb)
    return "eBPF + htb on " + std::to_string(shaped) + " ports (" + lm->mode.no_fq_reason +
           "): rate (htb queue), loss, queue, ECN enforced; delay and jitter NOT added";
  return "eBPF POLICER on " + std::to_string(shaped) + " ports (" + lm->mode.no_fq_reason +
         "): rate, loss, queue, ECN enforced; delay and jitter NOT added";
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
  if (!model) return lab_error(model.error());
  const Topology& t = model->topo;
  // Kernel view of every node's interfaces.
  std::vector<std::map<std::string, InterfaceState>> ifs(t.nodes.size());
  std::vector<std::string> missing;
  std::map<std::string, std::vector<InterfaceState>> seen;  // switches may share a namespace
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const std::string netns = node_netns_path(*model, paths, static_cast<int>(n));
    auto it = seen.find(netns);
    if (it == seen.end()) {
      auto r = read_interfaces(netns);
      if (!r) {
        missing.push_back(t.nodes[n].name);
        continue;
      }
      it = seen.emplace(netns, std::move(*r)).first;
    }
    for (const InterfaceState& s : it->second) ifs[n][s.name] = s;
  }
  auto end_state = [&](int node, const std::string& ifname) -> const InterfaceState* {
    auto it = ifs[node].find(ifname);
    return it == ifs[node].end() ? nullptr : &it->second;
  };
  const std::string state = !journal.complete ? "incomplete" : missing.empty() ? "up" : "degraded";
  std::optional<LinkModelState> lm;
  std::string lm_error;
  if (auto r = read_link_model(paths, *model)) {
    lm = std::move(*r);
  } else {
    lm_error = r.error().what();
  }
  auto dir_state = [&](size_t link, bool back) -> const DirectionState* {
    return lm ? &lm->dirs[2 * link + (back ? 1 : 0)] : nullptr;
  };

  if (json) {
    JsonWriter j;
    j.begin_object()
        .field("lab", lab)
        .field("state", state)
        .field("scenario", journal.scenario_file);
    j.field("pool", model->addresses.pool.str());
    if (ovs_switches(*model)) {
      j.key("switches").begin_object().field("kind", "ovs");
      j.field("datapath", model->ovs.kernel ? "kernel" : "userspace");
      if (!model->ovs.kernel) j.field("reason", model->ovs.why_userspace);
      j.field("run_dir", paths.ovs_dir()).end_object();
    } else {
      j.key("switches").begin_object().field("kind", "router").end_object();
    }
    j.key("link_model").begin_object();
    if (lm) {
      j.field("mode", shaping_mode_name(lm->mode));
      if (!lm->mode.fq) j.field("reason", lm->mode.no_fq_reason);
      // queue_delay_hist[i] counts waits below this many ns (the last bucket: everything else).
      j.key("queue_delay_hist_upper_ns").begin_array();
      for (int i = 0; i < FABEMU_HIST_BUCKETS; ++i) j.value(uint64_t{1} << (FABEMU_HIST_SHIFT + i));
      j.end_array();
    } else {
      j.field("mode", "unavailable").field("reason", lm_error);
    }
    j.end_object();
    j.key("nodes").begin_array();
    for (size_t n = 0; n < t.nodes.size(); ++n) {
      const Node& node = t.nodes[n];
      j.begin_object()
          .field("name", node.name)
          .field("role", node.role == Role::Host ? "host" : "switch");
      j.field("namespace", node_ns(*model, paths, static_cast<int>(n)));
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
        j.field("namespace", node_ns(*model, paths, e->node));
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
      j.key("scenario_a_to_b");
      shape_json(j, link.a_to_b);
      j.key("scenario_b_to_a");
      shape_json(j, link.b_to_a);
      for (bool back : {false, true})
        if (const auto* d = dir_state(l, back)) {
          j.key(back ? "b_to_a" : "a_to_b");
          direction_json(j, *d);
        }
      j.end_object();
    }
    j.end_array();
    rdma_status_json(j, *model, paths);
    j.end_object();
    std::printf("%s\n", j.str().c_str());
    return missing.empty() ? kExitOk : kExitFailed;
  }

  std::printf("lab %s: %s; %d hosts, %zu switches, %zu links; addresses %s; scenario %s\n",
              lab.c_str(), state.c_str(), t.host_count(), t.switches().size(), t.links.size(),
              model->addresses.pool.str().c_str(), journal.scenario_file.c_str());
  if (!missing.empty())
    std::printf("  missing namespaces: %zu (first: %s)\n", missing.size(), missing.front().c_str());
  std::printf("link model: %s\n", mode_text(lm, lm_error).c_str());
  if (ovs_switches(*model))
    std::printf("switches: Open vSwitch bridges in %s, %s; flows in %s/SWITCH.bundle\n",
                paths.ns_name(kOvsNamespaceNode).c_str(),
                model->ovs.kernel
                    ? "kernel datapath"
                    : ("userspace datapath (" + model->ovs.why_userspace + ")").c_str(),
                paths.ovs_dir().c_str());
  std::printf("\n%-12s %-7s %-16s %s\n", "NODE", "ROLE", "ADDRESS", "NAMESPACE");
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const Node& node = t.nodes[n];
    bool host = node.role == Role::Host;
    Ipv4 ip = host ? model->addresses.host_address(t, n) : *model->addresses.loopback[n];
    std::printf("%-12s %-7s %-16s %s\n", node.name.c_str(), host ? "host" : "switch",
                ip.str().c_str(), node_ns(*model, paths, static_cast<int>(n)).c_str());
  }
  std::printf("\n%-22s %-5s %-17s %-17s %-6s %10s %8s %8s %8s %9s  %s\n", "LINK", "STATE",
              "A ADDRESS", "B ADDRESS", "DIR", "PACKETS", "DROPS", "QDROPS", "CE", "QDELAY99",
              "SHAPE (live)");
  for (size_t l = 0; l < t.links.size(); ++l) {
    const Link& link = t.links[l];
    const auto* sa = end_state(link.a.node, link.a.ifname);
    const auto* sb = end_state(link.b.node, link.b.ifname);
    bool up = sa && sb && sa->running && sb->running;
    for (bool back : {false, true})  // `link down`: the veth is up, the link model drops all
      if (const DirectionState* d = dir_state(l, back); d && d->shape.down.value_or(false))
        up = false;
    std::string name = t.nodes[link.a.node].name + ":" + t.nodes[link.b.node].name;
    for (bool back : {false, true}) {
      const DirectionState* d = dir_state(l, back);
      const auto* from = back ? sb : sa;
      const uint64_t kernel_tx = from ? from->tx_packets : 0;
      auto num = [](uint64_t v) { return static_cast<unsigned long long>(v); };
      std::string shape = d && d->shaped ? shape_text(d->shape) : "(unshaped)";
      if (d && d->shaped && !lm->mode.fq && (d->shape.delay_ns || d->shape.jitter_ns))
        shape += " [no fq: no delay/jitter]";
      const std::string qd = d && d->counters.packets
                                 ? "<" + format_time_short(queue_delay_quantile(d->counters, 0.99))
                                 : "-";
      std::printf("%-22s %-5s %-17s %-17s %-6s %10llu %8llu %8llu %8llu %9s  %s\n",
                  back ? "" : name.c_str(), back ? "" : (up ? "up" : "DOWN"),
                  back ? "" : (link.a.ifname + " " + model->addresses.links[l].a.str()).c_str(),
                  back ? "" : (link.b.ifname + " " + model->addresses.links[l].b.str()).c_str(),
                  back ? "b>a" : "a>b", num(d && d->shaped ? d->counters.packets : kernel_tx),
                  num(d ? d->counters.drop_loss + d->counters.drop_down : 0),
                  num(d ? d->counters.drop_queue : 0), num(d ? d->counters.ce_marks : 0),
                  qd.c_str(), shape.c_str());
    }
  }
  print_rdma_status(*model, paths);
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
  if (!model) return lab_error(model.error());
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
  RunOptions run;
  run.tag = !no_tag;
  auto exits = run_in_nodes(nodes, argv, run);
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

int cmd_doctor(bool json, const std::string& run_root) {
  auto kernel = kernel_info();
  auto probes = probe_features(run_root);
  if (json)
    std::printf("%s\n", doctor_json(kernel, probes).c_str());
  else
    std::printf("%s", format_doctor_table(kernel, probes).c_str());
  return kExitOk;
}

int cmd_rsh(const std::vector<std::string>& args) {
  LabPaths paths;
  size_t at = 0;
  if (args.size() > 1 && args[0] == "--run-dir") {
    paths.run_root = args[1];
    at = 2;
  }
  if (args.size() < at + 3) {
    print_error("rsh: usage: fabemu rsh [--run-dir DIR] LAB HOST COMMAND... (mpirun's agent)");
    return kExitBadInput;
  }
  paths.lab = args[at];
  auto model = lab_model(paths);
  if (!model) return lab_error(model.error());
  const int id = model->topo.find(args[at + 1]);
  if (id < 0 || model->topo.nodes[id].role != Role::Host) {
    print_error("rsh: lab " + paths.lab + " has no host named '" + args[at + 1] + "'");
    return kExitBadInput;
  }
  std::string command;
  for (size_t i = at + 2; i < args.size(); ++i) command += (command.empty() ? "" : " ") + args[i];
  Error e = exec_in_node(node_context(*model, paths, id), {"/bin/sh", "-c", command});
  print_error(e.what());
  return 127;
}

}  // namespace fabemu::cli
