// Loading a scenario: YAML text to a validated Scenario, section by section.
#include "scenario/loader.h"
#include "scenario/load_balance_yaml.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "scenario/link_shape_yaml.h"
#include "scenario/topology_yaml.h"
#include "scenario/workload_yaml.h"
#include "scenario/yaml_field.h"
#include "util/units.h"

namespace fabemu {

bool is_valid_lab_name(std::string_view name) {
  if (name.empty() || name.size() > 12 || name[0] == '-') return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

bool is_valid_node_name(std::string_view name) {
  if (name.empty() || name.size() > 15 || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

namespace detail {
namespace {

// lossless: roce, or {udp_port: 4791, dscp: [26, 46], hold: departure | queue}: the class PFC
// protects, and how its pauses hold it.
FabricSpec::Lossless read_lossless(const Field& f) {
  FabricSpec::Lossless c;
  if (f.is_scalar()) {
    if (f.str() != "roce")
      f.fail("the lossless class is roce (RoCEv2: UDP port 4791) or {udp_port: N, dscp: [...]}");
    c.udp_port = FabricSpec::kRoceV2UdpPort;
    return c;
  }
  f.check_keys({"udp_port", "dscp", "hold"});
  if (auto h = f.find("hold")) c.hold_queue = h->one_of({"departure", "queue"}) == "queue";
  if (auto p = f.find("udp_port")) c.udp_port = static_cast<uint16_t>(p->integer(1, 65535));
  if (auto d = f.find("dscp")) {
    if (!d->is_sequence()) d->fail("a list of DSCP values 0-63, e.g. [26]");
    for (const Field& v : d->items()) c.dscp.push_back(static_cast<int>(v.integer(0, 63)));
  }
  if (!c.udp_port && c.dscp.empty()) {
    if (!f.has("hold")) f.fail("give udp_port, dscp or both (or: lossless: roce)");
    c.udp_port = FabricSpec::kRoceV2UdpPort;  // {hold: queue} alone: RoCEv2
  }
  return c;
}

// fabric.load_balance (scenario/load_balance_yaml.h); modes other than ecmp need router
// switches.
void read_fabric_load_balance(const Field& f, FabricSpec& fabric) {
  LoadBalanceSetting set = read_load_balance(f);
  fabric.load_balance = set.lb;
  fabric.load_balance_overrides = std::move(set.overrides);
  if (fabric.switch_kind != SwitchKind::Router && fabric.ebpf_balancing())
    f.fail(std::string("modes other than ecmp run in fabemu's eBPF balancer on router switches; ") +
           (fabric.switch_kind == SwitchKind::Ovs
                ? "OVS select groups have no flowlet, spray or backlog-aware choice"
                : "a bridge does not route") +
           ": use switch: router");
}

// `fabric.bfd.interval` is the real fabric's; bfdd runs it dilated (x the time scale), and takes
// 10 ms to 60 s of wall clock. A fixed scale is checked here; `auto` when the lab is planned
// (frr_timers_fit).
void check_bfd_interval(const Field& i, uint64_t interval_ns, const TimeScaleSpec& scale) {
  const double factor = scale.automatic ? 1 : scale.factor;
  const double wall_ns = static_cast<double>(interval_ns) * factor;
  if (interval_ns == 0 || interval_ns > 60'000'000'000 ||
      (!scale.automatic && (wall_ns < 10e6 || wall_ns > 60e9))) {
    std::string what = "FRR's BFD sends every 10ms to 60s of wall clock";
    if (factor > 1)
      what += " (at time_scale " + printf_string("%g", factor) + ": " +
              format_time_ns(static_cast<uint64_t>(std::ceil(10e6 / factor))) + " to " +
              format_time_ns(static_cast<uint64_t>(60e9 / factor)) + " of the real fabric)";
    i.fail(what);
  }
}

FabricSpec read_fabric(const Field& f, const TimeScaleSpec& scale) {
  f.check_keys({"switch", "ecmp_hash", "mtu", "ovs_datapath", "lossless", "routing", "bfd", "gso",
                "load_balance"});
  FabricSpec fabric;
  if (auto r = f.find("routing"))
    fabric.routing = r->choice<Routing>({{"static", Routing::Static}, {"bgp", Routing::Bgp}});
  if (auto b = f.find("bfd")) {
    if (fabric.routing != Routing::Bgp) b->fail("only with routing: bgp (BFD runs beside BGP)");
    if (b->is_scalar() && b->str() == "off") {
      fabric.bfd.reset();
    } else {
      if (b->is_scalar()) b->fail("bfd is off or {interval: 100ms, multiplier: 3}");
      b->check_keys({"interval", "multiplier"});
      // FRR's bfdd takes 10 ms to 60 s between packets, a multiplier of 2 to 255.
      if (auto i = b->find("interval")) {
        fabric.bfd->interval_ns = i->parsed(parse_time_ns);
        check_bfd_interval(*i, fabric.bfd->interval_ns, scale);
      }
      if (auto m = b->find("multiplier"))
        fabric.bfd->multiplier = static_cast<uint32_t>(m->integer(2, 255));
    }
  }
  if (auto l = f.find("lossless")) fabric.lossless = read_lossless(*l);
  if (auto s = f.find("switch")) {
    fabric.switch_kind = s->choice<SwitchKind>(
        {{"router", SwitchKind::Router}, {"bridge", SwitchKind::Bridge}, {"ovs", SwitchKind::Ovs}});
  }
  if (auto d = f.find("ovs_datapath")) {
    fabric.ovs_datapath = d->choice<OvsDatapath>({{"auto", OvsDatapath::Auto},
                                                  {"kernel", OvsDatapath::Kernel},
                                                  {"userspace", OvsDatapath::Userspace}});
    if (fabric.switch_kind != SwitchKind::Ovs)
      d->fail("only with switch: ovs (router switches have no OVS datapath)");
  }
  if (auto h = f.find("ecmp_hash")) {
    fabric.ecmp_hash =
        h->choice<EcmpHash>({{"l3", EcmpHash::L3}, {"l4", EcmpHash::L4}, {"qp", EcmpHash::Qp}});
    if (fabric.ecmp_hash == EcmpHash::Qp && fabric.switch_kind != SwitchKind::Router)
      h->fail("qp is hashed by fabemu's eBPF balancer on router switches; use switch: router");
  }
  if (auto lb = f.find("load_balance")) read_fabric_load_balance(*lb, fabric);
  // 576 is the smallest MTU IPv4 guarantees; 65535 the largest a veth takes.
  if (auto m = f.find("mtu")) fabric.mtu = static_cast<uint32_t>(m->integer(576, 65535));
  if (auto g = f.find("gso"); g && !(g->is_scalar() && g->str() == "off")) {
    const uint64_t bytes = g->parsed(parse_size_bytes);
    // A veth takes super-frames up to 64K (without BIG TCP); two frames is the least that is one.
    if (bytes < 2 * uint64_t{fabric.mtu} || bytes > 65536)
      g->fail("off or a size from two frames (2 x mtu: " + std::to_string(2 * fabric.mtu) +
              ") to 64K, e.g. 64K");
    if (fabric.switch_kind == SwitchKind::Ovs)
      g->fail("not with switch: ovs (OVS switches take one frame at a time); use switch: router");
    fabric.gso_bytes = static_cast<uint32_t>(bytes);
    fabric.gso_loc = g->loc();
  }
  if (fabric.routing == Routing::Bgp && fabric.switch_kind != SwitchKind::Router)
    f.find("routing")->fail(
        "routing: bgp runs FRR on router switches (switch: router); OVS and bridge switches "
        "have their routes from the plan");
  return fabric;
}

HostLimits read_limits(const Field& map) {
  HostLimits limits;
  if (auto cpu = map.find("cpu")) {
    limits.cpu = cpu->number();
    if (*limits.cpu <= 0) cpu->fail("cpu must be > 0 (CPUs, e.g. 0.5 or 2)");
  }
  if (auto mem = map.find("memory")) {
    limits.memory_bytes = mem->parsed(parse_size_bytes);
    // Below this nothing starts; "memory: 1024" almost always meant 1024M.
    if (*limits.memory_bytes < (1u << 20)) {
      mem->fail(
          "memory below 1M cannot run a process; sizes are in bytes unless they have a "
          "unit, e.g. 512M or 1G");
    }
  }
  return limits;
}

HostsSpec read_hosts(const Field& f) {
  f.check_keys(
      {"cpu", "memory", "tcp_congestion", "tcp_rto_min", "tcp_ecn", "clock", "tmp", "overrides"});
  HostsSpec hosts;
  hosts.defaults = read_limits(f);
  if (auto clock = f.find("clock"))
    hosts.clock =
        clock->choice<HostClock>({{"wall", HostClock::Wall}, {"fabric", HostClock::Fabric}});
  if (auto tmp = f.find("tmp"))
    hosts.tmp = tmp->choice<HostTmp>({{"private", HostTmp::Private}, {"shared", HostTmp::Shared}});
  if (auto ecn = f.find("tcp_ecn")) hosts.tcp_ecn = ecn->boolean();
  if (auto rto = f.find("tcp_rto_min")) {
    hosts.tcp_rto_min_ns = rto->parsed(parse_time_ns);
    // The kernel keeps it in whole milliseconds, and never waits longer than 120 s.
    if (*hosts.tcp_rto_min_ns < 1'000'000 || *hosts.tcp_rto_min_ns > 120'000'000'000ULL)
      rto->fail("tcp_rto_min must be 1ms..120s (Linux's default is 200ms), e.g. 5ms");
  }
  if (auto cc = f.find("tcp_congestion")) {
    hosts.tcp_congestion = cc->str();
    const bool word = !hosts.tcp_congestion.empty() &&
                      hosts.tcp_congestion.find_first_not_of(
                          "abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
    if (!word)
      cc->fail("'" + hosts.tcp_congestion + "' is not a congestion control name, e.g. cubic");
  }
  auto overrides = f.find("overrides");
  if (!overrides) return hosts;
  std::set<std::string> seen;
  for (const Field& item : overrides->items()) {
    item.check_keys({"host", "cpu", "memory"});
    Field host = item.at("host");
    HostsSpec::Override o{host.str(), read_limits(item), item.loc()};
    if (!is_valid_node_name(o.host)) host.fail("'" + o.host + "' is not a host name, e.g. h1");
    if (!seen.insert(o.host).second) host.fail("host '" + o.host + "' has a second override");
    if (o.limits.empty()) item.fail("sets nothing; give cpu and/or memory");
    hosts.overrides.push_back(std::move(o));
  }
  return hosts;
}

// The draws per frame (loss, damage) need one frame per skb: a GSO super-frame would be lost,
// corrupted or sent twice whole.
void refuse_per_frame_draws(const Field& map, const LinkShape& shape, const FabricSpec& fabric) {
  const char* key = fabric.gso_bytes ? per_frame_draw(shape) : nullptr;
  if (key)
    map.at(key).fail(std::string(key) +
                     " is drawn per frame, and with fabric.gso a super-frame of up to " +
                     std::to_string(fabric.gso_bytes) + " bytes would meet it whole; set gso: off");
}

LinksSpec read_links(const Field& f, const FabricSpec& fabric) {
  const uint32_t mtu = fabric.mtu;
  LinksSpec links;
  // Every key but these two names a link class; the topology model checks that it exists.
  for (const auto& [key, value] : f.entries()) {
    std::string name = key.node().Scalar();
    if (name == "default") {
      links.defaults = read_link_shape_only(value, mtu);
      refuse_per_frame_draws(value, links.defaults, fabric);
    } else if (name != "overrides") {
      links.classes[name] = read_link_shape_only(value, mtu);
      links.class_locs[name] = key.loc();
      refuse_per_frame_draws(value, links.classes[name], fabric);
    }
  }
  auto overrides = f.find("overrides");
  if (!overrides) return links;
  std::set<std::string> seen;
  for (const Field& item : overrides->items()) {
    item.check_keys(link_shape_keys_and({"link"}));
    Field link = item.at("link");
    LinkOverride o{read_link_name(link), read_link_shape(item, mtu), item.loc()};
    refuse_per_frame_draws(item, o.shape, fabric);
    if (!seen.insert(o.link).second) link.fail("link '" + o.link + "' has a second override");
    if (o.shape.empty()) item.fail("sets nothing; give link-shape keys, e.g. {loss: 1%}");
    links.overrides.push_back(std::move(o));
  }
  return links;
}

TimeScaleSpec read_time_scale(const Field& f) {
  TimeScaleSpec t;
  t.loc = f.loc();
  if (f.is_scalar() && f.str() == "auto") {
    t.automatic = true;
    return t;
  }
  if (!f.is_scalar()) f.fail("expected auto or a number >= 1, e.g. 1000");
  t.factor = f.number();
  if (t.factor < 1 || t.factor > 1e6)
    f.fail("time_scale must be auto or a number from 1 (real time) to 1000000, e.g. 1000");
  return t;
}

TelemetrySpec read_telemetry(const Field& f) {
  f.check_keys({"interval"});
  TelemetrySpec t;
  if (auto i = f.find("interval")) {
    t.interval_ns = i->parsed(parse_time_ns);
    if (*t.interval_ns == 0)
      i->fail("interval must be > 0; e.g. 250ms (or 100us of a dilated lab)");
  }
  return t;
}

PlacementSpec read_placement(const Field& f) {
  PlacementSpec p;
  std::set<std::string> seen;
  for (const Field& machine : f.items()) {
    p.machines.emplace_back();
    p.locs.emplace_back();
    for (const Field& node : machine.items()) {
      const std::string name = node.str();
      if (!is_valid_node_name(name)) node.fail("'" + name + "' is not a node name, e.g. leaf1");
      if (!seen.insert(name).second)
        node.fail("node '" + name + "' is placed twice; a node is built on one machine");
      p.machines.back().push_back(name);
      p.locs.back().push_back(node.loc());
    }
  }
  if (p.machines.empty())
    f.fail("empty list; give the nodes of each machine, e.g. [[leaf1, h1, h2], [leaf2, h3, h4]]");
  return p;
}

// An interval of DCQCN's, > 0 and at most a second.
uint64_t read_interval(const Field& f) {
  const uint64_t ns = f.parsed(parse_time_ns);
  if (ns == 0 || ns > 1'000'000'000) f.fail("must be above 0 and at most 1s, e.g. 4us");
  return ns;
}

// g: a fraction in (0, 1], as a number (0.00390625) or "1/256".
// A number, or a fraction like 1/256.
double read_fraction(const Field& f) {
  const std::string text = f.str();
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return f.number();
  char* end = nullptr;
  const double num = std::strtod(text.c_str(), &end);
  const double den = end == text.c_str() + slash ? std::strtod(text.c_str() + slash + 1, &end) : 0;
  if (*end != '\0' || den == 0) f.fail("'" + text + "' is not a fraction like 1/256");
  return num / den;
}

double read_gain(const Field& f) {
  const double g = read_fraction(f);
  if (!(g > 0) || g > 1) f.fail("g must be above 0 and at most 1, e.g. 1/256");
  return g;
}

// rdma.dcqcn: {alpha_interval: 1us, ..., clamp_target: false, byte_counter: off}.
DcqcnSpec read_dcqcn(const Field& f) {
  f.check_keys({"alpha_interval", "decrease_interval", "rp_timer", "cnp_interval", "g", "ai", "hai",
                "min_rate", "fast_recovery", "clamp_target", "byte_counter", "initial_alpha"});
  DcqcnSpec d;
  if (auto v = f.find("alpha_interval")) d.alpha_interval_ns = read_interval(*v);
  if (auto v = f.find("decrease_interval")) d.decrease_interval_ns = read_interval(*v);
  if (auto v = f.find("rp_timer")) d.rp_timer_ns = read_interval(*v);
  if (auto v = f.find("cnp_interval")) d.cnp_interval_ns = read_interval(*v);
  if (auto v = f.find("g")) d.g = read_gain(*v);
  for (auto [key, out] : {std::pair{"ai", &d.ai_bps}, {"hai", &d.hai_bps}})
    if (auto v = f.find(key)) {
      *out = v->parsed(parse_rate);
      if (**out == 0) v->fail("must be above 0, e.g. 20mbit");
    }
  if (auto v = f.find("min_rate")) {
    d.min_rate_bps = v->parsed(parse_rate);
    if (d.min_rate_bps == 0) v->fail("must be above 0, e.g. 1gbit");
  }
  if (auto v = f.find("fast_recovery")) d.fast_recovery = uint32_t(v->integer(0, 1000));
  if (auto v = f.find("clamp_target")) d.clamp_target = v->boolean();
  if (auto v = f.find("byte_counter"); v && !(v->is_scalar() && v->str() == "off")) {
    d.byte_counter = v->parsed(parse_size_bytes);
    if (d.byte_counter == 0) v->fail("must be above 0 (or off), e.g. 32K");
  }
  if (auto v = f.find("initial_alpha")) {
    d.initial_alpha = read_fraction(*v);
    if (!(d.initial_alpha > 0) || d.initial_alpha > 1)
      v->fail("initial_alpha must be above 0 and at most 1, e.g. 1/4");
  }
  return d;
}

// rdma: {enabled: auto|on|off, cc: none|dcqcn, dcqcn: {...}}.
RdmaMode read_rdma(const Field& f, RdmaCcSpec& cc) {
  f.check_keys({"enabled", "cc", "dcqcn"});
  RdmaMode mode = RdmaMode::Auto;
  if (auto enabled = f.find("enabled"))
    mode = enabled->choice<RdmaMode>(
        {{"auto", RdmaMode::Auto}, {"on", RdmaMode::On}, {"off", RdmaMode::Off}});
  if (auto c = f.find("cc")) {
    cc.cc = c->choice<RoceCc>({{"none", RoceCc::None}, {"dcqcn", RoceCc::Dcqcn}});
    cc.loc = c->loc();
    if (cc.cc == RoceCc::Dcqcn && mode == RdmaMode::Off)
      c->fail(
          "dcqcn is RoCE's congestion control, and rdma.enabled is off; use enabled: auto "
          "or on, or cc: none");
  }
  if (auto d = f.find("dcqcn")) {
    if (cc.cc != RoceCc::Dcqcn) d->fail("DCQCN's parameters without cc: dcqcn; add cc: dcqcn");
    cc.dcqcn = read_dcqcn(*d);
  }
  return mode;
}

// A section written as "key:" with nothing after it is the same as leaving it out.
std::optional<Field> section(const Field& root, std::string_view key) {
  auto f = root.find(key);
  if (f && f->is_null()) return std::nullopt;
  return f;
}

// Some link's PFC has xoff: dynamic (explicit topologies' links' own shapes are in the
// topology, checked when it is built).
bool uses_dynamic_xoff(const LinksSpec& l) {
  auto dynamic = [](const LinkShape& s) { return s.pfc && s.pfc->dynamic(); };
  if (dynamic(l.defaults)) return true;
  for (const auto& [cls, shape] : l.classes)
    if (dynamic(shape)) return true;
  for (const auto& o : l.overrides)
    if (dynamic(o.shape)) return true;
  return false;
}

// A switch's shared buffer, in bytes: room for a few frames at least, a buffer at most.
uint64_t read_switch_buffer_bytes(const Field& f, uint32_t mtu) {
  const uint64_t bytes = f.parsed(parse_size_bytes);
  if (bytes < 4ULL * mtu || bytes > (1ULL << 31))
    f.fail("a switch's buffer is " + format_size(4ULL * mtu) +
           " (four frames of fabric.mtu) to 2G, e.g. 32M");
  return bytes;
}

// The dynamic threshold's alpha: a port may hold alpha x the free buffer (1/64 to 64, as
// switches configure it: a power of two, e.g. 1/16, 1, 8).
double read_switch_alpha(const Field& f) {
  const double alpha = read_fraction(f);
  if (!(alpha >= 1.0 / 64) || alpha > 64) f.fail("alpha is 1/64 to 64, e.g. 1 or 1/8");
  return alpha;
}

// switches: {buffer: 32M, alpha: 1, <tier or switch>: {buffer, alpha}, ...}.
SwitchBuffersSpec read_switch_buffers(const Field& f, const FabricSpec& fabric) {
  if (!f.is_map()) f.fail("switches is a map: {buffer: 32M, alpha: 1, spine: {buffer: 64M}}");
  if (fabric.lossless && fabric.lossless->hold_queue)
    f.fail(
        "a shared buffer needs PFC's hold: departure (the queue mode's qdisc keeps its own "
        "buffers)");
  SwitchBuffersSpec out;
  out.loc = f.loc();
  for (const auto& [key, value] : f.entries()) {
    const std::string name = key.str();
    if (name == "buffer") {
      out.defaults.bytes = read_switch_buffer_bytes(value, fabric.mtu);
    } else if (name == "alpha") {
      out.defaults.alpha = read_switch_alpha(value);
    } else {
      if (!value.is_map()) value.fail("a tier's or switch's buffer is {buffer: 64M, alpha: 2}");
      value.check_keys({"buffer", "alpha"});
      SwitchBufferOverride o{name, std::nullopt, std::nullopt, key.loc()};
      if (auto b = value.find("buffer")) o.bytes = read_switch_buffer_bytes(*b, fabric.mtu);
      if (auto a = value.find("alpha")) o.alpha = read_switch_alpha(*a);
      out.overrides.push_back(std::move(o));
    }
  }
  if (!out.any()) f.fail("no switch gets a buffer: give buffer (e.g. buffer: 32M)");
  return out;
}

Scenario read_scenario(const Field& root) {
  if (root.is_null()) root.fail("empty scenario; it needs at least name and topology");
  root.check_keys({"name", "seed", "time_scale", "topology", "fabric", "hosts", "links", "rdma",
                   "switches", "workload", "faults", "telemetry", "placement", "expect"});
  Scenario s;
  Field name = root.at("name");
  s.name = name.str();
  if (!is_valid_lab_name(s.name)) {
    name.fail("'" + s.name + "' is not a valid lab name; valid: 1-12 of a-z, 0-9, '-', not " +
              "starting with '-' (it becomes part of namespace and interface names)");
  }
  if (auto seed = root.find("seed")) s.seed = seed->uint64();
  if (auto t = root.find("time_scale")) s.time_scale = read_time_scale(*t);
  // The fabric comes first: its MTU bounds the queue sizes of every link shape after it.
  if (auto f = section(root, "fabric")) s.fabric = read_fabric(*f, s.time_scale);
  s.topology = read_topology(root.at("topology"), s.fabric.mtu);
  if (auto f = section(root, "hosts")) s.hosts = read_hosts(*f);
  if (auto f = section(root, "links")) s.links = read_links(*f, s.fabric);
  if (auto f = section(root, "rdma")) s.rdma = read_rdma(*f, s.rdma_cc);
  if (auto f = section(root, "switches")) s.switch_buffers = read_switch_buffers(*f, s.fabric);
  if (auto f = section(root, "links"); f && uses_dynamic_xoff(s.links) && !s.switch_buffers.any())
    f->fail(
        "pfc: {xoff: dynamic} follows the receiving switch's shared buffer; give the "
        "switches one, e.g. switches: {buffer: 32M, alpha: 1}");
  if (auto f = section(root, "workload"))
    s.workload = read_workload(*f, s.fabric.mtu, s.time_scale);
  if (auto f = section(root, "faults")) s.faults = read_faults(*f, s.fabric.mtu);
  if (auto f = section(root, "telemetry")) s.telemetry = read_telemetry(*f);
  if (auto f = section(root, "placement")) s.placement = read_placement(*f);
  if (auto f = section(root, "expect")) s.expect = read_expect(*f);
  return s;
}

// yaml-cpp reports a tab in indentation as some later structural error; YAML forbids such
// tabs outright, so point at the tab instead.
std::string syntax_error(const std::string& text, const std::string& file,
                         const YAML::ParserException& e) {
  std::istringstream lines(text);
  std::string line;
  for (int n = 1; std::getline(lines, line) && n <= e.mark.line + 1; ++n) {
    size_t indent = line.find_first_not_of(" \t");
    size_t tab = line.find('\t');
    if (tab != std::string::npos && tab < indent) {
      return file + ":" + std::to_string(n) + ":" + std::to_string(tab + 1) +
             ": tab in indentation; YAML indents with spaces only";
    }
  }
  return file + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
         ": invalid YAML: " + e.msg;
}

// The mark of each document's root node, from the parser's events.
class DocumentRoots : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> roots;

  void OnDocumentStart(const YAML::Mark&) override { want_root_ = true; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                const std::string&) override {
    node(m);
  }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {
    node(m);
  }
  void OnMapEnd() override {}

 private:
  void node(const YAML::Mark& m) {
    if (want_root_) roots.push_back(m);
    want_root_ = false;
  }
  bool want_root_ = false;
};

// An error for a stream of more than one document, else nothing. Not YAML::LoadAll: yaml-cpp
// 0.7 returns an empty document without consuming the token from a ',' where a node should
// start (",", "- a\n,"), again and again (yaml-cpp #1040), and LoadAll collects them until
// memory runs out. Such a document starts where the one before it did.
std::optional<std::string> extra_document(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentRoots docs;
  while (docs.roots.size() < 3 && parser.HandleNextDocument(docs)) continue;
  auto at = [&](const YAML::Mark& m) {
    return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  };
  const auto& r = docs.roots;
  for (size_t i = 1; i < r.size(); ++i) {
    if (r[i].pos == r[i - 1].pos) {
      const char c = r[i].pos >= 0 && size_t(r[i].pos) < text.size() ? text[r[i].pos] : ' ';
      return at(r[i]) + ": invalid YAML: unexpected '" + std::string(1, c) + "'";
    }
  }
  if (r.size() > 1) return at(r[1]) + ": a second YAML document; a scenario file holds one";
  return std::nullopt;
}

}  // namespace
}  // namespace detail

Result<ReplayStep> load_replay_step(const std::string& path, const std::string& format,
                                    const std::string& comm_groups) {
  if (format != "simai" && format != "chakra")
    return make_error("--format: '" + format + "' is not a replay format; valid: simai, chakra");
  if (!comm_groups.empty() && format != "chakra")
    return make_error("--comm-groups is Chakra's groups file; a " + format +
                      " workload lays out its own groups");
  auto program = detail::read_replay_program(path, format, comm_groups);
  if (!program) return program.error();
  ReplayStep r;
  r.file = r.path = path;
  r.format = format;
  r.comm_groups = comm_groups;
  r.program = std::make_shared<const replay::Program>(std::move(*program));
  return r;
}

Result<Scenario> load_scenario_string(const std::string& text, const std::string& file_label) {
  // yaml-cpp reads a NUL as an escape error somewhere later; it means a binary file was given.
  if (size_t nul = text.find('\0'); nul != std::string::npos) {
    size_t line_start = text.rfind('\n', nul);
    line_start = line_start == std::string::npos ? 0 : line_start + 1;
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + nul, '\n'));
    return make_error(file_label + ":" + std::to_string(line) + ":" +
                      std::to_string(nul - line_start + 1) +
                      ": binary data (a NUL byte); a scenario is a YAML text file");
  }
  YAML::Node doc;
  try {
    if (auto extra = detail::extra_document(text, file_label)) return make_error(*extra);
    doc = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return make_error(detail::syntax_error(text, file_label, e));
  }
  try {
    Scenario s = detail::read_scenario(detail::Field::root(doc, file_label));
    s.file = file_label;
    return s;
  } catch (const detail::ScenarioError& e) {
    return make_error(e.what());
  } catch (const YAML::Exception& e) {
    // Not expected: every access above checks the node type first.
    return make_error(file_label + ": " + e.what());
  }
}

Result<Scenario> load_scenario_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return errno_error("cannot read scenario file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  // A directory opens fine and fails on the first read.
  if (in.bad() || text.bad()) return errno_error("cannot read scenario file '" + path + "'");
  return load_scenario_string(text.str(), path);
}

}  // namespace fabemu
