// `status`: a lab's state (runtime/lab_status) rendered as tables or as one JSON object.
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
  if (j.contains("ecn")) {
    const Json& r = j["ecn"];
    s.ecn = RedEcn{r.at("kmin_bytes").get<uint64_t>(), r.at("kmax_bytes").get<uint64_t>(),
                   r.at("pmax").get<double>()};
  }
  if (j.contains("pfc")) {
    const Json& p = j["pfc"];
    s.pfc = PfcShape{p.at("xoff_bytes").get<uint64_t>(), p.at("xon_bytes").get<uint64_t>(),
                     p.value("watchdog_ns", uint64_t{0})};
  }
  return s;
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
    const bool up = session::status_link_up(link);
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
      const std::string qd = session::json_count(c, "packets")
                                 ? "<" + format_time_short(std::max<unsigned long long>(
                                             1, session::json_count(c, "queue_delay_p99_ns")))
                                 : "-";
      // The port with its node: a switch's ports are named after their peers ("h1" on leaf1),
      // which alone would read as the peer's address.
      auto end_text = [](const Json& e) {
        return e.value("node", "") + "/" + e.value("ifname", "") + " " + e.value("address", "");
      };
      std::string paused;
      if (pfc) {
        char buf[40];
        const unsigned long long ns = session::json_count(c, "pause_ns");
        std::snprintf(buf, sizeof buf, " %10s %7llu", ns ? format_time_short(ns).c_str() : "0",
                      session::json_count(c, "pause_events"));
        paused = buf;
      }
      if (session::json_count(c, "drop_watchdog"))
        text += " [PFC watchdog dropped " +
                std::to_string(session::json_count(c, "drop_watchdog")) + "]";
      std::printf(
          "%-22s %-5s %-25s %-25s %-6s %10llu %8llu %8llu %8llu %9s%s  %s\n",
          back ? "" : link.value("name", "").c_str(), back ? "" : (up ? "up" : "DOWN"),
          back ? "" : end_text(a).c_str(), back ? "" : end_text(b).c_str(), back ? "b>a" : "a>b",
          shaped ? session::json_count(c, "packets") : session::json_count(from, "tx_packets"),
          session::status_drops(c), session::json_count(c, "drop_queue"),
          session::json_count(c, "ce_marks"), qd.c_str(), paused.c_str(), text.c_str());
    }
  }
}

// The busiest ECMP groups since the lab came up: each next hop's bytes, the imbalance.
void print_groups(const Json& j) {
  if (!j.contains("ecmp_groups") || j["ecmp_groups"].empty()) return;
  const Json& groups = j["ecmp_groups"];
  std::printf("\nECMP groups since up, busiest first (max/mean 1 and Jain 1: even):\n");
  std::printf("%-12s %6s %12s %9s %6s  %s\n", "SWITCH", "ROUTES", "MBYTES", "MAX/MEAN", "JAIN",
              "NEXT HOPS (MBYTES)");
  for (size_t k = 0; k < groups.size() && k < 8; ++k) {
    const Json& g = groups[k];
    std::string members;
    for (const Json& x : g["members"])
      members +=
          printf_string("%s%s %.2f", members.empty() ? "" : ", ", x.value("direction", "").c_str(),
                        double(session::json_count(x, "bytes")) / 1e6);
    std::printf("%-12s %6d %12.2f %9.2f %6.3f  %s\n", g.value("switch", "").c_str(),
                g.value("routes", 0), double(session::json_count(g, "bytes")) / 1e6,
                g.value("max_over_mean", 0.0), g.value("jain", 0.0), members.c_str());
  }
  if (groups.size() > 8) std::printf("(%zu groups in all: --json)\n", groups.size());
}

// A lab bigger than this (nodes or links) prints a summary unless rows are asked for.
constexpr size_t kFullTable = 64;

void print_buffers(const Json& j);

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
    const unsigned long long pause = session::json_count(c, "pause_ns");
    std::printf("%-12s %7d %7d %7d %14llu %10llu %10llu %10llu %10s\n",
                c.value("class", "").c_str(), c.value("links", 0), c.value("up", 0),
                c.value("shaped_directions", 0), session::json_count(c, "packets"),
                session::json_count(c, "drops"), session::json_count(c, "queue_drops"),
                session::json_count(c, "ce_marks"), pause ? format_time_short(pause).c_str() : "0");
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
      std::printf(" %s %llu;", d.value("direction", "").c_str(), session::json_count(d, "drops"));
    std::printf("\n");
  }
  print_groups(j);
  print_buffers(j);
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
                d.value("netdev", "").c_str(), d.value("state", "").c_str(),
                session::json_count(hw, "sent_pkts"), session::json_count(hw, "rcvd_pkts"),
                short_gid(d.value("gid1", "")).c_str());
    // The rest only where something happened: retries, sequence errors, RNR NAKs, ...
    std::string other;
    for (const char* set : {"hw_counters", "counters"})
      for (const auto& [counter, v] : d[set].items())
        if (v.get<uint64_t>() && counter != "sent_pkts" && counter != "rcvd_pkts")
          other += (other.empty() ? "" : ", ") + counter + " " + std::to_string(v.get<uint64_t>());
    if (!other.empty()) std::printf("%-12s %s\n", "", other.c_str());
    // DCQCN (rdma: {cc: dcqcn}): the NIC's CNPs and each QP's rate now.
    if (d.contains("dcqcn")) {
      const Json& dc = d["dcqcn"];
      std::string qps;
      for (const Json& q : dc["qps"])
        qps += printf_string("%s%s/%u %s", qps.empty() ? "" : ", ", q.value("peer", "").c_str(),
                             q.value("qpn", 0u),
                             format_rate(session::json_count(q, "rate_bps")).c_str());
      std::printf("%-12s dcqcn: CNPs sent %llu, received %llu; QPs: %s\n", "",
                  session::json_count(dc, "cnps_sent"), session::json_count(dc, "cnps_received"),
                  qps.empty() ? "none yet" : qps.c_str());
    }
  }
}

// Switches' shared buffers (switches: {buffer, alpha}): occupancy now and its peak.
void print_buffers(const Json& j) {
  if (!j.contains("switch_buffers") || j["switch_buffers"].empty()) return;
  std::printf("\nshared buffers (a port holds at most alpha x the free buffer):\n");
  std::printf("%-12s %10s %6s %10s %10s\n", "SWITCH", "BUFFER", "ALPHA", "USED", "PEAK");
  for (const Json& b : j["switch_buffers"])
    std::printf("%-12s %10s %6.3g %10s %10s\n", b.value("switch", "").c_str(),
                format_size(session::json_count(b, "bytes")).c_str(), b.value("alpha", 1.0),
                format_size(session::json_count(b, "used_bytes")).c_str(),
                format_size(session::json_count(b, "peak_bytes")).c_str());
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
  print_groups(j);
  print_buffers(j);
  print_rdma(j);
}

void show_status(Json j, bool json, const StatusView& view) {
  const bool big = j["nodes"].size() > kFullTable || j["links"].size() > kFullTable;
  j = session::status_view(std::move(j), view);
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

int cmd_status(const std::string& lab, bool json, const StatusView& view, const std::string& on,
               const LabPaths& base) {
  if (lab.empty()) return list_labs_status(base, json);
  auto status = session::lab_status(lab, on, base);
  if (!status) return report_error(status.error());
  const bool up = status->value("state", "") == "up";
  show_status(std::move(*status), json, view);
  return up ? kExitOk : kExitFailed;
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
  cmd->callback([a, &cl] { cl.exit = cmd_status(a->lab, a->json, a->view, a->on, cl.base); });
}

}  // namespace fabemu::cli
