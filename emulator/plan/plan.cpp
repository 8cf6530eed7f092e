// Planner: turns the lab model into ordered actions and the journal of what they leave behind.
#include "plan/plan.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "plan/frr.h"
#include "plan/partition.h"
#include "plan/switches.h"
#include "util/json.h"
#include "util/prng.h"
#include "util/units.h"

namespace fabemu {

namespace {

// A switch's ECMP hash seed: drawn from the scenario's, never 0 (the kernel's own random one).
uint32_t ecmp_seed_of(uint64_t scenario_seed, const std::string& node) {
  const uint32_t v = static_cast<uint32_t>(link_seed(scenario_seed, "ecmp " + node) >> 32);
  return v ? v : 1;
}

void add_sysctls(Plan& plan, const std::string& ns, const Node& node, const Scenario& s,
                 const PlanOptions& options, bool forwards) {
  const FabricSpec& fabric = s.fabric;
  auto set = [&](std::string key, std::string value, bool optional = false) {
    plan.actions.push_back(SetSysctl{ns, std::move(key), std::move(value), optional});
  };
  // Without RPS a veth delivers on the sending CPU's backlog, so one flow sent from two CPUs
  // (the process and the softirq that handles its ACKs) arrives reordered: with one packet per
  // skb TCP then retransmits spuriously and a 12 Gbit/s veth carries 0.25. RPS steers each flow
  // to one CPU. Per namespace, before its ports exist (kernels >= 6.3; older ones skip it).
  if (!options.rps_mask.empty()) set("net/core/rps_default_mask", options.rps_mask, true);
  // IPv4-only fabric: no IPv6 link-local addresses, DAD or MLD chatter on every port. The
  // ports are made after this; only loopback (::1) predates it. ("all" would take the RTNL
  // lock, which the other threads making namespaces hold often.)
  set("net/ipv6/conf/default/disable_ipv6", "1", true);
  // Multi-homed hosts (rail-optimized) receive on one NIC for an address of another.
  set("net/ipv4/conf/all/rp_filter", "0");
  set("net/ipv4/conf/default/rp_filter", "0");
  if (node.role == Role::Host && !s.hosts.tcp_congestion.empty())
    set("net/ipv4/tcp_congestion_control", s.hosts.tcp_congestion);
  if (node.role == Role::Host && s.hosts.tcp_ecn)
    set("net/ipv4/tcp_ecn", *s.hosts.tcp_ecn ? "1" : "0");
  if (node.role == Role::Switch && forwards) {
    set("net/ipv4/ip_forward", "1");
    // Per namespace and 0 (L3) in a new one: without this every flow between two hosts
    // takes one path whatever its ports.
    // With ecmp_seeds each switch hashes the headers with a seed of its own, as real switches
    // do, so that the tiers of a fat-tree choose apart. Policy 1 would take a flow hash the skb
    // already has (the sending socket's, the same at every hop); 3 always hashes these fields:
    // addresses, protocol and ports (the sysctl's 0x37).
    const bool l4 = fabric.ecmp_hash != EcmpHash::L3;
    set("net/ipv4/fib_multipath_hash_policy", !l4 ? "0" : options.ecmp_seeds ? "3" : "1");
    if (options.ecmp_seeds) {
      if (l4) set("net/ipv4/fib_multipath_hash_fields", "55");
      set("net/ipv4/fib_multipath_hash_seed", std::to_string(ecmp_seed_of(s.seed, node.name)));
    }
    // traceroute across the fabric should not look lossy.
    set("net/ipv4/icmp_ratelimit", "0");
  }
}

bool any_shape(const Topology& t) {
  for (const Link& l : t.links)
    if (!l.a_to_b.empty() || !l.b_to_a.empty()) return true;
  return false;
}

// With fq holding packets for the emulated delay, a socket's bytes "in flight on the wire" sit
// in its host's qdisc and count against TCP Small Queues: at the default 4 MiB a 10 ms link
// would cap one flow at 3.4 Gbit/s. Room for twice the host's largest bandwidth-delay product.
std::optional<uint64_t> tsq_bytes_for(const Topology& t, int node) {
  double need = 0;
  for (int l : t.links_of(node)) {
    const LinkShape& out = t.links[l].out_of(node);
    const double hold_s = 1e-9 * double(out.delay_ns.value_or(0) + 2 * out.jitter_ns.value_or(0));
    const double bps = out.rate_bps && *out.rate_bps ? double(*out.rate_bps) : 100e9;
    need = std::max(need, 2 * bps / 8 * hold_s);
  }
  constexpr double kDefault = 4 << 20, kMax = 1ULL << 30;
  if (need <= kDefault) return std::nullopt;
  return static_cast<uint64_t>(std::min(need, kMax));
}

}  // namespace

std::optional<uint32_t> host_rto_min_ms(const LabModel& m) {
  // A dilated lab dilates TCP's floor too, from the real hosts' (the scenario's, else Linux's
  // 200ms); the kernel never waits longer than 120 s.
  const auto real = m.scenario.hosts.tcp_rto_min_ns;
  if (!real && !m.time_scale.dilated()) return std::nullopt;
  const uint64_t wall_ns = m.time_scale.wall_ns(real.value_or(kLinuxRtoMinNs));
  return static_cast<uint32_t>(std::clamp<uint64_t>(wall_ns / 1'000'000, 1, kMaxRtoMs));
}

std::string cpu_mask(int cpus) {
  std::string out;
  for (int hi = ((cpus - 1) / 32) * 32; hi >= 0; hi -= 32) {
    const int bits = std::min(32, cpus - hi);
    const uint32_t group = bits == 32 ? 0xffffffffu : (1u << bits) - 1;
    char buf[16];
    std::snprintf(buf, sizeof buf, out.empty() ? "%x" : "%08x", group);
    out += (out.empty() ? "" : ",") + std::string(buf);
  }
  return out;
}

std::string host_cgroup(const LabPaths& paths, const std::string& host) {
  return std::string(kPrefix) + "/" + paths.lab + "/" + host;
}

namespace {

// PFC's queue mode: the scenario asks for it and the ports have departure times to honour.
bool pfc_queue_mode(const LabModel& m, const PlanOptions& options) {
  const auto& l = m.scenario.fabric.lossless;
  return options.fq && l && l->hold_queue;
}

// The name LabPaths knows the node's namespace by: its own, or the OVS namespace's.
std::string namespace_owner(const LabModel& m, int node) {
  if (!switches_of(m).own_namespaces() && m.topo.nodes[node].role == Role::Switch)
    return kOvsNamespaceNode;
  return m.topo.nodes[node].name;
}

}  // namespace

std::string pfc_qdisc_kind(const std::string& lab) {
  // 13 hex digits keep the kind within tc's 15 characters.
  char buf[16];
  std::snprintf(buf, sizeof buf, "fp%013llx",
                static_cast<unsigned long long>(fnv1a(lab) & 0xfffffffffffffULL));
  return buf;
}

std::string node_ns(const LabModel& m, const LabPaths& paths, int node) {
  return paths.ns_name(namespace_owner(m, node));
}

std::string node_netns_path(const LabModel& m, const LabPaths& paths, int node) {
  return paths.netns_pin(namespace_owner(m, node));
}

DcqcnParams dcqcn_params(const DcqcnSpec& d, uint64_t wall_line_bps, const TimeScale& t) {
  DcqcnParams p;
  p.line_bps = wall_line_bps;
  const double real_line = t.real_bps(double(wall_line_bps));
  auto wall_rate = [&](double real_bps) {
    return std::max<uint64_t>(uint64_t(std::llround(real_bps / t.factor)), 1);
  };
  p.ai_bps = d.ai_bps ? t.wall_bps(*d.ai_bps) : wall_rate(5e6 * real_line / 25e9);
  p.hai_bps = d.hai_bps ? t.wall_bps(*d.hai_bps) : wall_rate(50e6 * real_line / 25e9);
  p.min_bps = t.wall_bps(d.min_rate_bps);
  p.alpha_ns = t.wall_ns(d.alpha_interval_ns);
  p.decrease_ns = t.wall_ns(d.decrease_interval_ns);
  p.rp_timer_ns = t.wall_ns(d.rp_timer_ns);
  p.cnp_interval_ns = t.wall_ns(d.cnp_interval_ns);
  p.g = d.g;
  p.fast_recovery = d.fast_recovery;
  p.clamp_target = d.clamp_target;
  p.byte_counter = d.byte_counter;
  p.initial_alpha = d.initial_alpha;
  return p;
}

std::optional<SharedBufferParams> shared_buffer_of(const LabModel& m, int node) {
  const Topology& t = m.topo;
  const Node& n = t.nodes[node];
  if (n.role != Role::Switch) return std::nullopt;
  const SwitchBuffer b = m.scenario.switch_buffers.of(n.name, n.tier);
  if (!b.bytes) return std::nullopt;
  // The slots come from the scenario's shapes, not live ones: every port of the switch counts
  // in the same slots whatever `link set` changes.
  uint64_t slowest = 0;
  for (const Link& l : t.links)
    for (const bool back : {false, true}) {
      if ((back ? l.b : l.a).node != node) continue;
      const uint64_t rate = (back ? l.b_to_a : l.a_to_b).rate_bps.value_or(0);
      if (rate && (!slowest || rate < slowest)) slowest = rate;
    }
  if (!slowest) return std::nullopt;  // no port has a rate: nothing ever queues
  const uint64_t wall = std::max<uint64_t>(m.time_scale.wall_bps(slowest), 1);
  const auto drain_ns = static_cast<uint64_t>(static_cast<long double>(b.bytes) * 8e9L / wall);
  return SharedBufferParams{static_cast<uint32_t>(node + 1), b.bytes, b.alpha,
                            std::max<uint64_t>(drain_ns / 8, 1000)};
}

ShapePort port_of(const LabModel& m, const LabPaths& paths, int link, bool b_to_a,
                  const PlanOptions& options, const LinkShape& shape) {
  const Topology& t = m.topo;
  const LinkEnd& from = b_to_a ? t.links[link].b : t.links[link].a;
  ShapePort p;
  p.ns = node_ns(m, paths, from.node);
  p.ifname = from.ifname;
  p.ifindex = port_ifindex(link, b_to_a);
  p.direction = direction_name(t, link, b_to_a);
  p.seed = link_seed(m.scenario.seed, p.direction);
  // A rate-limited link without a queue limit gets the default one of the real fabric's time,
  // unless its switch shares a buffer among its ports.
  p.buffer = shared_buffer_of(m, from.node);
  LinkShape real = shape;
  // RED is a switch's: a host's NIC does not mark the frames it sends, even while PFC pauses
  // them in its queue (DCQCN's CNPs answer the switches' marks).
  const LinkEnd& to = b_to_a ? t.links[link].a : t.links[link].b;
  if (t.nodes[from.node].role == Role::Host && t.nodes[to.node].role != Role::Host)
    real.ecn.reset();
  if (real.rate_bps.value_or(0) && !real.queue_ns.value_or(0) && !real.queue_bytes.value_or(0) &&
      !p.buffer)
    real.queue_ns = kDefaultQueueNs;
  p.shape = to_wall(real, m.time_scale);
  p.lossless = m.scenario.fabric.lossless_class();
  if (p.shape.pfc && p.shape.pfc->xoff_bytes) p.pfc_peer = port_ifindex(link, !b_to_a);
  if (p.shape.pfc && p.shape.pfc->dynamic())
    p.pfc_buffer = shared_buffer_of(m, (b_to_a ? t.links[link].a : t.links[link].b).node);
  p.policer = !options.fq;
  if (options.fq) p.fq = fq_params_for(p.shape);
  if (pfc_queue_mode(m, options)) {
    p.pfc_qdisc = pfc_qdisc_kind(paths.lab);
    p.fq.reset();
  }
  if (!options.fq && options.htb) p.htb = htb_params_for(p.shape);
  p.gso_max_segs = gso_max_segs_for(m.scenario.fabric);
  p.keep_hash = options.ecmp_seeds;
  if (m.scenario.rdma_cc.cc == RoceCc::Dcqcn && (options.rdma.rxe || m.rdma.rxe) &&
      t.nodes[from.node].role == Role::Host && p.shape.rate_bps.value_or(0))
    p.dcqcn = dcqcn_params(m.scenario.rdma_cc.dcqcn, *p.shape.rate_bps, m.time_scale);
  // A QP that DCQCN cut to its minimum rate holds its send queue's frames in fq until their
  // turn: fq's horizon reaches past the last of a deep send queue (1024 frames), since fq drops
  // departures beyond it and rxe, whose timeout grows with the dilation, would wait for them.
  if (p.dcqcn && p.fq && p.dcqcn->min_bps) {
    constexpr double kSendQueueFrames = 1024;
    const double bits = kSendQueueFrames * 8.0 * (m.scenario.fabric.mtu + 64);
    const double ns = std::min(2 * bits / double(p.dcqcn->min_bps) * 1e9, 4e12);  // fq: u32 us
    p.fq->horizon_ns = std::max<uint64_t>(p.fq->horizon_ns, static_cast<uint64_t>(ns));
  }
  return p;
}

namespace {

// The run dir's one-line records: "WORD" or "WORD reason" (the reason on one line).
std::string format_record(std::string_view word, std::string reason) {
  if (reason.empty()) return std::string(word) + "\n";
  std::replace(reason.begin(), reason.end(), '\n', ' ');
  return std::string(word) + " " + reason + "\n";
}

struct Record {
  std::string word, reason;
};
Record parse_record(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  const size_t space = line.find(' ');
  if (space == std::string::npos) return {line, ""};
  return {line.substr(0, space), line.substr(space + 1)};
}

}  // namespace

std::string_view shaping_mode_name(const PlanOptions& o) {
  return o.fq ? "fq" : o.htb ? "htb" : "policer";
}

constexpr std::string_view kEcmpSeeded = "ecmp seeded";

std::string format_shaping_mode(const PlanOptions& o) {
  return format_record(shaping_mode_name(o), o.fq ? "" : o.no_fq_reason) +
         (o.ecmp_seeds ? std::string(kEcmpSeeded) + "\n" : "");
}

std::string link_model_text(const PlanOptions& mode, int shaped_ports, bool pfc_queue) {
  const std::string on = "link model on " + std::to_string(shaped_ports) + " ports";
  if (mode.fq && pfc_queue)
    return on +
           ": eBPF departure times released by fabemu's PFC qdisc, which holds the lossless "
           "class in the queue while paused (rate, delay, loss, queue, ECN, PFC; jitter never "
           "reorders)";
  if (mode.fq)
    return on + ": eBPF departure times released by fq (rate, delay, jitter, loss, queue, ECN)";
  if (mode.htb)
    return on + ": this kernel has no fq (" + mode.no_fq_reason +
           "), so htb holds each link's rate in a real queue and eBPF adds loss, tail drop and "
           "ECN, but no delay or jitter is added";
  return on + " as a POLICER: this kernel has no fq (" + mode.no_fq_reason +
         "), so rate, loss, queue and ECN hold but no delay or jitter is added; TCP through a "
         "link policed below what the CPU carries gets far less than its rate (nothing paces "
         "it)";
}

Result<PlanOptions> parse_shaping_mode(const std::string& text, const std::string& path) {
  const Record r = parse_record(text);
  PlanOptions o;
  o.ecmp_seeds = text.find("\n" + std::string(kEcmpSeeded) + "\n") != std::string::npos;
  if (r.word == "fq") return o;
  if (r.word != "htb" && r.word != "policer")
    return make_error(path + ": not a shaping mode: " + text, EINVAL);
  o.fq = false;
  o.htb = r.word == "htb";
  o.no_fq_reason = r.reason;
  return o;
}

std::string format_time_scale(const LabModel& m) {
  return format_record(format_factor(m.time_scale.factor), m.time_scale_why);
}

Result<void> parse_time_scale(const std::string& text, const std::string& path, LabModel& m) {
  const Record r = parse_record(text);
  char* end = nullptr;
  const double f = std::strtod(r.word.c_str(), &end);
  if (r.word.empty() || *end != '\0' || !(f >= 1 && f <= kMaxTimeScale))
    return make_error(path + ": not a time scale: " + text, EINVAL);
  m.time_scale.factor = f;
  m.time_scale_why = r.reason;
  return ok();
}

std::string format_part(const MachinePart& part) {
  Json underlay = Json::array();
  for (const Ipv4& a : part.underlay) underlay.push_back(a.str());
  return json_text({{"index", part.index},
                    {"machines", part.machines},
                    {"underlay", underlay},
                    {"underlay_dev", part.underlay_dev},
                    {"shared_dir", part.shared_dir}}) +
         "\n";
}

Result<void> parse_part(const std::string& text, const std::string& path, LabModel& m) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&] { return make_error(path + ": not a machine part: " + text, EINVAL); };
  if (!j.is_object() || !j.contains("machines") || !j.contains("underlay")) return bad();
  MachinePart part;
  try {
    part.index = j.at("index").get<int>();
    part.machines = j.at("machines").get<std::vector<std::string>>();
    for (const auto& a : j.at("underlay")) {
      auto ip = parse_ipv4(a.get<std::string>());
      if (!ip) return bad();
      part.underlay.push_back(*ip);
    }
    part.underlay_dev = j.value("underlay_dev", "");
    part.shared_dir = j.value("shared_dir", "");
  } catch (const Json::exception&) {
    return bad();
  }
  if (part.machines.size() != part.underlay.size() || part.index < 0 ||
      part.index >= static_cast<int>(part.machines.size()))
    return bad();
  // The same placement every machine computed: it follows from the model alone.
  auto placement = partition(m, static_cast<int>(part.machines.size()));
  if (!placement) return placement.error().context(path);
  part.placement = std::move(*placement);
  m.part = std::move(part);
  return ok();
}

std::string format_rdma_choice(const RdmaChoice& c) {
  return c.rxe ? format_record("rxe", "") : format_record("off", c.why_not);
}

Result<RdmaChoice> parse_rdma_choice(const std::string& text, const std::string& path) {
  const Record r = parse_record(text);
  if (r.word != "rxe" && r.word != "off")
    return make_error(path + ": not an rdma choice: " + text, EINVAL);
  return RdmaChoice{r.word == "rxe", r.reason};
}

std::string format_ovs_choice(const OvsChoice& c) {
  return c.kernel ? format_record("kernel", "") : format_record("userspace", c.why_userspace);
}

Result<OvsChoice> parse_ovs_choice(const std::string& text, const std::string& path) {
  const Record r = parse_record(text);
  if (r.word != "kernel" && r.word != "userspace")
    return make_error(path + ": not an OVS datapath: " + text, EINVAL);
  return OvsChoice{r.word == "kernel", r.reason};
}

bool static_neighbours(size_t ports, int limit) {
  return limit > 0 && ports > static_cast<size_t>(limit) / 2;
}

std::vector<std::string> needs_fq(const LabModel& m) {
  std::vector<std::string> out;
  const Topology& t = m.topo;
  for (size_t i = 0; i < t.links.size(); ++i)
    for (bool back : {false, true}) {
      const LinkShape& s = back ? t.links[i].b_to_a : t.links[i].a_to_b;
      std::string what;
      if (s.delay_ns.value_or(0)) what += " delay " + format_time_ns(*s.delay_ns);
      if (s.jitter_ns.value_or(0)) what += " jitter " + format_time_ns(*s.jitter_ns);
      if (s.pfc && s.pfc->xoff_bytes) what += " pfc";
      if (!what.empty()) out.push_back(direction_name(t, static_cast<int>(i), back) + ":" + what);
    }
  return out;
}

// What every phase of make_plan reads: the lab, where it lives, what this machine builds (the
// switches' kinds take it: plan/switches.h).
struct PlanContext {
  const LabModel& m;
  const LabPaths& paths;
  int pool;
  const PlanOptions& options;
  const Switches& switches;   // their kind (plan/switches.h)
  bool local_switch = false;  // this machine builds a switch
  bool shaped = false;        // some link has a shape
  bool neighbours = false;    // peers as permanent neighbours
  bool fixed_macs = false;
  // The OVS namespace: the daemons and every switch port. Named like a node (the topology
  // refuses nodes of that name), set up like a switch that does not forward itself.
  Node ovs_node{kOvsNamespaceNode, Role::Switch};
  std::vector<const Node*> namespaced;  // nodes with a namespace of their own
  // A lab across machines: this machine builds its own nodes, and the ends of cut links.
  bool local(int node) const { return local_node(m, node); }
};

namespace {

using K = JournalEntry::Kind;

// The run dir (journal, scenario copy, pins, /etc overlay, per-host /tmp) goes last.
void plan_run_dir(Plan& plan, const PlanContext& c) {
  const LabPaths& paths = c.paths;
  plan.journal.push_back({K::Mount, paths.run_dir()});
  plan.actions.push_back(MakeDir{paths.run_dir() + "/ns"});
  if (c.options.netns_names) plan.actions.push_back(MakeDir{paths.netns_dir});
  plan.actions.push_back(MakeDir{paths.uts_dir()});
  plan.actions.push_back(MakeDir{paths.tmp_dir()});
  plan.actions.push_back(MakeDir{paths.shared_dir()});
  plan.actions.push_back(MakeDir{paths.etc_dir()});
}

// Each namespace with its sysctls and loopback: independent of the others.
void plan_namespaces(Plan& plan, const PlanContext& c) {
  const LabModel& m = c.m;
  const LabPaths& paths = c.paths;
  const Topology& t = m.topo;
  ParallelRange namespaces{plan.actions.size()};
  for (const Node* np : c.namespaced) {
    const Node& n = *np;
    const std::string ns = paths.ns_name(n.name);
    const bool host = n.role == Role::Host;
    plan.journal.push_back({K::Netns, paths.netns_pin(n.name)});
    if (host) plan.journal.push_back({K::Uts, paths.uts_path(n.name)});
    if (c.options.netns_names) {
      plan.journal.push_back({K::Path, paths.netns_path(n.name)});
      plan.journal.push_back({K::Path, paths.etc_link(n.name)});
    }
    plan.actions.push_back(
        CreateNamespace{ns, paths.netns_pin(n.name), host ? paths.uts_path(n.name) : "", n.name});
    if (c.options.netns_names)
      plan.actions.push_back(MakeSymlink{paths.netns_pin(n.name), paths.netns_path(n.name)});
    add_sysctls(plan, ns, n, m.scenario, c.options, /*forwards=*/&n != &c.ovs_node);
    plan.actions.push_back(SetLinkUp{ns, "lo"});
    ++plan.namespaces;
  }
  if (c.shaped) {
    // Host sockets whose packets wait in their own host's fq for the emulated delay.
    for (int h : t.hosts())
      if (auto tsq = tsq_bytes_for(t, h); tsq && c.options.fq && c.local(h))
        plan.actions.push_back(SetSysctl{paths.ns_name(t.nodes[h].name),
                                         "net/ipv4/tcp_limit_output_bytes", std::to_string(*tsq)});
  }
  namespaces.end = plan.actions.size();
  plan.parallel.push_back(namespaces);
}

// Every link: a veth pair, or this machine's end of a link to another machine as a VXLAN tunnel.
void plan_links(Plan& plan, const PlanContext& c) {
  const LabModel& m = c.m;
  const LabPaths& paths = c.paths;
  const Topology& t = m.topo;
  const int pool = c.pool;
  ParallelRange links{plan.actions.size()};
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Link& l = t.links[i];
    const int id = static_cast<int>(i);
    if (!c.local(l.a.node) || !c.local(l.b.node)) {
      for (bool b_side : {false, true}) {
        const int node = b_side ? l.b.node : l.a.node, peer = b_side ? l.a.node : l.b.node;
        if (!c.local(node) || c.local(peer)) continue;
        const MachinePart& part = *m.part;
        CreateVxlan x{node_ns(m, paths, node),
                      b_side ? l.b.ifname : l.a.ifname,
                      port_ifindex(id, b_side),
                      vxlan_id(pool, id),
                      part.underlay[part.index],
                      part.underlay[part.placement.machine_of[peer]],
                      part.underlay_dev,
                      m.scenario.fabric.mtu,
                      c.shaped ? gso_max_segs_for(m.scenario.fabric) : 0u};
        if (c.fixed_macs) x.mac = port_mac(pool, id, b_side);
        plan.actions.push_back(std::move(x));
        ++plan.tunnels;
      }
      continue;
    }
    CreateVeth v{node_ns(m, paths, l.a.node), l.a.ifname,
                 node_ns(m, paths, l.b.node), l.b.ifname,
                 m.scenario.fabric.mtu,       port_ifindex(id, false),
                 port_ifindex(id, true),      c.shaped ? gso_max_segs_for(m.scenario.fabric) : 0u};
    if (c.fixed_macs) {
      v.mac_a = port_mac(pool, id, false);
      v.mac_b = port_mac(pool, id, true);
    }
    plan.actions.push_back(std::move(v));
    ++plan.veths;
  }
  // A tunnel's UDP socket is made from this machine's namespace in between: in order.
  links.end = plan.actions.size();
  if (plan.tunnels == 0) plan.parallel.push_back(links);
}

// Each node's ports up, addresses and routes: in its own namespace.
void plan_addressing(Plan& plan, const PlanContext& c) {
  const LabModel& m = c.m;
  const Topology& t = m.topo;
  ParallelRange addressing{plan.actions.size()};
  for (size_t id = 0; id < t.nodes.size(); ++id) {
    const Node& n = t.nodes[id];
    const int node = static_cast<int>(id);
    if (!c.local(node)) continue;
    const std::string ns = node_ns(m, c.paths, node);
    for (int l : t.links_of(node))
      if (t.links[l].b.node == node && c.local(t.links[l].a.node))
        plan.actions.push_back(SetLinkUp{ns, t.links[l].b.ifname});
    if (n.role == Role::Switch && !c.switches.kernel_ports()) continue;
    for (int l : t.links_of(node)) {
      plan.actions.push_back(AddAddress{ns, t.links[l].end(node).ifname,
                                        Prefix{m.addresses.address_of(t, l, node), 31}});
      if (!c.neighbours) continue;
      const int peer = t.links[l].peer(node).node;
      plan.actions.push_back(AddNeighbour{ns, t.links[l].end(node).ifname,
                                          m.addresses.address_of(t, l, peer),
                                          port_mac(c.pool, l, t.links[l].b.node == peer)});
    }
    if (m.addresses.loopback[id])
      plan.actions.push_back(AddAddress{ns, "lo", Prefix{*m.addresses.loopback[id], 32}});
    for (const Route& r : m.routes[id]) {
      if (!c.switches.planned_route(m, node, r)) continue;
      AddRoute a{ns, r.dst, {}, r.src, n.role == Role::Host ? host_rto_min_ms(m) : std::nullopt};
      for (const Nexthop& h : r.nexthops)
        a.hops.push_back({h.gateway, t.links[h.link].end(node).ifname});
      plan.actions.push_back(std::move(a));
      ++plan.routes;
    }
  }
  addressing.end = plan.actions.size();
  plan.parallel.push_back(addressing);
}

// OVS switches: the lab's daemons and one bridge per switch, its flows as one bundle.
void plan_ovs(Plan& plan, const PlanContext& c) {
  const LabModel& m = c.m;
  const LabPaths& paths = c.paths;
  const Topology& t = m.topo;
  // Userspace OVS reads frames off packet sockets: both ends of every link to a switch send
  // them finished.
  if (!c.options.ovs.kernel)
    for (const Link& l : t.links)
      for (const LinkEnd* e : {&l.a, &l.b})
        if ((t.nodes[l.a.node].role == Role::Switch || t.nodes[l.b.node].role == Role::Switch) &&
            c.local(e->node))
          plan.actions.push_back(DisableOffloads{node_ns(m, paths, e->node), e->ifname});
  const std::string ns = paths.ns_name(kOvsNamespaceNode);
  plan.actions.push_back(MakeDir{paths.ovs_dir()});
  plan.actions.push_back(WriteFile{paths.ovs_file(), format_ovs_choice(c.options.ovs)});
  plan.actions.push_back(StartOvs{ns, paths.ovs_dir()});
  ConfigureOvs conf{ns, paths.ovs_dir(), c.options.ovs.kernel ? "system" : "netdev", {}};
  for (int sw : t.switches()) {
    if (!c.local(sw)) continue;
    conf.bridges.push_back(
        ovs_bridge(t, m.addresses, m.routes[sw], sw, m.scenario.fabric, m.scenario.seed, c.pool));
    plan.routes += static_cast<int>(m.routes[sw].size());  // as many as a router's
  }
  plan.ovs_bridges = static_cast<int>(conf.bridges.size());
  plan.actions.push_back(std::move(conf));
}

// Soft-RoCE on each host's NIC once it is up with its address (the RoCEv2 GID of index 1
// is that address). The devices' names are global, hence journalled: `down` deletes them
// before the namespaces go. Then the choices later commands read back.
void plan_rdma_and_choices(Plan& plan, const PlanContext& c) {
  const LabModel& m = c.m;
  const LabPaths& paths = c.paths;
  const Topology& t = m.topo;
  if (c.options.rdma.rxe)
    for (int h : t.hosts()) {
      if (!c.local(h)) continue;
      const std::string& name = t.nodes[h].name;
      plan.journal.push_back({K::Rdma, paths.rxe_name(name)});
      plan.actions.push_back(CreateRxe{paths.ns_name(name), host_nic(t, h), paths.rxe_name(name)});
      ++plan.rxe_devices;
    }
  plan.actions.push_back(WriteFile{paths.rdma_file(), format_rdma_choice(c.options.rdma)});
  plan.actions.push_back(WriteFile{paths.time_scale_file(), format_time_scale(m)});
  if (m.part) plan.actions.push_back(WriteFile{paths.part_file(), format_part(*m.part)});
}

// The link model, once every port exists and is up. Its maps outlive this process, pinned
// in bpffs; the program lives as long as some port holds it. A lab that starts unshaped
// loads it at its first use (`link set`, `status`: apply/link_control), which spares its
// `up` the verifier's 0.15-0.2 s; the journal lists the pin dir either way.
void plan_link_model(Plan& plan, const PlanContext& c) {
  const LabModel& m = c.m;
  const LabPaths& paths = c.paths;
  const Topology& t = m.topo;
  plan.journal.push_back({K::Pins, paths.pin_dir()});
  std::vector<BalanceSwitch> balanced = balance_switches(m, paths);
  if (c.shaped || !balanced.empty())
    plan.actions.push_back(
        LoadShaper{paths.bpffs_root, paths.pin_dir(), true,
                   pfc_queue_mode(m, c.options) ? pfc_qdisc_kind(paths.lab) : ""});
  plan.actions.push_back(WriteFile{paths.shaping_file(), format_shaping_mode(c.options)});
  if (c.shaped) {
    for (size_t i = 0; i < t.links.size(); ++i) {
      const Link& l = t.links[i];
      const int id = static_cast<int>(i);
      for (bool back : {false, true}) {
        if (!c.local(back ? l.b.node : l.a.node)) continue;  // the other machine shapes it
        plan.actions.push_back(port_of(m, paths, id, back, c.options, back ? l.b_to_a : l.a_to_b));
        ++plan.shaped_ports;
      }
    }
  }
  // The balancers redirect to ports the link model shapes: after it.
  plan.balanced_switches = static_cast<int>(balanced.size());
  for (auto& b : balanced) plan.actions.push_back(std::move(b));
}

// The lab's /etc/hosts (entered by `fabemu exec`, and by `ip netns exec` through
// /etc/netns/NS), and a /tmp per host.
void plan_etc_and_tmp(Plan& plan, const PlanContext& c) {
  const LabPaths& paths = c.paths;
  plan.actions.push_back(
      WriteFile{paths.etc_dir() + "/hosts", hosts_file(c.m.topo, c.m.addresses, paths.lab)});
  if (c.options.netns_names) plan.actions.push_back(MakeDir{paths.etc_netns_dir});
  for (const Node* n : c.namespaced) {
    if (c.options.netns_names)
      plan.actions.push_back(MakeSymlink{paths.etc_dir(), paths.etc_link(n->name)});
    if (n->role == Role::Host) plan.actions.push_back(MakeDir{paths.host_tmp(n->name)});
  }
}

// routing: bgp: FRR on every router once its ports are shaped (BGP and BFD cross the link
// model like any traffic), then `up` waits for each FIB to hold the planned routes.
void plan_bgp(Plan& plan, const PlanContext& c) {
  const LabModel& m = c.m;
  const LabPaths& paths = c.paths;
  const Topology& t = m.topo;
  const FrrTimers timers = frr_timers(m);
  for (const BgpRouter& r : m.bgp) {
    if (!c.local(r.node)) continue;
    const std::string& name = t.nodes[r.node].name;
    plan.actions.push_back(MakeDir{paths.frr_etc(name)});
    plan.actions.push_back(MakeDir{paths.frr_run(name)});
    for (const FrrConfig& f : frr_configs(m, r, timers))
      plan.actions.push_back(WriteFile{paths.frr_etc(name) + "/" + f.file, f.text});
    plan.actions.push_back(StartRouter{paths.ns_name(name), name, paths.frr_etc(name),
                                       paths.frr_run(name), frr_daemons(m)});
    ++plan.bgp_routers;
  }
  for (const BgpRouter& r : m.bgp) {
    if (!c.local(r.node)) continue;
    AwaitRoutes a{paths.ns_name(t.nodes[r.node].name), t.nodes[r.node].name, {}};
    for (const Route& route : r.fib) {
      AwaitRoutes::Expected e{route.dst, {}};
      for (const Nexthop& h : route.nexthops) e.gateways.push_back(h.gateway);
      std::sort(e.gateways.begin(), e.gateways.end());
      a.routes.push_back(std::move(e));
    }
    plan.actions.push_back(std::move(a));
  }
}

// cgroups only for limited hosts: a memory cgroup costs the kernel far more than a namespace.
// (A host that a fault slows down gets one too: its quota changes during the run.)
void plan_cgroups(Plan& plan, const PlanContext& c) {
  const LabModel& m = c.m;
  const Topology& t = m.topo;
  bool any_cgroup = false;
  for (int h : t.hosts()) any_cgroup |= host_has_cgroup(m, h) && c.local(h);
  if (!any_cgroup) return;
  const std::string base = std::string(kPrefix) + "/" + c.paths.lab;
  plan.journal.push_back({K::Cgroup, kPrefix});
  plan.journal.push_back({K::Cgroup, base});
  for (int h : t.hosts())
    if (host_has_cgroup(m, h) && c.local(h)) {
      const Node& n = t.nodes[h];
      plan.journal.push_back({K::Cgroup, host_cgroup(c.paths, n.name)});
      plan.actions.push_back(CreateCgroup{host_cgroup(c.paths, n.name), n.limits});
    }
}

// The three kinds of switch.
class RouterSwitches : public Switches {
 public:
  std::string_view name() const override { return "router"; }
  Reroute reroute() const override { return Reroute::Routes; }
};

class OvsSwitches : public Switches {
 public:
  std::string_view name() const override { return "ovs"; }
  bool own_namespaces() const override { return false; }
  bool kernel_ports() const override { return false; }
  void add_switches(Plan& plan, const PlanContext& c) const override {
    if (c.local_switch) plan_ovs(plan, c);
  }
  Reroute reroute() const override { return Reroute::Flows; }
};

class BgpSwitches : public Switches {
 public:
  std::string_view name() const override { return "bgp"; }
  // A BGP router learns its routes to other switches from its peers.
  bool planned_route(const LabModel& m, int node, const Route& r) const override {
    return !bgp_router(m, node) || !via_switches(m.topo, node, r);
  }
  void add_control_plane(Plan& plan, const PlanContext& c) const override { plan_bgp(plan, c); }
  Reroute reroute() const override { return Reroute::Protocol; }
};

}  // namespace

const Switches& switches_of(const LabModel& m) {
  static const RouterSwitches router;
  static const OvsSwitches ovs;
  static const BgpSwitches bgp;
  if (ovs_switches(m)) return ovs;
  return m.bgp.empty() ? static_cast<const Switches&>(router) : bgp;
}

Plan make_plan(const LabModel& m, const LabPaths& paths, int pool, const PlanOptions& options) {
  const Topology& t = m.topo;
  Plan plan;
  plan.lab = paths.lab;
  plan.pool = pool;
  PlanContext c{m, paths, pool, options, switches_of(m)};
  const bool own = c.switches.own_namespaces();
  for (size_t n = 0; n < t.nodes.size(); ++n) {
    if (!c.local(static_cast<int>(n))) continue;
    if (own || t.nodes[n].role != Role::Switch) c.namespaced.push_back(&t.nodes[n]);
    c.local_switch |= t.nodes[n].role == Role::Switch;
  }
  if (!own && c.local_switch) c.namespaced.push_back(&c.ovs_node);
  // Ports with fixed MACs and their peers as permanent neighbours: a big lab would overflow the
  // kernel's one ARP table (OVS switches have fixed MACs anyway and answer ARP in flows). A
  // dilated lab too: ARP's timers are the kernel's wall clock (a reply due within 1 s), and a
  // reply queued behind a congested port's backlog waits that backlog's dilated time (2 MB at
  // 100 Gbit/s x10000: 1.6 s); the neighbour then fails and the kernel silently drops what it
  // queued for it (seen: rxe's ACKs in an 8:1 incast, which left QPs waiting for a dilated
  // retransmission timeout). A real fabric's ARP is answered in microseconds.
  size_t ports = 0;
  for (const Link& l : t.links) ports += c.local(l.a.node) + c.local(l.b.node);
  c.neighbours = c.switches.kernel_ports() &&
                 (static_neighbours(ports, options.neighbour_limit) || m.time_scale.dilated());
  c.fixed_macs = !c.switches.kernel_ports() || c.neighbours;
  c.shaped = any_shape(t);

  plan_run_dir(plan, c);
  plan_namespaces(plan, c);
  plan_links(plan, c);
  plan_addressing(plan, c);
  c.switches.add_switches(plan, c);
  plan_rdma_and_choices(plan, c);
  plan_link_model(plan, c);
  plan_etc_and_tmp(plan, c);
  c.switches.add_control_plane(plan, c);
  plan_cgroups(plan, c);
  return plan;
}

const std::string* namespace_of(const Action& action) {
  return std::visit(
      [](const auto& a) -> const std::string* {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, CreateNamespace> || std::is_same_v<T, SetSysctl> ||
                      std::is_same_v<T, SetLinkUp> || std::is_same_v<T, AddAddress> ||
                      std::is_same_v<T, AddNeighbour> || std::is_same_v<T, AddRoute> ||
                      std::is_same_v<T, CreateVxlan> || std::is_same_v<T, ShapePort> ||
                      std::is_same_v<T, CreateRxe> || std::is_same_v<T, DisableOffloads> ||
                      std::is_same_v<T, StartOvs> || std::is_same_v<T, ConfigureOvs> ||
                      std::is_same_v<T, StartRouter> || std::is_same_v<T, AwaitRoutes> ||
                      std::is_same_v<T, BalanceSwitch>)
          return &a.ns;
        else
          return nullptr;
      },
      action);
}

std::string describe(const Action& action) {
  struct {
    std::string operator()(const CreateNamespace& a) const {
      return "create namespace " + a.ns +
             (a.uts_path.empty() ? "" : " (hostname " + a.hostname + ")");
    }
    std::string operator()(const SetSysctl& a) const {
      return "sysctl " + a.key + "=" + a.value + " in " + a.ns;
    }
    std::string operator()(const SetLinkUp& a) const {
      return "set " + a.ifname + " up in " + a.ns;
    }
    std::string operator()(const CreateVeth& a) const {
      return "create veth " + a.ns_a + "/" + a.if_a + " <-> " + a.ns_b + "/" + a.if_b;
    }
    std::string operator()(const AddAddress& a) const {
      return "add address " + a.addr.str() + " to " + a.ifname + " in " + a.ns;
    }
    std::string operator()(const AddNeighbour& a) const {
      return "add neighbour " + a.addr.str() + " at " + a.mac.str() + " on " + a.ifname + " in " +
             a.ns;
    }
    std::string operator()(const CreateVxlan& a) const {
      return "create vxlan " + a.ifname + " in " + a.ns + " vni " + std::to_string(a.vni) + " " +
             a.local.str() + " -> " + a.remote.str() + " over " + a.underlay_dev;
    }
    std::string operator()(const AddRoute& a) const {
      std::string s = "add route " + a.dst.str() + " in " + a.ns + " via";
      for (const auto& h : a.hops) s += " " + h.gateway.str() + "@" + h.ifname;
      if (a.src) s += " src " + a.src->str();
      if (a.rto_min_ms) s += " rto_min lock " + std::to_string(*a.rto_min_ms) + "ms";
      return s;
    }
    std::string operator()(const WriteFile& a) const { return "write " + a.path; }
    std::string operator()(const MakeDir& a) const { return "mkdir " + a.path; }
    std::string operator()(const MakeSymlink& a) const {
      return "symlink " + a.path + " -> " + a.target;
    }
    std::string operator()(const CreateCgroup& a) const { return "create cgroup " + a.path; }
    std::string operator()(const LoadShaper& a) const {
      return "load the link model, maps pinned in " + a.pin_dir +
             (a.pfc_qdisc.empty() ? "" : "; register PFC qdisc kind " + a.pfc_qdisc);
    }
    std::string operator()(const ShapePort& a) const {
      std::string s = "shape " + a.direction + " at " + a.ifname + " in " + a.ns + ": " +
                      (a.shape.empty() ? "unlimited" : a.shape.str());
      return s + (a.htb ? " (htb + policer, no fq)" : a.policer ? " (policer, no fq)" : " (fq)");
    }
    std::string operator()(const CreateRxe& a) const {
      return "create rxe device " + a.name + " on " + a.netdev + " in " + a.ns;
    }
    std::string operator()(const DisableOffloads& a) const {
      return "turn checksum/segmentation offloads off on " + a.ifname + " in " + a.ns;
    }
    std::string operator()(const StartRouter& a) const {
      std::string s = "start FRR (";
      for (size_t i = 0; i < a.daemons.size(); ++i) s += (i ? ", " : "") + a.daemons[i];
      return s + ") for " + a.node + " in " + a.ns + " (config " + a.etc_dir + ")";
    }
    std::string operator()(const AwaitRoutes& a) const {
      return "wait until " + a.node + "'s FIB holds its " + std::to_string(a.routes.size()) +
             " planned routes (BGP converged)";
    }
    std::string operator()(const BalanceSwitch& a) const {
      std::string s = "balance " + a.node + " in " + a.ns + " at the ingress of " +
                      std::to_string(a.ports.size()) + " ports:";
      for (const auto& g : a.groups)
        s += " group " + std::to_string(g.id) + " " + load_balance_name(g.lb) + " over " +
             std::to_string(g.members.size()) + " members;";
      return s + " " + std::to_string(a.routes.size()) + " routes";
    }
    std::string operator()(const StartOvs& a) const {
      return "start ovsdb-server and ovs-vswitchd in " + a.ns + " (run dir " + a.dir + ")";
    }
    std::string operator()(const ConfigureOvs& a) const {
      size_t ports = 0, flows = 0;
      for (const auto& b : a.bridges) {
        ports += b.ports.size();
        flows += ovs_flow_lines(b).size();
      }
      return "create " + std::to_string(a.bridges.size()) + " OVS bridges (datapath " + a.datapath +
             ", " + std::to_string(ports) + " ports, " + std::to_string(flows) + " flows) in " +
             a.ns;
    }
  } visitor;
  return std::visit(visitor, action);
}

}  // namespace fabemu
