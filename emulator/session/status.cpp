// `status`: a lab's state (runtime/lab_status) as one JSON object, one machine's or merged.
#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <set>

#include "results/ecmp_groups.h"
#include "runtime/lab_status.h"
#include "session/across.h"
#include "session/session.h"

namespace fabemu::session {
namespace {

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
              {"lossless_packets", c.lossless_packets},
              {"pause_ns", real(c.pause_ns)},
              {"pause_events", c.pause_events},
              {"drop_watchdog", c.drop_watchdog},
              {"lossless_drops", c.lossless_drops},
              {"corrupted", c.corrupted},
              {"duplicated", c.duplicated},
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

// A host NIC's DCQCN: CNPs and each QP's rate now, in the real fabric's units.
Json dcqcn_json(const HostDcqcnState& h, const TimeScale& t) {
  const DcqcnCounters& c = h.counters;
  Json qps = Json::array();
  for (const DcqcnQp& q : h.qps)
    qps.push_back({{"peer", Ipv4{q.peer}.str()},
                   {"qpn", q.qpn},
                   {"cut", q.cut},
                   {"rate_bps", uint64_t(t.real_bps(double(q.rate_bps)))},
                   {"target_bps", uint64_t(t.real_bps(double(q.target_bps)))},
                   {"alpha", q.alpha},
                   {"cnps", q.cnps},
                   {"decreases", q.decreases},
                   {"packets", q.packets}});
  return {{"cnps_sent", c.cnps_sent},
          {"cnps_received", c.cnps_received},
          {"ce_received", c.ce_received},
          {"paced", c.paced},
          {"qps", qps}};
}

// This machine's switches' shared buffers (switches: {buffer, alpha}).
Json buffers_json(const LabStatus& s) {
  Json out = Json::array();
  if (!s.link_model) return out;
  for (const SwitchBufferState& b : s.link_model->buffers)
    out.push_back({{"switch", b.name},
                   {"bytes", b.occupancy.bytes},
                   {"alpha", b.alpha},
                   {"used_bytes", b.occupancy.used},
                   {"peak_bytes", b.occupancy.peak}});
  return out;
}

Json rdma_json(const LabStatus& s) {
  const LabModel& m = s.model;
  if (!m.rdma.rxe) return {{"mode", "off"}, {"reason", m.rdma.why_not}};
  Json devices = Json::array();
  for (int h : m.topo.hosts()) {
    const std::string& host = m.topo.nodes[h].name;
    const auto it = s.rdma.find(host);
    if (it == s.rdma.end()) continue;  // another machine's
    const RdmaDeviceState& d = it->second;
    Json j = {
        {"host", host}, {"rank", m.topo.nodes[h].rank}, {"device", d.name}, {"present", d.present}};
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
    if (s.link_model)
      for (const HostDcqcnState& dc : s.link_model->dcqcn)
        if (dc.node == h) j["dcqcn"] = dcqcn_json(dc, m.time_scale);
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

// Direction `d`'s bytes and frames since the lab came up: the link model's where it shapes the
// port, else the port's own tx counters; zeros when unreadable.
DirectionSample direction_since_up(const LabStatus& s, size_t d) {
  DirectionSample out;
  const size_t l = d / 2;
  const bool back = d % 2 == 1;
  if (const DirectionState* x = s.direction(l, back); x && x->shaped) {
    out.bytes = x->counters.bytes;
    out.packets = x->counters.packets;
    return out;
  }
  const Link& link = s.model.topo.links[l];
  const LinkEnd& from = back ? link.b : link.a;
  if (const InterfaceState* i = s.interface(from.node, from.ifname)) {
    out.bytes = i->tx_bytes;
    out.packets = i->tx_packets;
  }
  return out;
}

// This machine's switches' ECMP groups since the lab came up, busiest first (a lab across
// machines: each switch's group is its own machine's, whose ports its members are).
Json groups_json(const LabStatus& s) {
  const LabModel& m = s.model;
  Json out = Json::array();
  for (const GroupBalance& g :
       group_balances(m, [&](size_t d) { return direction_since_up(s, d); }))
    if (!m.part || m.part->local(g.node)) out.push_back(group_json(m.topo, g));
  return out;
}

// Groups busiest first.
void sort_groups(Json& groups) {
  std::stable_sort(groups.begin(), groups.end(), [](const Json& a, const Json& b) {
    return json_count(a, "bytes") > json_count(b, "bytes");
  });
}

}  // namespace

Json status_json(const LabStatus& s) {
  const LabModel& m = s.model;
  const Topology& t = m.topo;
  Json j = {{"schema", kSchemaVersion},
            {"command", "status"},
            {"lab", s.paths.lab},
            {"state", s.state},
            {"scenario", s.journal.scenario_file},
            {"pool", m.addresses.pool.str()},
            {"time_scale", m.time_scale.factor},
            {"read_at_ns", s.read_ns}};
  if (m.time_scale.dilated()) j["time_scale_why"] = m.time_scale_why;
  if (m.part) {
    // A lab across machines: this machine's view (its nodes present, the others' not);
    // `status --on` merges every machine's.
    j["machine"] = m.part->machines.at(m.part->index);
    j["machines"] = m.part->machines;
  }
  if (ovs_switches(m)) {
    Json sw = {{"kind", "ovs"}, {"datapath", m.ovs.kernel ? "kernel" : "userspace"}};
    if (!m.ovs.kernel) sw["reason"] = m.ovs.why_userspace;
    sw["namespace"] = s.paths.ns_name(kOvsNamespaceNode);
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
              {"tier", node.tier},
              {"namespace", node_ns(m, s.paths, static_cast<int>(n))}};
    if (host)
      o.update({{"rank", node.rank}, {"address", m.addresses.host_address(t, n).str()}});
    else
      o["loopback"] = m.addresses.loopback[n]->str();
    if (m.part) o["machine"] = m.part->machines.at(m.part->placement.machine_of[n]);
    o["present"] = !s.interfaces[n].empty();
    nodes.push_back(std::move(o));
  }
  j["nodes"] = nodes;
  Json links = Json::array();
  for (size_t l = 0; l < t.links.size(); ++l) {
    const Link& link = t.links[l];
    Json o = {{"name", link_name(t, link)},
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
  j["ecmp_groups"] = groups_json(s);
  j["rdma"] = rdma_json(s);
  j["switch_buffers"] = buffers_json(s);
  return j;
}

Json merge_status(const std::vector<Json>& parts) {
  Json out = parts.at(0);
  // Whose is what: each node, each link end and each direction belongs to one machine.
  std::map<std::string, size_t> part_of;
  for (size_t k = 0; k < parts.size(); ++k) part_of[parts[k].value("machine", "")] = k;
  auto owner = [&](const Json& node) -> const Json& {
    auto it = part_of.find(node.value("machine", ""));
    return parts[it == part_of.end() ? 0 : it->second];
  };
  out.erase("machine");
  Json nodes = Json::array();
  std::map<std::string, std::string> machine_of;
  for (size_t n = 0; n < out["nodes"].size(); ++n) {
    const Json& mine = owner(out["nodes"][n])["nodes"][n];
    machine_of[mine.value("name", "")] = mine.value("machine", "");
    nodes.push_back(mine);
  }
  out["nodes"] = nodes;
  for (size_t l = 0; l < out["links"].size(); ++l) {
    Json& link = out["links"][l];
    for (const auto& [end, dir] : {std::pair{"a", "a_to_b"}, std::pair{"b", "b_to_a"}}) {
      const Json node = {{"machine", machine_of[link[end].value("node", "")]}};
      const Json& from = owner(node)["links"][l];
      link[end] = from[end];
      if (from.contains(dir))
        link[dir] = from[dir];
      else
        link.erase(dir);
    }
  }
  Json devices = Json::array(), groups = Json::array(), buffers = Json::array();
  std::vector<std::string> states;
  for (const Json& p : parts) {
    if (p.contains("ecmp_groups"))
      for (const Json& g : p["ecmp_groups"]) groups.push_back(g);
    if (p.contains("switch_buffers"))
      for (const Json& b : p["switch_buffers"]) buffers.push_back(b);
    if (p["rdma"].contains("devices"))
      for (const Json& d : p["rdma"]["devices"]) devices.push_back(d);
    if (p.value("state", "") != "up")
      states.push_back(p.value("machine", "") + ": " + p.value("state", ""));
    if (p["link_model"].value("mode", "") == "unavailable") out["link_model"] = p["link_model"];
  }
  std::sort(devices.begin(), devices.end(),
            [](const Json& a, const Json& b) { return a.value("rank", 0) < b.value("rank", 0); });
  if (out["rdma"].contains("devices")) out["rdma"]["devices"] = devices;
  sort_groups(groups);
  out["ecmp_groups"] = groups;
  out["switch_buffers"] = buffers;
  std::string state = "up";
  for (const std::string& s : states) state = (state == "up" ? "" : state + ", ") + s;
  out["state"] = state;
  return out;
}

Result<Json> lab_status(const std::string& lab, const std::string& on, const LabPaths& base) {
  if (!on.empty()) return status_across(lab, on, base);
  FABEMU_TRY(need_root("status"));
  LabPaths paths = base;
  paths.lab = lab;
  auto status = read_lab_status(paths);
  if (!status) return absent_is_no_lab(status.error());
  return status_json(*status);
}

Json lab_list_json(const LabPaths& base) {
  Json list = Json::array();
  for (const LabListing& l : list_lab_states(base))
    list.push_back({{"lab", l.lab}, {"state", l.state}, {"scenario", l.scenario}});
  return {{"schema", kSchemaVersion}, {"command", "status"}, {"labs", list}};
}

namespace {

bool direction_down(const Json& link, const char* dir) {
  return link.contains(dir) && link[dir]["shape"].value("down", false);
}

}  // namespace

unsigned long long json_count(const Json& j, const char* key) {
  return j.is_object() ? j.value(key, 0ULL) : 0ULL;
}

// Both ends running and neither direction `link down` (LabStatus::link_up, from the JSON).
bool status_link_up(const Json& link) {
  return link["a"].value("up", false) && link["b"].value("up", false) &&
         !direction_down(link, "a_to_b") && !direction_down(link, "b_to_a");
}

// A direction's drops other than its queue's: loss, link down, the PFC watchdog.
unsigned long long status_drops(const Json& counters) {
  return json_count(counters, "drop_loss") + json_count(counters, "drop_down") +
         json_count(counters, "drop_watchdog");
}

namespace {

bool matches(const std::vector<std::string>& patterns, const std::string& name) {
  for (const std::string& p : patterns)
    if (::fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
  return false;
}

// The nodes and links the view asks for; rdma devices of the hosts kept.
Json filter_status(const Json& j, const StatusView& v) {
  Json out = j;
  std::set<std::string> nodes;
  for (const Json& n : j["nodes"])
    if (matches(v.nodes, n.value("name", ""))) nodes.insert(n.value("name", ""));
  Json links = Json::array();
  std::set<std::string> ends;
  for (const Json& l : j["links"]) {
    const std::string a = l["a"].value("node", ""), b = l["b"].value("node", "");
    if (!nodes.count(a) && !nodes.count(b) && !matches(v.links, a + ":" + b) &&
        !matches(v.links, b + ":" + a))
      continue;
    links.push_back(l);
    ends.insert({a, b});
  }
  // A link asked for by name brings its ends' rows; a node asked for, only itself.
  Json kept = Json::array();
  for (const Json& n : j["nodes"])
    if (nodes.count(n.value("name", "")) || (!v.links.empty() && ends.count(n.value("name", ""))))
      kept.push_back(n);
  out["nodes"] = kept;
  out["links"] = links;
  if (out["rdma"].contains("devices")) {
    Json devices = Json::array();
    for (const Json& d : j["rdma"]["devices"])
      if (nodes.count(d.value("host", ""))) devices.push_back(d);
    out["rdma"]["devices"] = devices;
  }
  if (out.contains("ecmp_groups")) {
    Json groups = Json::array();
    for (const Json& g : j["ecmp_groups"])
      if (nodes.count(g.value("switch", ""))) groups.push_back(g);
    out["ecmp_groups"] = groups;
  }
  out["filter"] = {{"nodes", v.nodes}, {"links", v.links}};
  return out;
}

// A tier's name from its nodes' names: the letters before the first one's number ("leaf7" ->
// "leaf"); the role where names have none in common.
std::string tier_name(const std::vector<std::string>& names, const std::string& role) {
  auto stem = [](const std::string& n) { return n.substr(0, n.find_first_of("0123456789")); };
  const std::string s = names.empty() ? "" : stem(names.front());
  for (const std::string& n : names)
    if (stem(n) != s) return role;
  return s.empty() ? role : s;
}

// By tier: nodes and how many are present; by link class: links up, shaped directions and the
// counters summed; links down by name; the directions that dropped most.
Json status_summary(const Json& j) {
  std::map<std::pair<int, std::string>, std::vector<std::string>> tiers;  // (tier, role)
  std::map<std::pair<int, std::string>, int> present;
  for (const Json& n : j["nodes"]) {
    const auto key = std::pair(-n.value("tier", 0), n.value("role", ""));
    tiers[key].push_back(n.value("name", ""));
    present[key] += n.value("present", false);
  }
  Json out_tiers = Json::array();
  for (const auto& [key, names] : tiers)
    out_tiers.push_back({{"tier", -key.first},
                         {"name", tier_name(names, key.second)},
                         {"role", key.second},
                         {"nodes", names.size()},
                         {"present", present[key]},
                         {"first", names.front()},
                         {"last", names.back()}});
  std::map<std::string, Json> classes;
  Json down = Json::array();
  std::vector<std::pair<unsigned long long, std::string>> dropping;
  for (const Json& l : j["links"]) {
    Json& c = classes[l.value("class", "")];
    if (c.is_null())
      c = {{"class", l.value("class", "")}, {"links", 0},       {"up", 0},
           {"shaped_directions", 0},        {"packets", 0ULL},  {"drops", 0ULL},
           {"queue_drops", 0ULL},           {"ce_marks", 0ULL}, {"pause_ns", 0ULL}};
    c["links"] = c["links"].get<int>() + 1;
    const bool up = status_link_up(l);
    c["up"] = c["up"].get<int>() + up;
    if (!up) down.push_back(l.value("name", ""));
    for (const auto& [dir, from] : {std::pair{"a_to_b", "a"}, std::pair{"b_to_a", "b"}}) {
      const Json d = l.contains(dir) ? l[dir] : Json();
      const bool shaped = d.is_object() && d.value("shaped", false);
      const Json counters = d.is_object() ? d["counters"] : Json();
      const unsigned long long drops = status_drops(counters);
      auto add = [&](const char* key, unsigned long long v) {
        c[key] = c[key].get<unsigned long long>() + v;
      };
      c["shaped_directions"] = c["shaped_directions"].get<int>() + shaped;
      add("packets", shaped ? json_count(counters, "packets") : json_count(l[from], "tx_packets"));
      add("drops", drops);
      add("queue_drops", json_count(counters, "drop_queue"));
      add("ce_marks", json_count(counters, "ce_marks"));
      add("pause_ns", json_count(counters, "pause_ns"));
      if (const unsigned long long all = drops + json_count(counters, "drop_queue"))
        dropping.emplace_back(all, d.value("direction", l.value("name", "")));
    }
  }
  std::sort(dropping.rbegin(), dropping.rend());
  if (dropping.size() > 10) dropping.resize(10);
  Json out_classes = Json::array();
  for (auto& [name, c] : classes) out_classes.push_back(std::move(c));
  Json top = Json::array();
  for (const auto& [n, name] : dropping) top.push_back({{"direction", name}, {"drops", n}});
  return {{"tiers", out_tiers},
          {"link_classes", out_classes},
          {"links_down", down},
          {"most_drops", top}};
}

}  // namespace

Json status_view(Json j, const StatusView& view) {
  j["summary"] = status_summary(j);  // of the whole lab, whatever rows are shown
  if (!view.filtered()) return j;
  Json summary = std::move(j["summary"]);
  j = filter_status(j, view);
  j["summary"] = std::move(summary);
  return j;
}

}  // namespace fabemu::session
