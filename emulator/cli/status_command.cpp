// `status`: a lab's state (runtime/lab_status) rendered as tables or as one JSON object.
#include <cstdio>
#include <cstdlib>

#include "cli/commands.h"
#include "runtime/lab_status.h"
#include "util/json.h"
#include "util/units.h"

namespace fabemu::cli {
namespace {

Json shape_json(const LinkShape& s) {
  Json j = Json::object();
  if (s.rate_bps) j["rate_bps"] = *s.rate_bps;
  if (s.delay_ns) j["delay_ns"] = *s.delay_ns;
  if (s.jitter_ns) j["jitter_ns"] = *s.jitter_ns;
  if (s.loss) j["loss"] = *s.loss;
  if (s.loss_burst)
    j["loss_burst"] = {{"p", s.loss_burst->p},
                       {"r", s.loss_burst->r},
                       {"loss_bad", s.loss_burst->loss_bad},
                       {"loss_good", s.loss_burst->loss_good}};
  if (s.reorder) j["reorder"] = *s.reorder;
  if (s.queue_ns) j["queue_ns"] = *s.queue_ns;
  if (s.queue_bytes) j["queue_bytes"] = *s.queue_bytes;
  if (s.ecn_threshold_ns) j["ecn_threshold_ns"] = *s.ecn_threshold_ns;
  if (s.ecn_threshold_bytes) j["ecn_threshold_bytes"] = *s.ecn_threshold_bytes;
  if (s.down) j["down"] = *s.down;
  return j;
}

// Shapes and queue delays in the real fabric's units; a dilated lab's port values beside them.
Json direction_json(const DirectionState& d, const TimeScale& t) {
  const LinkCounters& c = d.counters;
  auto real = [&](uint64_t wall_ns) { return static_cast<uint64_t>(t.real_ns(double(wall_ns))); };
  Json j = {{"direction", d.name},
            {"shaped", d.shaped},
            {"shape", shape_json(d.shape)},
            {"counters",
             {{"packets", c.packets},
              {"bytes", c.bytes},
              {"drop_loss", c.drop_loss},
              {"drop_queue", c.drop_queue},
              {"drop_down", c.drop_down},
              {"ce_marks", c.ce_marks},
              {"queue_delay_p50_ns", real(queue_delay_quantile(c, 0.5))},
              {"queue_delay_p99_ns", real(queue_delay_quantile(c, 0.99))},
              {"queue_delay_hist", c.queue_delay_hist}}}};
  if (t.dilated()) {
    j["wall_shape"] = shape_json(d.wall_shape);
    j["counters"]["wall_queue_delay_p99_ns"] = queue_delay_quantile(c, 0.99);
  }
  return j;
}

Json link_model_json(const LabStatus& s) {
  if (!s.link_model) return {{"mode", "unavailable"}, {"reason", s.link_model_error}};
  Json j = {{"mode", shaping_mode_name(s.link_model->mode)}};
  if (!s.link_model->mode.fq) j["reason"] = s.link_model->mode.no_fq_reason;
  // queue_delay_hist[i] counts waits below this many ns (the last bucket: everything else).
  Json upper = Json::array();
  for (int i = 0; i < FABEMU_HIST_BUCKETS; ++i)
    upper.push_back(uint64_t{1} << (FABEMU_HIST_SHIFT + i));
  j["queue_delay_hist_upper_ns"] = upper;
  return j;
}

Json rdma_json(const LabStatus& s) {
  const LabModel& m = s.model;
  if (!m.rdma.rxe) return {{"mode", "off"}, {"reason", m.rdma.why_not}};
  Json devices = Json::array();
  for (int h : m.topo.hosts()) {
    const std::string& host = m.topo.nodes[h].name;
    const RdmaDeviceState& d = s.rdma.at(host);
    Json j = {{"host", host}, {"device", d.name}, {"present", d.present}};
    j["nic"] = host_nic(m.topo, h);
    if (d.present) {
      j.update({{"netdev", d.netdev},
                {"state", d.state},
                {"phys_state", d.phys_state},
                {"gid1", d.gid1},
                {"gid1_type", d.gid1_type},
                {"hw_counters", d.hw_counters},
                {"counters", d.counters}});
    }
    devices.push_back(std::move(j));
  }
  return {{"mode", "rxe"}, {"gid_index", 1}, {"devices", devices}};
}

Json end_json(const LabStatus& s, size_t l, const LinkEnd& e) {
  const LabModel& m = s.model;
  Json j = {{"node", m.topo.nodes[e.node].name},
            {"ifname", e.ifname},
            {"namespace", node_ns(m, s.paths, e.node)},
            {"address", m.addresses.address_of(m.topo, static_cast<int>(l), e.node).str()}};
  const InterfaceState* i = s.interface(e.node, e.ifname);
  if (!i) {
    j["up"] = false;
    return j;
  }
  j.update({{"up", i->up && i->running},
            {"tx_packets", i->tx_packets},
            {"tx_bytes", i->tx_bytes},
            {"rx_packets", i->rx_packets},
            {"rx_bytes", i->rx_bytes},
            {"tx_dropped", i->tx_dropped},
            {"rx_dropped", i->rx_dropped}});
  return j;
}

Json status_json(const LabStatus& s) {
  const LabModel& m = s.model;
  const Topology& t = m.topo;
  Json j = {{"lab", s.paths.lab},
            {"state", s.state},
            {"scenario", s.journal.scenario_file},
            {"pool", m.addresses.pool.str()},
            {"time_scale", m.time_scale.factor}};
  if (m.time_scale.dilated()) j["time_scale_why"] = m.time_scale_why;
  if (ovs_switches(m)) {
    Json sw = {{"kind", "ovs"}, {"datapath", m.ovs.kernel ? "kernel" : "userspace"}};
    if (!m.ovs.kernel) sw["reason"] = m.ovs.why_userspace;
    sw["run_dir"] = s.paths.ovs_dir();
    j["switches"] = sw;
  } else {
    j["switches"] = {{"kind", "router"}};
  }
  j["link_model"] = link_model_json(s);
  Json nodes = Json::array();
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const Node& node = t.nodes[n];
    const bool host = node.role == Role::Host;
    Json o = {{"name", node.name},
              {"role", host ? "host" : "switch"},
              {"namespace", node_ns(m, s.paths, static_cast<int>(n))}};
    if (host)
      o.update({{"rank", node.rank}, {"address", m.addresses.host_address(t, n).str()}});
    else
      o["loopback"] = m.addresses.loopback[n]->str();
    o["present"] = !s.interfaces[n].empty();
    nodes.push_back(std::move(o));
  }
  j["nodes"] = nodes;
  Json links = Json::array();
  for (size_t l = 0; l < t.links.size(); ++l) {
    const Link& link = t.links[l];
    Json o = {{"name", t.nodes[link.a.node].name + ":" + t.nodes[link.b.node].name},
              {"class", link.cls},
              {"a", end_json(s, l, link.a)},
              {"b", end_json(s, l, link.b)},
              {"scenario_a_to_b", shape_json(link.a_to_b)},
              {"scenario_b_to_a", shape_json(link.b_to_a)}};
    for (bool back : {false, true})
      if (const DirectionState* d = s.direction(l, back))
        o[back ? "b_to_a" : "a_to_b"] = direction_json(*d, m.time_scale);
    links.push_back(std::move(o));
  }
  j["links"] = links;
  j["rdma"] = rdma_json(s);
  return j;
}

std::string mode_text(const LabStatus& s) {
  if (!s.link_model) return "unavailable: " + s.link_model_error;
  const int shaped = s.shaped_ports();
  const PlanOptions& mode = s.link_model->mode;
  if (shaped == 0) return "loaded, no port shaped (`fabemu link set` shapes one)";
  if (mode.fq)
    return "eBPF + fq (EDT) on " + std::to_string(shaped) +
           " ports: rate, delay, jitter, loss, queue, ECN enforced";
  if (mode.htb)
    return "eBPF + htb on " + std::to_string(shaped) + " ports (" + mode.no_fq_reason +
           "): rate (htb queue), loss, queue, ECN enforced; delay and jitter NOT added";
  return "eBPF POLICER on " + std::to_string(shaped) + " ports (" + mode.no_fq_reason +
         "): rate, loss, queue, ECN enforced; delay and jitter NOT added";
}

unsigned long long num(uint64_t v) {
  return static_cast<unsigned long long>(v);
}

void print_links(const LabStatus& s) {
  const LabModel& m = s.model;
  const Topology& t = m.topo;
  std::printf("\n%-22s %-5s %-17s %-17s %-6s %10s %8s %8s %8s %9s  %s\n", "LINK", "STATE",
              "A ADDRESS", "B ADDRESS", "DIR", "PACKETS", "DROPS", "QDROPS", "CE", "QDELAY99",
              "SHAPE (live)");
  for (size_t l = 0; l < t.links.size(); ++l) {
    const Link& link = t.links[l];
    const std::string name = t.nodes[link.a.node].name + ":" + t.nodes[link.b.node].name;
    for (bool back : {false, true}) {
      const DirectionState* d = s.direction(l, back);
      const LinkEnd& from_end = back ? link.b : link.a;
      const InterfaceState* from = s.interface(from_end.node, from_end.ifname);
      std::string shape = d && d->shaped ? d->shape.str() : "(unshaped)";
      if (shape.empty()) shape = "-";
      if (d && d->shaped && !s.link_model->mode.fq && (d->shape.delay_ns || d->shape.jitter_ns))
        shape += " [no fq: no delay/jitter]";
      const uint64_t q99 = static_cast<uint64_t>(
          m.time_scale.real_ns(double(d ? queue_delay_quantile(d->counters, 0.99) : 0)));
      // A dilated lab's smallest bucket can be under a nanosecond of the real fabric.
      const std::string qd =
          d && d->counters.packets ? "<" + format_time_short(std::max<uint64_t>(1, q99)) : "-";
      std::printf("%-22s %-5s %-17s %-17s %-6s %10llu %8llu %8llu %8llu %9s  %s\n",
                  back ? "" : name.c_str(), back ? "" : (s.link_up(l) ? "up" : "DOWN"),
                  back ? "" : (link.a.ifname + " " + m.addresses.links[l].a.str()).c_str(),
                  back ? "" : (link.b.ifname + " " + m.addresses.links[l].b.str()).c_str(),
                  back ? "b>a" : "a>b",
                  num(d && d->shaped ? d->counters.packets
                      : from         ? from->tx_packets
                                     : 0),
                  num(d ? d->counters.drop_loss + d->counters.drop_down : 0),
                  num(d ? d->counters.drop_queue : 0), num(d ? d->counters.ce_marks : 0),
                  qd.c_str(), shape.c_str());
    }
  }
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

void print_rdma(const LabStatus& s) {
  const LabModel& m = s.model;
  if (!m.rdma.rxe) {
    std::printf("\nrdma: off (%s)\n", m.rdma.why_not.c_str());
    return;
  }
  std::printf("\nrdma: soft-RoCE (rxe) on %zu hosts, RoCEv2 GID index 1\n", s.rdma.size());
  std::printf("%-12s %-24s %-8s %-8s %12s %12s  %s\n", "HOST", "DEVICE", "NETDEV", "STATE",
              "SENT_PKTS", "RCVD_PKTS", "GID 1");
  for (int h : m.topo.hosts()) {
    const std::string& host = m.topo.nodes[h].name;
    const RdmaDeviceState& d = s.rdma.at(host);
    if (!d.present) {
      std::printf("%-12s %-24s MISSING\n", host.c_str(), d.name.c_str());
      continue;
    }
    auto counter = [&](const char* name) {
      auto it = d.hw_counters.find(name);
      return num(it == d.hw_counters.end() ? 0 : it->second);
    };
    std::printf("%-12s %-24s %-8s %-8s %12llu %12llu  %s\n", host.c_str(), d.name.c_str(),
                d.netdev.c_str(), d.state.c_str(), counter("sent_pkts"), counter("rcvd_pkts"),
                short_gid(d.gid1).c_str());
    // The rest only where something happened: retries, sequence errors, RNR NAKs, ...
    std::string other;
    for (const auto* set : {&d.hw_counters, &d.counters})
      for (const auto& [name, v] : *set)
        if (v && name != "sent_pkts" && name != "rcvd_pkts")
          other += (other.empty() ? "" : ", ") + name + " " + std::to_string(v);
    if (!other.empty()) std::printf("%-12s %s\n", "", other.c_str());
  }
}

void print_status(const LabStatus& s) {
  const LabModel& m = s.model;
  const Topology& t = m.topo;
  std::printf("lab %s: %s; %d hosts, %zu switches, %zu links; addresses %s; scenario %s\n",
              s.paths.lab.c_str(), s.state.c_str(), t.host_count(), t.switches().size(),
              t.links.size(), m.addresses.pool.str().c_str(), s.journal.scenario_file.c_str());
  if (!s.missing.empty())
    std::printf("  missing namespaces: %zu (first: %s)\n", s.missing.size(),
                s.missing.front().c_str());
  std::printf("link model: %s\n", mode_text(s).c_str());
  if (m.time_scale.dilated())
    std::printf(
        "time: dilated x%s (%s): shapes and queue delays below are the real fabric's; "
        "the ports run at rate / %s with delays x %s\n",
        format_factor(m.time_scale.factor).c_str(), m.time_scale_why.c_str(),
        format_factor(m.time_scale.factor).c_str(), format_factor(m.time_scale.factor).c_str());
  if (ovs_switches(m))
    std::printf("switches: Open vSwitch bridges in %s, %s; flows in %s/SWITCH.bundle\n",
                s.paths.ns_name(kOvsNamespaceNode).c_str(),
                m.ovs.kernel ? "kernel datapath"
                             : ("userspace datapath (" + m.ovs.why_userspace + ")").c_str(),
                s.paths.ovs_dir().c_str());
  std::printf("\n%-12s %-7s %-16s %s\n", "NODE", "ROLE", "ADDRESS", "NAMESPACE");
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    const Node& node = t.nodes[n];
    const bool host = node.role == Role::Host;
    const Ipv4 ip = host ? m.addresses.host_address(t, n) : *m.addresses.loopback[n];
    std::printf("%-12s %-7s %-16s %s\n", node.name.c_str(), host ? "host" : "switch",
                ip.str().c_str(), node_ns(m, s.paths, static_cast<int>(n)).c_str());
  }
  print_links(s);
  print_rdma(s);
}

int list_labs_status(const LabPaths& base, bool json) {
  Json list = Json::array();
  for (const LabListing& l : list_lab_states(base)) {
    if (json)
      list.push_back({{"lab", l.lab}, {"state", l.state}, {"scenario", l.scenario}});
    else
      std::printf("%-12s %-20s %s\n", l.lab.c_str(), l.state.c_str(), l.scenario.c_str());
  }
  if (json) std::printf("%s\n", json_text(list).c_str());
  return kExitOk;
}

}  // namespace

int cmd_status(const std::string& lab, bool json, const LabPaths& base) {
  if (lab.empty()) return list_labs_status(base, json);
  if (!require_root("status")) return kExitNeedsRoot;
  LabPaths paths = base;
  paths.lab = lab;
  auto status = read_lab_status(paths);
  if (!status) return lab_error(status.error());
  if (json)
    std::printf("%s\n", json_text(status_json(*status)).c_str());
  else
    print_status(*status);
  return status->missing.empty() ? kExitOk : kExitFailed;
}

}  // namespace fabemu::cli
