// `status`: a lab's state (runtime/lab_status) rendered as tables or as one JSON object.
#include <fnmatch.h>
#include <CLI/CLI.hpp>
#include <memory>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "cli/commands.h"
#include "runtime/lab_status.h"
#include "util/json.h"
#include "util/units.h"

namespace fabemu::cli {
namespace {

// Everything below renders the JSON object, so that one machine's status and the merged
// status of a lab across machines print alike.

unsigned long long num(const Json& j, const char* key) {
  return j.is_object() ? j.value(key, 0ULL) : 0ULL;
}

LinkShape shape_from_json(const Json& j) {
  LinkShape s;
  auto u64 = [&](const char* key, std::optional<uint64_t>& out) {
    if (j.contains(key)) out = j[key].get<uint64_t>();
  };
  u64("rate_bps", s.rate_bps);
  u64("delay_ns", s.delay_ns);
  u64("jitter_ns", s.jitter_ns);
  u64("queue_ns", s.queue_ns);
  u64("queue_bytes", s.queue_bytes);
  u64("ecn_threshold_ns", s.ecn_threshold_ns);
  u64("ecn_threshold_bytes", s.ecn_threshold_bytes);
  if (j.contains("loss")) s.loss = j["loss"].get<double>();
  if (j.contains("loss_burst")) {
    const Json& b = j["loss_burst"];
    s.loss_burst = BurstLoss{b.at("p").get<double>(), b.at("r").get<double>(),
                             b.at("loss_bad").get<double>(), b.at("loss_good").get<double>()};
  }
  if (j.contains("corrupt")) s.corrupt = j["corrupt"].get<double>();
  if (j.contains("duplicate")) s.duplicate = j["duplicate"].get<double>();
  if (j.contains("reorder")) s.reorder = j["reorder"].get<bool>();
  if (j.contains("down")) s.down = j["down"].get<bool>();
  if (j.contains("pfc")) {
    const Json& p = j["pfc"];
    s.pfc = PfcShape{p.at("xoff_bytes").get<uint64_t>(), p.at("xon_bytes").get<uint64_t>(),
                     p.value("watchdog_ns", uint64_t{0})};
  }
  return s;
}

bool direction_down(const Json& link, const char* dir) {
  return link.contains(dir) && link[dir]["shape"].value("down", false);
}

// Both ends running and neither direction `link down` (LabStatus::link_up, from the JSON).
bool link_up(const Json& link) {
  return link["a"].value("up", false) && link["b"].value("up", false) &&
         !direction_down(link, "a_to_b") && !direction_down(link, "b_to_a");
}

// A direction's drops other than its queue's: loss, link down, the PFC watchdog.
unsigned long long drops_of(const Json& counters) {
  return num(counters, "drop_loss") + num(counters, "drop_down") + num(counters, "drop_watchdog");
}

int shaped_ports(const Json& j) {
  int n = 0;
  for (const Json& l : j["links"])
    for (const char* dir : {"a_to_b", "b_to_a"})
      n += l.contains(dir) && l[dir].value("shaped", false);
  return n;
}

std::string mode_text(const Json& j) {
  const Json& lm = j["link_model"];
  const std::string mode = lm.value("mode", "unavailable");
  const std::string reason = lm.value("reason", "");
  if (mode == "unavailable") return "unavailable: " + reason;
  const int shaped = shaped_ports(j);
  if (shaped == 0) return "loaded, no port shaped (`fabemu link set` shapes one)";
  if (mode == "fq")
    return "eBPF + fq (EDT) on " + std::to_string(shaped) +
           " ports: rate, delay, jitter, loss, queue, ECN enforced";
  if (mode == "htb")
    return "eBPF + htb on " + std::to_string(shaped) + " ports (" + reason +
           "): rate (htb queue), loss, queue, ECN enforced; delay and jitter NOT added";
  return "eBPF POLICER on " + std::to_string(shaped) + " ports (" + reason +
         "): rate, loss, queue, ECN enforced; delay and jitter NOT added";
}

void print_links(const Json& j) {
  const bool fq = j["link_model"].value("mode", "") == "fq";
  // PFC's columns only where a link has it.
  bool pfc = false;
  for (const Json& link : j["links"])
    for (const char* dir : {"a_to_b", "b_to_a"})
      if (link.contains(dir) && link[dir].contains("shape"))
        pfc |= link[dir]["shape"].contains("pfc");
  std::printf("\n%-22s %-5s %-25s %-25s %-6s %10s %8s %8s %8s %9s%s  %s\n", "LINK", "STATE",
              "A NODE/PORT ADDRESS", "B NODE/PORT ADDRESS", "DIR", "PACKETS", "DROPS", "QDROPS",
              "CE", "QDELAY99", pfc ? "     PAUSED  PAUSES" : "", "SHAPE (live)");
  for (const Json& link : j["links"]) {
    const Json &a = link["a"], &b = link["b"];
    const bool up = link_up(link);
    for (bool back : {false, true}) {
      const char* dir = back ? "b_to_a" : "a_to_b";
      const Json d = link.contains(dir) ? link[dir] : Json();
      const Json& from = back ? b : a;
      const bool shaped = d.is_object() && d.value("shaped", false);
      const LinkShape shape = shaped ? shape_from_json(d["shape"]) : LinkShape{};
      std::string text = shaped ? shape.str() : "(unshaped)";
      if (text.empty()) text = "-";
      if (shaped && !fq && (shape.delay_ns || shape.jitter_ns)) text += " [no fq: no delay/jitter]";
      const Json c = d.is_object() ? d["counters"] : Json();
      // A dilated lab's smallest bucket can be under a nanosecond of the real fabric.
      const std::string qd = num(c, "packets")
                                 ? "<" + format_time_short(std::max<unsigned long long>(
                                             1, num(c, "queue_delay_p99_ns")))
                                 : "-";
      // The port with its node: a switch's ports are named after their peers ("h1" on leaf1),
      // which alone would read as the peer's address.
      auto end_text = [](const Json& e) {
        return e.value("node", "") + "/" + e.value("ifname", "") + " " + e.value("address", "");
      };
      std::string paused;
      if (pfc) {
        char buf[40];
        const unsigned long long ns = num(c, "pause_ns");
        std::snprintf(buf, sizeof buf, " %10s %7llu", ns ? format_time_short(ns).c_str() : "0",
                      num(c, "pause_events"));
        paused = buf;
      }
      if (num(c, "drop_watchdog"))
        text += " [PFC watchdog dropped " + std::to_string(num(c, "drop_watchdog")) + "]";
      std::printf("%-22s %-5s %-25s %-25s %-6s %10llu %8llu %8llu %8llu %9s%s  %s\n",
                  back ? "" : link.value("name", "").c_str(), back ? "" : (up ? "up" : "DOWN"),
                  back ? "" : end_text(a).c_str(), back ? "" : end_text(b).c_str(),
                  back ? "b>a" : "a>b", shaped ? num(c, "packets") : num(from, "tx_packets"),
                  drops_of(c), num(c, "drop_queue"), num(c, "ce_marks"), qd.c_str(), paused.c_str(),
                  text.c_str());
    }
  }
}

// A lab bigger than this (nodes or links) prints a summary unless rows are asked for.
constexpr size_t kFullTable = 64;

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
    const bool up = link_up(l);
    c["up"] = c["up"].get<int>() + up;
    if (!up) down.push_back(l.value("name", ""));
    for (const auto& [dir, from] : {std::pair{"a_to_b", "a"}, std::pair{"b_to_a", "b"}}) {
      const Json d = l.contains(dir) ? l[dir] : Json();
      const bool shaped = d.is_object() && d.value("shaped", false);
      const Json counters = d.is_object() ? d["counters"] : Json();
      const unsigned long long drops = drops_of(counters);
      auto add = [&](const char* key, unsigned long long v) {
        c[key] = c[key].get<unsigned long long>() + v;
      };
      c["shaped_directions"] = c["shaped_directions"].get<int>() + shaped;
      add("packets", shaped ? num(counters, "packets") : num(l[from], "tx_packets"));
      add("drops", drops);
      add("queue_drops", num(counters, "drop_queue"));
      add("ce_marks", num(counters, "ce_marks"));
      add("pause_ns", num(counters, "pause_ns"));
      if (const unsigned long long all = drops + num(counters, "drop_queue"))
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

void print_summary(const Json& j) {
  const Json& s = j["summary"];
  std::printf("\n%-10s %-7s %7s %8s  %s\n", "TIER", "ROLE", "NODES", "PRESENT", "NAMES");
  for (const Json& t : s["tiers"])
    std::printf("%-10s %-7s %7d %8d  %s .. %s\n", t.value("name", "").c_str(),
                t.value("role", "").c_str(), t.value("nodes", 0), t.value("present", 0),
                t.value("first", "").c_str(), t.value("last", "").c_str());
  std::printf("\n%-12s %7s %7s %7s %14s %10s %10s %10s %10s\n", "LINKS", "COUNT", "UP", "SHAPED",
              "PACKETS", "DROPS", "QDROPS", "CE", "PAUSED");
  for (const Json& c : s["link_classes"]) {
    const unsigned long long pause = num(c, "pause_ns");
    std::printf("%-12s %7d %7d %7d %14llu %10llu %10llu %10llu %10s\n",
                c.value("class", "").c_str(), c.value("links", 0), c.value("up", 0),
                c.value("shaped_directions", 0), num(c, "packets"), num(c, "drops"),
                num(c, "queue_drops"), num(c, "ce_marks"),
                pause ? format_time_short(pause).c_str() : "0");
  }
  const Json& down = s["links_down"];
  if (!down.empty()) {
    std::string list;
    for (size_t i = 0; i < down.size() && i < 20; ++i)
      list += (i ? ", " : "") + down[i].get<std::string>();
    if (down.size() > 20) list += ", ... (" + std::to_string(down.size() - 20) + " more)";
    std::printf("\nlinks DOWN: %zu: %s\n", down.size(), list.c_str());
  }
  if (!s["most_drops"].empty()) {
    std::printf("\nmost drops:");
    for (const Json& d : s["most_drops"])
      std::printf(" %s %llu;", d.value("direction", "").c_str(), num(d, "drops"));
    std::printf("\n");
  }
  const Json& r = j["rdma"];
  if (r.value("mode", "off") == "rxe") {
    size_t present = 0;
    for (const Json& d : r["devices"]) present += d.value("present", false);
    std::printf("\nrdma: soft-RoCE (rxe) on %zu of %zu hosts\n", present, r["devices"].size());
  } else {
    std::printf("\nrdma: off (%s)\n", r.value("reason", "").c_str());
  }
  std::printf(
      "\n(a summary of %zu nodes and %zu links: --node NAME|GLOB and --link A:B|GLOB show their "
      "rows, --all every row)\n",
      j["nodes"].size(), j["links"].size());
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

void print_rdma(const Json& j) {
  const Json& r = j["rdma"];
  if (r.value("mode", "off") != "rxe") {
    std::printf("\nrdma: off (%s)\n", r.value("reason", "").c_str());
    return;
  }
  std::printf("\nrdma: soft-RoCE (rxe) on %zu hosts, RoCEv2 GID index 1\n", r["devices"].size());
  std::printf("%-12s %-24s %-8s %-8s %12s %12s  %s\n", "HOST", "DEVICE", "NETDEV", "STATE",
              "SENT_PKTS", "RCVD_PKTS", "GID 1");
  for (const Json& d : r["devices"]) {
    const std::string host = d.value("host", ""), name = d.value("device", "");
    if (!d.value("present", false)) {
      std::printf("%-12s %-24s MISSING\n", host.c_str(), name.c_str());
      continue;
    }
    const Json& hw = d["hw_counters"];
    std::printf("%-12s %-24s %-8s %-8s %12llu %12llu  %s\n", host.c_str(), name.c_str(),
                d.value("netdev", "").c_str(), d.value("state", "").c_str(), num(hw, "sent_pkts"),
                num(hw, "rcvd_pkts"), short_gid(d.value("gid1", "")).c_str());
    // The rest only where something happened: retries, sequence errors, RNR NAKs, ...
    std::string other;
    for (const char* set : {"hw_counters", "counters"})
      for (const auto& [counter, v] : d[set].items())
        if (v.get<uint64_t>() && counter != "sent_pkts" && counter != "rcvd_pkts")
          other += (other.empty() ? "" : ", ") + counter + " " + std::to_string(v.get<uint64_t>());
    if (!other.empty()) std::printf("%-12s %s\n", "", other.c_str());
  }
}

}  // namespace

namespace {

// The lab's line, machines, missing namespaces, link model, time scale and switches: the whole
// lab's, from the summary when `status` added one (the rows may be filtered).
void print_status_header(const Json& j) {
  int hosts = 0, switches = 0;
  size_t links = j["links"].size();
  std::vector<std::string> missing;
  for (const Json& n : j["nodes"]) {
    ++(n.value("role", "") == "host" ? hosts : switches);
    if (!n.value("present", false)) missing.push_back(n.value("name", ""));
  }
  if (j.contains("summary")) {
    hosts = switches = 0;
    for (const Json& t : j["summary"]["tiers"])
      (t.value("role", "") == "host" ? hosts : switches) += t.value("nodes", 0);
    links = 0;
    for (const Json& c : j["summary"]["link_classes"]) links += c.value("links", 0);
  }
  const bool across = j.contains("machines");
  std::printf("lab %s: %s; %d hosts, %d switches, %zu links; addresses %s; scenario %s\n",
              j.value("lab", "").c_str(), j.value("state", "").c_str(), hosts, switches, links,
              j.value("pool", "").c_str(), j.value("scenario", "").c_str());
  if (across) {
    std::string list;
    for (const Json& m : j["machines"]) list += (list.empty() ? "" : ", ") + m.get<std::string>();
    std::printf("machines: %s (cut links are VXLAN tunnels between them)\n", list.c_str());
  }
  if (!missing.empty())
    std::printf("  missing namespaces: %zu (first: %s)\n", missing.size(), missing.front().c_str());
  std::printf("link model: %s\n", mode_text(j).c_str());
  const double factor = j.value("time_scale", 1.0);
  if (factor != 1) {
    const std::string n = format_factor(factor);
    std::printf(
        "time: dilated x%s (%s): shapes and queue delays below are the real fabric's; the ports "
        "run at rate / %s with delays x %s\n",
        n.c_str(), j.value("time_scale_why", "").c_str(), n.c_str(), n.c_str());
  }
  if (const Json& sw = j["switches"]; sw.value("kind", "") == "ovs")
    std::printf("switches: Open vSwitch bridges in %s, %s; flows in %s/SWITCH.bundle\n",
                sw.value("namespace", "").c_str(),
                sw.value("datapath", "") == "kernel"
                    ? "kernel datapath"
                    : ("userspace datapath (" + sw.value("reason", "") + ")").c_str(),
                sw.value("run_dir", "").c_str());
}

}  // namespace

void print_status_json(const Json& j) {
  print_status_header(j);
  const bool across = j.contains("machines");
  if (across)
    std::printf("\n%-12s %-7s %-16s %-10s %s\n", "NODE", "ROLE", "ADDRESS", "MACHINE", "NAMESPACE");
  else
    std::printf("\n%-12s %-7s %-16s %s\n", "NODE", "ROLE", "ADDRESS", "NAMESPACE");
  for (const Json& n : j["nodes"]) {
    const bool host = n.value("role", "") == "host";
    const std::string ip = n.value(host ? "address" : "loopback", "");
    if (across)
      std::printf("%-12s %-7s %-16s %-10s %s\n", n.value("name", "").c_str(),
                  host ? "host" : "switch", ip.c_str(), n.value("machine", "").c_str(),
                  n.value("namespace", "").c_str());
    else
      std::printf("%-12s %-7s %-16s %s\n", n.value("name", "").c_str(), host ? "host" : "switch",
                  ip.c_str(), n.value("namespace", "").c_str());
  }
  print_links(j);
  print_rdma(j);
}

void show_status(Json j, bool json, const StatusView& view) {
  j["summary"] = status_summary(j);  // of the whole lab, whatever rows are shown
  const bool big = j["nodes"].size() > kFullTable || j["links"].size() > kFullTable;
  if (view.filtered()) {
    Json summary = std::move(j["summary"]);
    j = filter_status(j, view);
    j["summary"] = std::move(summary);
  }
  if (json) {
    std::printf("%s\n", json_text(j).c_str());
    return;
  }
  if (big && !view.filtered() && !view.all) {
    print_status_header(j);
    print_summary(j);
    return;
  }
  print_status_json(j);
}

namespace {

int list_labs_status(const LabPaths& base, bool json) {
  const Json list = session::lab_list_json(base);
  if (json) {
    std::printf("%s\n", json_text(list).c_str());
    return kExitOk;
  }
  for (const Json& l : list["labs"])
    std::printf("%-12s %-20s %s\n", l.value("lab", "").c_str(), l.value("state", "").c_str(),
                l.value("scenario", "").c_str());
  return kExitOk;
}

}  // namespace

int cmd_status(const std::string& lab, bool json, const StatusView& view, const LabPaths& base) {
  if (lab.empty()) return list_labs_status(base, json);
  if (!require_root("status")) return kExitNeedsRoot;
  LabPaths paths = base;
  paths.lab = lab;
  auto status = read_lab_status(paths);
  if (!status) return lab_error(status.error());
  show_status(session::status_json(*status), json, view);
  return status->missing.empty() ? kExitOk : kExitFailed;
}

void add_status_command(CLI::App& app, CommandLine& cl) {
  struct Args {
    std::string lab, on;
    bool json = false;
    StatusView view;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("status", "Nodes, links, addresses and counters of a lab");
  cmd->add_option("lab", a->lab, "Lab name (none: list labs)");
  cmd->add_flag("--json", a->json, "The result as one JSON object (docs/json.md)");
  cmd->add_option("--node", a->view.nodes,
                  "Only this node and its links (a name or a glob: 'leaf1*'; repeatable)");
  cmd->add_option("--link", a->view.links, "Only this link (a:b or a glob: 'leaf1:*'; repeatable)");
  cmd->add_flag("--all", a->view.all,
                "Every node and link, also of a big lab (more than 64 of either: by default a "
                "summary by tier)");
  cmd->add_option("--on", a->on, kOnHelp);
  cmd->callback([a, &cl] {
    cl.exit = a->on.empty() || a->lab.empty()
                  ? cmd_status(a->lab, a->json, a->view, cl.base)
                  : cluster_status(a->lab, a->json, a->view, a->on, cl.base);
  });
}

}  // namespace fabemu::cli
