// Reading the workload (collective benchmarks and user programs) and the fault timeline.
#include "scenario/workload_yaml.h"

#include <cmath>
#include <optional>
#include <set>
#include <string>

#include "replay/chakra.h"
#include "replay/simai.h"
#include "scenario/link_shape_yaml.h"
#include "scenario/load_balance_yaml.h"
#include "scenario/loader.h"
#include "util/collectives.h"
#include "util/files.h"
#include "util/units.h"

namespace fabemu::detail {
namespace {

// A step's bound: `timeout: 5m`, the real fabric's time; the runner stops the step there (x the
// time scale on the wall clock) and says so. A step needs at least 1 s of wall clock: checked
// here at a fixed scale; under `auto` the runner gives it at least that.
std::optional<uint64_t> read_timeout(const Field& f, const TimeScaleSpec& scale) {
  auto t = f.find("timeout");
  if (!t) return std::nullopt;
  const uint64_t ns = t->parsed(parse_time_ns);
  const double factor = scale.automatic ? 1 : scale.factor;
  if (ns == 0 || (!scale.automatic && static_cast<double>(ns) * factor < 1e9)) {
    std::string what = "a step needs at least 1s of wall clock";
    if (factor > 1)
      what += " (at time_scale " + printf_string("%g", factor) + ": " +
              format_time_ns(static_cast<uint64_t>(std::ceil(1e9 / factor))) +
              " of the real fabric)";
    t->fail(what + "; e.g. timeout: 600s");
  }
  return ns;
}

CollectiveStep read_collective(const Field& item) {
  item.check_keys(
      {"collective", "library", "transport", "sizes", "iterations", "timeout", "qps_per_peer"});
  CollectiveStep c;
  // The name stays a word (the runner passes it on); util/collectives.h says which exist.
  const Field name = item.at("collective");
  c.collective = name.str();
  if (auto known = parse_collective(c.collective); !known) name.fail(known.error().message);
  c.library = "gloo";
  if (auto f = item.find("library")) c.library = f->one_of({"gloo", "mpi", "ucx"});
  c.transport = "auto";
  if (auto f = item.find("transport")) c.transport = f->one_of({"tcp", "ibverbs", "auto"});
  if (auto f = item.find("sizes")) {
    for (const Field& size : f->items()) {
      c.sizes.push_back(size.parsed(parse_size_bytes));
      if (c.sizes.back() == 0) size.fail("size must be > 0; e.g. 64K, 1M");
    }
    if (c.sizes.empty()) f->fail("empty list; give at least one size, e.g. [64K, 1M]");
  } else {
    c.sizes = {1 << 20};
  }
  if (auto f = item.find("iterations")) c.iterations = f->integer(1, 1'000'000);
  if (auto f = item.find("qps_per_peer")) {
    c.qps_per_peer = f->integer(1, kMaxQpsPerPeer);
    if (c.qps_per_peer > 1 && c.library != "gloo")
      f->fail("connections per peer are fabemu-collective's (library: gloo); " + c.library +
              " opens its own");
    if (c.qps_per_peer > 1 && !splits_across_qps(*parse_collective(c.collective)))
      f->fail(c.collective +
              " cannot split its blocks across connections (Gloo's ring and halving-doubling "
              "take them whole); allreduce, alltoall and broadcast can");
  }
  return c;
}

ExecStep read_exec(const Field& item) {
  item.check_keys({"exec"});
  Field exec = item.at("exec");
  exec.check_keys({"hosts", "command", "timeout"});
  ExecStep e;
  if (auto hosts = exec.find("hosts")) {
    if (hosts->is_scalar()) {
      if (hosts->str() != "all") {
        hosts->fail("unknown value '" + hosts->str() + "'; valid: all, or a list like [h1, h2]");
      }
    } else {
      std::set<std::string> seen;
      e.hosts.clear();
      for (const Field& h : hosts->items()) {
        std::string name = h.str();
        if (!is_valid_node_name(name)) h.fail("'" + name + "' is not a host name, e.g. h1");
        if (!seen.insert(name).second) h.fail("host '" + name + "' is listed twice");
        e.hosts += (e.hosts.empty() ? "" : ",") + name;
      }
      if (e.hosts.empty()) hosts->fail("empty list; valid: all, or a list like [h1, h2]");
    }
  }
  Field command = exec.at("command");
  // An argv list, never a shell string: what runs is exactly what the file says.
  if (!command.is_sequence()) {
    command.fail(
        "expected a list of program and arguments, e.g. [\"python3\", \"train.py\"]; "
        "for a shell, write [\"sh\", \"-c\", \"...\"]");
  }
  for (const Field& arg : command.items()) e.command.push_back(arg.str());
  if (e.command.empty())
    command.fail("empty command; give a program, e.g. [\"python3\", \"train.py\"]");
  if (e.command[0].empty()) command.items()[0].fail("empty program name");
  return e;
}

// A path the scenario gives: relative to the scenario file's folder.
std::string beside_scenario(const Field& f, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const std::string& scenario = f.loc().file;
  const size_t slash = scenario.rfind('/');
  return slash == std::string::npos ? path : scenario.substr(0, slash + 1) + path;
}

}  // namespace

Result<replay::Program> read_replay_program(const std::string& path, const std::string& format,
                                            const std::string& comm_groups) {
  if (format == "chakra") return replay::read_chakra(path, comm_groups);
  auto text = read_file(path);
  if (!text) return text.error();
  return replay::read_simai(*text, path);
}

namespace {

// replay: {file: model.txt, format: simai, iterations: 3, placement: [h1, ...]}
ReplayStep read_replay(const Field& item) {
  item.check_keys({"replay"});
  const Field f = item.at("replay");
  f.check_keys(
      {"file", "format", "iterations", "placement", "comm_groups", "transport", "timeout"});
  ReplayStep r;
  const Field file = f.at("file", "a SimAI workload file, or a Chakra trace's PREFIX");
  r.file = file.str();
  r.path = beside_scenario(f, r.file);
  r.format = "simai";
  if (auto fmt = f.find("format")) r.format = fmt->one_of({"simai", "chakra"});
  if (auto it = f.find("iterations")) r.iterations = static_cast<int>(it->integer(1, 10'000));
  if (auto t = f.find("transport")) r.transport = t->one_of({"tcp", "ibverbs", "auto"});
  if (auto g = f.find("comm_groups")) {
    if (r.format != "chakra") g->fail("comm_groups are Chakra's process groups (format: chakra)");
    r.comm_groups = beside_scenario(f, g->str());
  }
  auto program = read_replay_program(r.path, r.format, r.comm_groups);
  if (!program) file.fail(program.error().what());
  if (auto p = f.find("placement")) {
    std::set<std::string> seen;
    for (const Field& h : p->items()) {
      r.placement.push_back(h.str());
      if (!is_valid_node_name(r.placement.back()))
        h.fail("'" + r.placement.back() + "' is not a host name, e.g. h1");
      if (!seen.insert(r.placement.back()).second) h.fail("host '" + h.str() + "' is listed twice");
    }
    if (static_cast<int>(r.placement.size()) != program->world)
      p->fail("places " + std::to_string(r.placement.size()) + " ranks; the workload has " +
              std::to_string(program->world) + " (one host per rank, in rank order)");
  }
  r.program = std::make_shared<const replay::Program>(std::move(*program));
  return r;
}

FaultEvent read_fault(const Field& item, uint32_t mtu) {
  item.check_keys({"at", "link", "host", "set", "down", "up", "reroute", "flap", "slow", "crash",
                   "restart", "freeze", "nic_down", "nic_up", "partition", "for"});
  FaultEvent ev;
  ev.at_ns = item.at("at").parsed(parse_time_ns);
  ev.loc = item.loc();
  if (auto p = item.find("partition")) {
    // partition: [[h1, h2], [h3, h4]], for: 2s
    for (const char* k : {"link", "host"})
      if (auto f = item.find(k))
        f->fail("a partition names its groups of hosts, not a " + std::string(k));
    if (!p->is_sequence() || p->items().size() < 2)
      p->fail("two or more groups of hosts, e.g. [[h1, h2], [h3, h4]]");
    std::set<std::string> seen;
    for (const Field& g : p->items()) {
      if (!g.is_sequence() || g.items().empty())
        g.fail("a group is a list of hosts, e.g. [h1, h2]");
      ev.partition.emplace_back();
      for (const Field& h : g.items()) {
        ev.partition.back().push_back(h.str());
        if (!seen.insert(h.str()).second) h.fail("host '" + h.str() + "' is in two groups");
      }
    }
    if (auto f = item.find("for")) ev.for_ns = f->parsed(parse_time_ns);
    return ev;
  }
  if (auto f = item.find("for")) f->fail("for goes with partition (slow has its own)");
  if (item.has("link") == item.has("host"))
    item.fail("a fault names one link (link: leaf1:spine1), one host (host: h3) or a partition");
  if (item.has("host")) {
    Field host = item.at("host");
    ev.host = host.str();
    if (!is_valid_node_name(ev.host)) host.fail("'" + ev.host + "' is not a host name, e.g. h3");
    for (const char* k : {"set", "down", "up", "reroute", "flap"})
      if (auto f = item.find(k))
        f->fail(std::string(k) + " is for link faults; a host is slow, crashes, restarts, " +
                "freezes or has a NIC down");
    const int actions = item.has("slow") + item.has("crash") + item.has("restart") +
                        item.has("freeze") + item.has("nic_down") + item.has("nic_up");
    if (actions != 1)
      item.fail(
          "a host fault does exactly one thing: slow: {cpu: 0.1, for: 2s}, crash: true, "
          "restart: true, freeze: 2s, nic_down: eth0 or nic_up: eth0");
    if (auto c = item.find("crash")) {
      ev.crash = c->boolean();
      if (!ev.crash) c->fail("false does nothing; to bring a host back write restart: true");
    }
    if (auto r = item.find("restart")) {
      ev.restart = r->boolean();
      if (!ev.restart) r->fail("false does nothing");
    }
    if (auto f = item.find("freeze")) {
      ev.freeze_ns = f->parsed(parse_time_ns);
      if (ev.freeze_ns == 0) f->fail("a host freezes for some time, e.g. 2s");
    }
    if (auto n = item.find("nic_down")) ev.nic_down = n->str();
    if (auto n = item.find("nic_up")) ev.nic_up = n->str();
    if (auto s = item.find("slow")) {
      Field slow = *s;
      slow.check_keys({"cpu", "for"});
      ev.slow_cpu = slow.at("cpu").number();
      if (*ev.slow_cpu <= 0) slow.at("cpu").fail("cpu must be > 0 (CPUs, e.g. 0.1)");
      if (auto f = slow.find("for")) ev.for_ns = f->parsed(parse_time_ns);
    }
    return ev;
  }
  for (const char* k : {"crash", "restart", "freeze", "nic_down", "nic_up"})
    if (auto f = item.find(k)) f->fail(std::string(k) + " is for host faults (host: h3)");
  ev.link = read_link_name(item.at("link"));
  if (auto f = item.find("slow")) f->fail("slow is for host faults (host: h3)");
  int actions = item.has("set") + item.has("down") + item.has("up") + item.has("flap");
  if (actions != 1) {
    item.fail(
        "a fault does exactly one thing; give one of set: {...}, down: true, up: true, "
        "flap: {count: 3, down: 200ms, up: 300ms}");
  }
  if (auto set = item.find("set")) {
    ev.set = read_link_shape_only(*set, mtu);
    if (ev.set->empty()) set->fail("sets nothing; give link-shape keys, e.g. {loss: 2%}");
  }
  if (auto down = item.find("down")) {
    ev.down = down->boolean();
    if (!ev.down) down->fail("false does nothing; to bring a link back write up: true");
  }
  if (auto up = item.find("up")) {
    ev.up = up->boolean();
    if (!ev.up) up->fail("false does nothing; to take a link down write down: true");
  }
  if (auto flap = item.find("flap")) {
    flap->check_keys({"count", "down", "up", "jitter"});
    FaultEvent::Flap f;
    if (auto c = flap->find("count")) f.count = static_cast<int>(c->integer(1, 10000));
    f.down_ns = flap->at("down", "a time, e.g. 200ms").parsed(parse_time_ns);
    f.up_ns = flap->at("up", "a time, e.g. 300ms").parsed(parse_time_ns);
    if (f.down_ns == 0) flap->at("down").fail("a flap is down for some time, e.g. 200ms");
    if (auto j = flap->find("jitter")) f.jitter_ns = j->parsed(parse_time_ns);
    ev.flap = f;
  }
  if (auto r = item.find("reroute")) {
    if (!ev.down && !ev.flap) r->fail("reroute goes with down: true or flap");
    ev.reroute = r->boolean();
  }
  return ev;
}

// What incast and traffic steps share: transport, duration, UDP's rate, the DSCP.
void read_flow_options(const Field& f, IncastStep& s) {
  if (auto t = f.find("transport")) s.transport = t->one_of({"tcp", "udp", "rdma"});
  const Field d = f.at("duration", "of the real fabric, e.g. 2ms");
  s.duration_ns = d.parsed(parse_time_ns);
  if (s.duration_ns == 0) d.fail("the flows last some time, e.g. 2ms");
  if (auto r = f.find("rate")) {
    if (s.transport != "udp")
      r->fail(
          "rate is udp's offered rate per sender; tcp and rdma send "
          "as fast as the fabric lets them");
    s.rate_bps = r->parsed(parse_rate);
  }
  if (auto q = f.find("dscp")) {
    if (s.transport == "rdma") q->fail("rdma's traffic class is rxe's (RoCEv2, UDP 4791)");
    s.dscp = static_cast<int>(q->integer(0, 63));
  }
}

// traffic: {flows: [[h1, h3], [h2, h4]], transport: udp, duration: 2ms, rate: 100gbit}
IncastStep read_traffic(const Field& item) {
  item.check_keys({"traffic"});
  const Field f = item.at("traffic");
  f.check_keys({"flows", "transport", "duration", "rate", "dscp", "timeout"});
  IncastStep s;
  const char* hint = "a list of [from, to] host pairs, e.g. [[h1, h3], [h2, h4]]";
  const Field flows = f.at("flows", hint);
  if (!flows.is_sequence()) flows.fail(hint);
  for (const Field& pair : flows.items()) {
    if (!pair.is_sequence() || pair.items().size() != 2) pair.fail(hint);
    s.flows.emplace_back(pair.items()[0].str(), pair.items()[1].str());
    if (s.flows.back().first == s.flows.back().second)
      pair.fail("a flow joins two different hosts");
  }
  if (s.flows.empty()) flows.fail("at least one flow");
  read_flow_options(f, s);
  return s;
}

// incast: {senders: [h2, h3, h4, h5], receiver: h1, transport: tcp, duration: 2ms,
//          victim: {from: h6, to: h8}}
IncastStep read_incast(const Field& item) {
  item.check_keys({"incast"});
  const Field f = item.at("incast");
  f.check_keys(
      {"senders", "receiver", "transport", "duration", "rate", "dscp", "victim", "timeout"});
  IncastStep s;
  const Field senders = f.at("senders", "a list of hosts, e.g. [h2, h3, h4, h5]");
  if (!senders.is_sequence()) senders.fail("a list of hosts, e.g. [h2, h3, h4, h5]");
  for (const Field& h : senders.items()) s.senders.push_back(h.str());
  if (s.senders.empty()) senders.fail("at least one sender");
  s.receiver = f.at("receiver", "a host, e.g. h1").str();
  for (const std::string& h : s.senders)
    if (h == s.receiver) senders.fail(h + " is the receiver; it cannot send to itself");
  read_flow_options(f, s);
  if (auto v = f.find("victim")) {
    v->check_keys({"from", "to"});
    s.victim = IncastStep::Victim{v->at("from").str(), v->at("to").str()};
    if (s.victim->from == s.victim->to) v->at("to").fail("a flow joins two different hosts");
    if (s.victim->to == s.receiver)
      v->at("to").fail("the victim goes elsewhere than the receiver (to " + s.receiver +
                       " it is one more sender)");
  }
  return s;
}

// links: {select: all, set: {pfc: off}}
LinksStep read_links_step(const Field& item, uint32_t mtu) {
  item.check_keys({"links"});
  const Field f = item.at("links");
  f.check_keys({"select", "set"});
  LinksStep s;
  if (auto sel = f.find("select")) s.select = sel->str();
  s.set = read_link_change(f.at("set", "link-shape settings, e.g. {pfc: off}"), mtu);
  return s;
}

// load_balance: spray (or any of fabric.load_balance's forms)
LoadBalanceStep read_load_balance_step(const Field& item) {
  item.check_keys({"load_balance"});
  LoadBalanceSetting set = read_load_balance(item.at("load_balance"));
  return LoadBalanceStep{set.lb, std::move(set.overrides)};
}

}  // namespace

std::vector<WorkloadStep> read_workload(const Field& list, uint32_t mtu,
                                        const TimeScaleSpec& scale) {
  std::vector<WorkloadStep> steps;
  for (const Field& item : list.items()) {
    const bool collective = item.has("collective"), exec = item.has("exec"),
               incast = item.has("incast"), links = item.has("links"),
               traffic = item.has("traffic"), balance = item.has("load_balance"),
               replay = item.has("replay");
    const int kinds = collective + exec + incast + links + traffic + balance + replay;
    if (kinds != 1) {
      std::string given;
      for (const char* k :
           {"collective", "exec", "incast", "traffic", "links", "load_balance", "replay"})
        if (item.has(k)) given += std::string(given.empty() ? "" : " and ") + "'" + k + "'";
      item.fail((kinds == 0   ? std::string("none of 'collective', 'exec', 'incast', 'traffic', "
                                              "'links', 'load_balance' or 'replay'")
                 : kinds == 2 ? "both " + given
                              : given) +
                "; a workload step is {collective: allreduce, ...}, {exec: {hosts: all, "
                "command: [...]}}, {incast: {senders: [...], receiver: h1, ...}}, {traffic: "
                "{flows: [[h1, h3], ...], ...}}, {links: {select: all, set: {...}}} or "
                "{load_balance: spray} or {replay: {file: model.txt, format: simai}}");
    }
    if (balance) {
      WorkloadStep step;
      step.loc = item.loc();
      step.step = read_load_balance_step(item);
      steps.push_back(std::move(step));
      continue;
    }
    if (links) {
      WorkloadStep step;
      step.loc = item.loc();
      step.step = read_links_step(item, mtu);
      steps.push_back(std::move(step));
      continue;
    }
    WorkloadStep step;
    step.loc = item.loc();
    if (collective) {
      step.step = read_collective(item);
      step.timeout_ns = read_timeout(item, scale);
    } else if (incast) {
      step.step = read_incast(item);
      step.timeout_ns = read_timeout(item.at("incast"), scale);
    } else if (replay) {
      step.step = read_replay(item);
      step.timeout_ns = read_timeout(item.at("replay"), scale);
    } else if (traffic) {
      step.step = read_traffic(item);
      step.timeout_ns = read_timeout(item.at("traffic"), scale);
    } else {
      step.step = read_exec(item);
      step.timeout_ns = read_timeout(item.at("exec"), scale);
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

std::vector<FaultEvent> read_faults(const Field& list, uint32_t mtu) {
  std::vector<FaultEvent> events;
  for (const Field& item : list.items()) events.push_back(read_fault(item, mtu));
  return events;
}

Expectations read_expect(const Field& f) {
  f.check_keys({"completes", "busbw_min", "max_drops", "faults_played"});
  Expectations e;
  e.loc = f.loc();
  if (auto c = f.find("completes")) e.completes = c->boolean();
  if (auto b = f.find("busbw_min")) e.busbw_min_bps = b->parsed(parse_rate);
  if (auto d = f.find("max_drops")) e.max_drops = static_cast<uint64_t>(d->integer(0));
  if (auto p = f.find("faults_played")) {
    using F = Expectations::FaultsPlayed;
    e.faults_played = p->choice<F>({{"all", F::All}, {"any", F::Any}});
  }
  if (e.empty())
    f.fail(
        "expects nothing; give completes, busbw_min (e.g. 20mbit), max_drops or faults_played "
        "(all or any)");
  return e;
}

}  // namespace fabemu::detail
