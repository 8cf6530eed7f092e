// The incast step: servers in the receiver (and the victim's far end), every client at once.
#include "runtime/incast.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "apply/inspect.h"
#include "apply/link_control.h"
#include "apply/rdma.h"
#include "model/fair_share.h"
#include "runtime/spawn.h"
#include "util/files.h"
#include "util/json.h"
#include "util/proc_net.h"
#include "util/units.h"

namespace fabemu {
namespace {

constexpr int kIperfPort = 5201;
constexpr int kVictimPort = 5301;
constexpr int kPerftestPort = 18515;
// The size of each RDMA write an incast sender posts: a rxe MTU of 4096 makes it 4 frames, and a
// flow of a few megabytes hundreds of completions.
constexpr uint64_t kRdmaWriteBytes = 16384;

// When a flow's data arrived, on the step's clock (wall seconds since its clients started), and
// how much: for a receiver's total over the time any of its flows was arriving.
struct Active {
  double from = 0, to = 0, bytes = 0;
};

struct Pair {
  FlowResult flow;
  int server_node = -1, client_node = -1;
  int port = 0;
  std::vector<std::string> server_argv, client_argv;
  CommandOutcome outcome;
  Active active;
  uint64_t rdma_writes = 0;  // of kRdmaWriteBytes each
};

// The rate the receiving host's link delivers to it, in the real fabric.
uint64_t receiver_rate(const LabModel& m, int host) {
  const Topology& t = m.topo;
  const int l = t.links_of(host).front();
  const LinkShape& in = t.links[l].a.node == host ? t.links[l].b_to_a : t.links[l].a_to_b;
  return in.rate_bps.value_or(0);
}

// A rxe device's hardware counter (0 when it cannot be read).
uint64_t rxe_hw_counter(const std::string& device, const char* name) {
  const auto text =
      read_file(std::string(kInfinibandClass) + "/" + device + "/ports/1/hw_counters/" + name);
  return text ? std::strtoull(text->c_str(), nullptr, 10) : 0;
}

// iperf3 -J: what the receiver got, the sender's retransmissions, UDP's loss. `to_the_end`:
// the goodput counts the time from the first data to the end of the test (a flow that stopped
// moving shows it), not to its last data.
void read_iperf(const std::string& out, double factor, bool to_the_end, FlowResult& f,
                Active& active) {
  const Json j = Json::parse(out, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("end")) {
    f.failure = "iperf3 printed no report";
    if (j.is_object() && j.contains("error")) f.failure += ": " + j["error"].get<std::string>();
    return;
  }
  const Json& end = j["end"];
  // The receiver's own figures (--get-server-output): what arrived, over the time it arrived
  // in; a UDP sender's rate says nothing about what got through.
  const Json server = j.contains("server_output_json") ? j["server_output_json"] : Json();
  const Json& got = server.is_object() && server.contains("end") ? server["end"] : end;
  if (got.contains("sum_received"))
    f.bps = got["sum_received"].value("bits_per_second", 0.0) * factor;
  else if (got.contains("sum"))
    f.bps = got["sum"].value("bits_per_second", 0.0) * factor;
  // The receiver's test spans from the control connection's start to the client's end message
  // (a lossy-class TCP connection that may wait out an RTO behind a full queue, and clients
  // that start late on a slow machine): its own rate divides by all of that. What arrived over
  // the time data was arriving is the goodput: from the first interval to the last that saw
  // more than a trickle (a straggler of 1% of the bytes does not stretch the flow).
  if (server.is_object() && server.contains("intervals")) {
    struct Interval {
      double start, end, bytes;
    };
    std::vector<Interval> iv;
    double bytes = 0;
    for (const Json& i : server["intervals"]) {
      if (!i.contains("sum")) continue;
      iv.push_back(
          {i["sum"].value("start", 0.0), i["sum"].value("end", 0.0), i["sum"].value("bytes", 0.0)});
      bytes += iv.back().bytes;
    }
    size_t first = 0, last = iv.size();
    for (double skipped = 0; first < last && skipped + iv[first].bytes <= 0.01 * bytes; ++first)
      skipped += iv[first].bytes;
    // The stall at the end: intervals in which nothing arrived, in the real fabric's time.
    for (size_t k = iv.size(); k > first && iv[k - 1].bytes == 0; --k)
      f.stalled_s = (iv.back().end - iv[k - 1].start) / factor;
    if (!to_the_end)
      for (double skipped = 0; last > first && skipped + iv[last - 1].bytes <= 0.01 * bytes; --last)
        skipped += iv[last - 1].bytes;
    double counted = 0;
    for (size_t k = first; k < last; ++k) counted += iv[k].bytes;
    if (last > first && iv[last - 1].end > iv[first].start) {
      f.bps = counted * 8 / (iv[last - 1].end - iv[first].start) * factor;
      active = {iv[first].start, iv[last - 1].end, counted};
    }
  }
  if (end.contains("sum_sent")) f.retransmits = end["sum_sent"].value("retransmits", uint64_t{0});
  if (f.lost >= 0 && got.contains("sum")) f.lost = got["sum"].value("lost_percent", 0.0) / 100;
}

// One test, then exit; JSON, so that the client can hand on the receiver's own intervals.
std::vector<std::string> iperf_server(int port) {
  return {"iperf3", "-s", "-1", "-J", "-p", std::to_string(port)};
}

// JSON with the receiver's own report in it, the flow's DSCP in its TOS byte.
std::vector<std::string> iperf_client(const std::string& server, int port, int secs, int dscp) {
  return {"iperf3",
          "-c",
          server,
          "-p",
          std::to_string(port),
          "-t",
          std::to_string(secs),
          "-J",
          "--get-server-output",
          "-S",
          std::to_string(dscp << 2)};
}

std::string ratio(double got, double of) {
  return of > 0 ? printf_string("%.3f", got / of) : "-";
}

// The step, planned: every pair's server and client command lines, fair shares, RDMA blocks.
struct IncastPlan {
  bool traffic = false, rdma = false;
  const char* kind = "incast";
  int secs = 1;  // whole seconds of wall clock (the tools' unit), at least the real duration
  int dscp = 0;
  uint64_t recv_rate = 0;  // an incast's receiver's link rate (0: a traffic step)
  std::vector<Pair> pairs;
  // A TCP or UDP incast: the bytes its receiver's interfaces had received, every 5 ms of the
  // step's clock.
  std::vector<std::pair<double, uint64_t>> received;
};

// The incast's receiver (-1: a traffic step).
int receiver_node(const IncastPlan& plan) {
  for (const Pair& p : plan.pairs)
    if (p.flow.role == "incast") return p.server_node;
  return -1;
}

// The server and client command lines of pair `i`.
void plan_commands(const LabModel& m, const LabPaths& paths, const IncastPlan& plan, size_t i,
                   Pair& p) {
  const std::string to_addr = m.addresses.host_address(m.topo, p.server_node).str();
  if (plan.rdma) {
    // A dilated lab's RC timeout grows with it (as `perf` does).
    const int timeout_exp =
        std::min(31, 14 + static_cast<int>(std::ceil(std::log2(m.time_scale.factor))));
    p.port = kPerftestPort + static_cast<int>(i);
    auto side = [&](const std::string& host) {
      return std::vector<std::string>{"ib_write_bw",
                                      "-d",
                                      paths.rxe_name(host),
                                      "-x",
                                      "1",
                                      "-F",
                                      "-p",
                                      std::to_string(p.port),
                                      "--report_gbits",
                                      "-u",
                                      std::to_string(timeout_exp)};
    };
    p.server_argv = side(p.flow.to);
    p.client_argv = side(p.flow.from);
    p.client_argv.push_back(to_addr);
    return;
  }
  p.port = kIperfPort + static_cast<int>(i);
  p.server_argv = iperf_server(p.port);
  p.client_argv = iperf_client(to_addr, p.port, plan.secs, plan.dscp);
}

// Checks the step against the lab, and plans it; `failure` says why not.
IncastPlan plan_incast(const LabModel& m, const LabPaths& paths, const IncastStep& s,
                       std::string& failure) {
  const Topology& t = m.topo;
  IncastPlan plan;
  plan.traffic = s.is_traffic();
  plan.kind = plan.traffic ? "traffic" : "incast";
  plan.rdma = s.transport == "rdma";
  if (m.part) {
    failure =
        std::string(plan.kind) + " across machines is not supported yet; place it on one machine";
    return plan;
  }
  if (plan.rdma && !m.rdma.rxe) {
    failure = "transport rdma needs rxe on the hosts, and this lab has none: " + m.rdma.why_not;
    return plan;
  }
  const std::string tool = plan.rdma ? "ib_write_bw" : "iperf3";
  if (!find_program(tool)) {
    failure = tool + " is not installed (apt install " + (plan.rdma ? "perftest" : "iperf3") + ")";
    return plan;
  }
  const uint64_t wall_ns = m.time_scale.wall_ns(s.duration_ns);
  plan.secs = static_cast<int>(std::max<uint64_t>(1, (wall_ns + 999'999'999) / 1'000'000'000));
  const auto lossless = m.scenario.fabric.lossless_class();
  plan.dscp = s.dscp.value_or(lossless.dscp.empty() ? 0 : lossless.dscp.front());
  plan.recv_rate = plan.traffic ? 0 : receiver_rate(m, t.find(s.receiver));
  const uint32_t payload = m.scenario.fabric.mtu - 28;  // IPv4 + UDP headers

  std::vector<std::pair<std::string, std::string>> ends = s.flows;
  for (const std::string& from : s.senders) ends.emplace_back(from, s.receiver);
  for (size_t i = 0; i < ends.size(); ++i) {
    Pair p;
    p.flow = {plan.traffic ? "flow" : "incast", ends[i].first, ends[i].second};
    p.server_node = t.find(ends[i].second);
    p.client_node = t.find(ends[i].first);
    plan_commands(m, paths, plan, i, p);
    if (!plan.rdma && s.transport == "udp") {
      p.flow.lost = 0;
      // Unless given: the receiving host's link rate (N incast senders offer N times it).
      const uint64_t offered = s.rate_bps.value_or(receiver_rate(m, p.server_node));
      if (!offered) {
        failure = std::string("udp ") + plan.kind +
                  ": the receiver's link has no rate; give rate: per sender";
        return plan;
      }
      p.client_argv.insert(p.client_argv.end(),
                           {"-u", "-b", std::to_string(m.time_scale.wall_bps(offered)), "-l",
                            std::to_string(payload)});
    }
    plan.pairs.push_back(std::move(p));
  }
  if (s.victim) {
    Pair p;
    p.flow = {"victim", s.victim->from, s.victim->to};
    p.server_node = t.find(s.victim->to);
    p.client_node = t.find(s.victim->from);
    p.port = kVictimPort;
    p.server_argv = iperf_server(p.port);
    p.client_argv = iperf_client(m.addresses.host_address(t, p.server_node).str(), p.port,
                                 plan.secs, plan.dscp);
    plan.pairs.push_back(std::move(p));
  }
  // What each flow deserves: max-min over the fabric as the scenario shapes it.
  std::vector<std::pair<int, int>> nodes;
  for (const Pair& p : plan.pairs) nodes.emplace_back(p.client_node, p.server_node);
  const std::vector<double> fair = max_min_rates(t, nodes);
  for (size_t i = 0; i < plan.pairs.size(); ++i)
    plan.pairs[i].flow.fair_bps = std::isinf(fair[i]) ? 0 : fair[i];
  // RDMA: each sender writes what the receiver's link carries in the step's duration (N
  // senders of an incast take N times as long together; a traffic step's flows their fair
  // share's worth), a fixed block as in a real incast. Not ib_write_bw's duration mode (-D),
  // which measures between a 2 s warm-up and a 2 s cool-down: a dilated flow completes a 64 KB
  // write every ~0.2 s of wall clock there, so its window counted 0 or 1 write. A block of
  // only the fair share's worth overlapped too little (the clients start tens of us of the
  // real fabric apart under an emulated CPU): no drop without PFC in one run.
  if (plan.rdma)
    for (Pair& p : plan.pairs) {
      if (p.flow.role == "victim") continue;
      const double bps = plan.recv_rate > 0 ? double(plan.recv_rate) : p.flow.fair_bps;
      const double bytes = bps > 0 ? bps * double(s.duration_ns) * 1e-9 / 8 : 64e6;
      const uint64_t iters = std::clamp<uint64_t>(
          static_cast<uint64_t>(std::ceil(bytes / kRdmaWriteBytes)), 20, 1'000'000);
      p.rdma_writes = iters;
      for (auto* argv : {&p.server_argv, &p.client_argv})
        argv->insert(argv->begin() + 1,
                     {"-s", std::to_string(kRdmaWriteBytes), "-n", std::to_string(iters)});
    }
  return plan;
}

// Every pair's server, started and listening.
Result<std::vector<Process>> start_servers(const LabModel& m, const LabPaths& paths,
                                           const std::vector<Pair>& pairs,
                                           ProcessClock::time_point deadline) {
  std::vector<Process> servers;
  for (const Pair& p : pairs) {
    ProcessSpec spec = node_process(node_context(m, paths, p.server_node), p.server_argv);
    spec.out = spec.err = Stdio::Null;
    auto proc = Process::start(spec);
    if (!proc) return proc.error();
    servers.push_back(std::move(*proc));
  }
  for (size_t i = 0; i < pairs.size(); ++i) {
    const std::string netns = node_netns_path(m, paths, pairs[i].server_node);
    while (!listening_in(servers[i].pid(), netns, pairs[i].port)) {
      if (servers[i].poll() || ProcessClock::now() > deadline)
        return make_error("the " + pairs[i].server_argv[0] + " server on " +
                          m.topo.nodes[pairs[i].server_node].name + " did not listen on port " +
                          std::to_string(pairs[i].port));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return servers;
}

// rxe's own view of an RDMA step: each sender's retries (go-back-N after a timeout or a NAK)
// and the receiver's out-of-sequence packets before the clients start, and each sender's frames
// sent and ACKs received so far.
struct RxeBefore {
  std::vector<uint64_t> retries, sent, acks;
  uint64_t seq_err = 0;
};

uint64_t rxe_counter(const LabPaths& paths, const std::string& host, const char* name) {
  return rxe_hw_counter(paths.rxe_name(host), name);
}

RxeBefore read_rxe_before(const LabPaths& paths, const IncastStep& s, const IncastPlan& plan) {
  RxeBefore b;
  if (!plan.rdma) return b;
  for (const Pair& p : plan.pairs) {
    b.retries.push_back(rxe_counter(paths, p.flow.from, "completer_retry_err"));
    b.sent.push_back(rxe_counter(paths, p.flow.from, "sent_pkts"));
    b.acks.push_back(rxe_counter(paths, p.flow.from, "rcvd_pkts"));
  }
  if (!plan.traffic) b.seq_err = rxe_counter(paths, s.receiver, "rcvd_seq_err");
  return b;
}

// RDMA: when each sender's device first sent a frame of its writes and last got an ACK.
void sample_rxe(const LabPaths& paths, IncastPlan& plan, RxeBefore& rxe, double now) {
  for (size_t i = 0; i < plan.pairs.size(); ++i) {
    Pair& p = plan.pairs[i];
    if (p.flow.role == "victim") continue;
    if (p.active.from == 0 && rxe_counter(paths, p.flow.from, "sent_pkts") > rxe.sent[i])
      p.active.from = now;
    const uint64_t acks = rxe_counter(paths, p.flow.from, "rcvd_pkts");
    if (acks > rxe.acks[i]) p.active.to = now, rxe.acks[i] = acks;
  }
}

// DCQCN's counters at a host's own port (its NIC), where the lab runs it.
struct NicCnps {
  uint64_t received = 0, sent = 0;
};

// The host's own port: its (only) link's side at the host.
uint32_t host_port(const Topology& t, int host) {
  const int l = t.links_of(host).front();
  return port_ifindex(l, t.links[l].a.node != host);
}

// Each host's NIC's CNPs by node, where the lab runs DCQCN over RDMA (empty otherwise, or when
// the maps cannot be read).
std::map<int, NicCnps> read_cnps(const LabModel& m, const LabPaths& paths, const IncastPlan& plan) {
  std::map<int, NicCnps> out;
  if (!plan.rdma || m.scenario.rdma_cc.cc != RoceCc::Dcqcn) return out;
  auto shaper = open_link_model(paths);
  if (!shaper) return out;
  for (const Pair& p : plan.pairs)
    for (int node : {p.client_node, p.server_node}) {
      auto c = shaper->dcqcn_counters(host_port(m.topo, node));
      if (c) out[node] = {c->cnps_received, c->cnps_sent};
    }
  return out;
}

// The bytes the interfaces of the namespace at `netns` have received.
std::optional<uint64_t> bytes_in(const std::string& netns) {
  auto ifs = read_interfaces(netns);
  if (!ifs) return std::nullopt;
  uint64_t bytes = 0;
  for (const InterfaceState& i : *ifs)
    if (i.name != "lo") bytes += i.rx_bytes;
  return bytes;
}

// Every client at once, each until the deadline (RDMA: `rdma_limit`). RDMA: when each sender's
// device first sent a frame of its writes and last got an ACK, from its rxe counters every 5 ms:
// the flow's goodput is its bytes over that time. (ib_write_bw's own figures are not used: in
// the VM lane it printed 0.000000 for flows that wrote all they were asked to, now and then, in
// its duration mode and its iteration mode alike.) A TCP or UDP incast: the bytes its receiver
// had received, every 5 ms (each iperf3 server's intervals run on its own clock, which starts
// when its connection does: a SYN lost to the incast starts it a second late, and flows that
// took turns were placed as if they overlapped, a receiver at 1.8 times its link).
void run_clients(const LabModel& m, const LabPaths& paths, IncastPlan& plan, RxeBefore rxe,
                 ProcessClock::time_point deadline, std::chrono::milliseconds rdma_limit) {
  const auto clients_start = std::chrono::steady_clock::now();
  std::atomic<bool> clients_done{false};
  const int receiver = plan.traffic || plan.rdma ? -1 : receiver_node(plan);
  const std::string receiver_netns = receiver < 0 ? "" : node_netns_path(m, paths, receiver);
  std::thread sampler;  // none for a TCP or UDP traffic step: nothing to sample
  if (plan.rdma || !receiver_netns.empty())
    sampler = std::thread([&] {
      for (bool last = false; !last;) {
        last = clients_done.load();  // one more sample after the clients have exited
        const double now =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - clients_start).count();
        if (plan.rdma) sample_rxe(paths, plan, rxe, now);
        const auto bytes = receiver_netns.empty() ? std::nullopt : bytes_in(receiver_netns);
        if (bytes) plan.received.emplace_back(now, *bytes);
        if (!last) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    });
  std::vector<std::thread> clients;
  for (Pair& p : plan.pairs) {
    clients.emplace_back([&, pp = &p] {
      const ProcessSpec spec =
          node_process(node_context(m, paths, pp->client_node), pp->client_argv);
      CommandOptions o;
      o.env = spec.env;
      o.before_exec = spec.before_exec;
      o.timeout =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - ProcessClock::now());
      if (plan.rdma) o.timeout = std::min(o.timeout, rdma_limit);
      auto out = run_captured(pp->client_argv, o);
      if (!out)
        pp->flow.failure = out.error().what();
      else
        pp->outcome = std::move(*out);
    });
  }
  for (std::thread& c : clients) c.join();
  clients_done = true;
  if (sampler.joinable()) sampler.join();
}

// What pair `p`'s client said, as its flow's figures or failure.
void judge_flow(const IncastPlan& plan, const TimeScale& ts, double rdma_limit_s, Pair& p,
                bool& stalled) {
  FlowResult& f = p.flow;
  const bool rdma = plan.rdma;
  if (f.failure.empty() && p.outcome.timed_out && rdma) {
    // A QP that lost a frame waits out rxe's retransmission timeout, dilated like every
    // time: as long as its data stops, so does the flow. A result, not an error.
    f.stalled_s = ts.real_s(rdma_limit_s - std::min(rdma_limit_s, p.active.to));
    stalled = true;
  } else if (f.failure.empty() && p.outcome.timed_out) {
    f.failure = "timed out";
  } else if (f.failure.empty() && p.outcome.status != 0) {
    f.failure = p.client_argv[0] + " exited with status " + std::to_string(p.outcome.status);
    // iperf3 -J says why in its JSON; perftest on standard error.
    const Json j = Json::parse(p.outcome.out, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("error") && j["error"].is_string())
      f.failure += ": " + j["error"].get<std::string>();
    else if (!p.outcome.err.empty())
      f.failure +=
          ": " + p.outcome.err.substr(p.outcome.err.size() > 300 ? p.outcome.err.size() - 300 : 0);
  }
  if (f.failure.empty()) {
    if (rdma && f.role != "victim" && p.outcome.timed_out) {
      p.active = {};  // it did not write its block: what it did write is not known
    } else if (rdma && f.role != "victim") {
      // All its writes completed (ib_write_bw exits 0 only then): bytes over the time its
      // device sent them until the last ACK came back, in the step's clock.
      p.active.bytes = double(p.rdma_writes * kRdmaWriteBytes);
      if (p.active.to > p.active.from)
        f.bps = p.active.bytes * 8 / (p.active.to - p.active.from) * ts.factor;
      else
        f.failure = "its rxe device counted no frame sent and acknowledged";
    } else {
      read_iperf(p.outcome.out, ts.factor, plan.traffic, f, p.active);
    }
  }
  if (!f.failure.empty()) f.failure = f.from + " -> " + f.to + ": " + f.failure;
}

// An RDMA incast's receiver total: what its senders wrote over the time from the first frame
// sent to the last ACK (the sampler's clock, shared by all of them; flows that take turns do not
// add up past the link). Without those times, the sum of the flows' rates.
double receiver_total(const std::vector<Pair>& pairs, double factor) {
  double from = 1e300, to = -1e300, bytes = 0, sum = 0;
  for (const Pair& p : pairs) {
    if (p.flow.role != "incast") continue;
    sum += p.flow.bps;
    if (p.active.to <= p.active.from) continue;
    from = std::min(from, p.active.from);
    to = std::max(to, p.active.to);
    bytes += p.active.bytes;
  }
  return to > from ? bytes * 8 / (to - from) * factor : sum;
}

// The flows as a table: goodput beside the fair share, loss or retries, stalls.
std::string flow_table(const LabModel& m, const IncastStep& s, const IncastPlan& plan,
                       const StepResult& r) {
  const bool rdma = plan.rdma, traffic = plan.traffic;
  std::string real_note = m.time_scale.dilated()
                              ? ", " + format_time_short(s.duration_ns) + " of the real fabric (" +
                                    std::to_string(plan.secs) + " s of wall clock)"
                              : ", " + std::to_string(plan.secs) + " s";
  if (rdma && !plan.pairs.empty())  // blocks, not a time: an incast's senders take N times it
    real_note =
        traffic ? ", a block each: its fair share's worth of " + format_time_short(s.duration_ns)
                : ", " + format_size(plan.pairs.front().rdma_writes * kRdmaWriteBytes) + " each (" +
                      s.receiver + "'s link's worth of " + format_time_short(s.duration_ns) + ")";
  std::string text = std::string(plan.kind) + ": " +
                     (traffic ? std::to_string(s.flows.size()) + " flows"
                              : std::to_string(s.senders.size()) + " senders -> " + s.receiver) +
                     " (" + s.transport +
                     (rdma ? ", RoCEv2" : ", dscp " + std::to_string(plan.dscp)) + ")" + real_note +
                     "\n";
  // A traffic step says how long each flow had stopped at the end (a deadlock shows there).
  const bool stalls = traffic && !rdma;
  const bool cnps =
      std::any_of(r.flows.begin(), r.flows.end(), [](const FlowResult& f) { return f.cnps >= 0; });
  text +=
      printf_string("  %-18s %14s %14s %7s  %-11s%s%s\n", "FLOW", "GOODPUT", "FAIR SHARE", "RATIO",
                    s.transport == "udp" ? "LOST"
                    : rdma               ? "RXE RETRIES"
                                         : "RETRANSMITS",
                    cnps ? "  CNPS" : "", stalls ? "  STALLED AT THE END" : "");
  for (const FlowResult& f : r.flows) {
    std::string extra =
        f.lost >= 0 ? printf_string("%.1f%%", 100 * f.lost) : std::to_string(f.retransmits);
    if (cnps) extra = printf_string("%-11s  %lld", extra.c_str(), (long long)f.cnps);
    if (stalls)
      extra = printf_string(
          "%-11s  %s", extra.c_str(),
          f.stalled_s > 0 ? format_time_short(static_cast<uint64_t>(f.stalled_s * 1e9)).c_str()
                          : "-");
    text += printf_string(
        "  %-18s %14s %14s %7s  %s%s\n", (f.from + " -> " + f.to).c_str(),
        format_rate_short(f.bps).c_str(), f.fair_bps ? format_rate_short(f.fair_bps).c_str() : "-",
        ratio(f.bps, f.fair_bps).c_str(), extra.c_str(), f.role == "victim" ? "  (victim)" : "");
  }
  return text + "  " + r.note + "\n";
}

// The step's note: the flows against their fair shares, or the receiver against its link; rxe's
// view; the QPs that stalled.
std::string step_note(const LabPaths& paths, const IncastStep& s, const IncastPlan& plan,
                      const StepResult& r, const RxeBefore& rxe,
                      const std::vector<std::string>& stalled, double rdma_limit_s) {
  std::string note;
  if (plan.traffic) {
    double sum = 0, fair = 0;
    for (const FlowResult& f : r.flows) sum += f.bps, fair += f.fair_bps;
    note = "all flows: " + format_rate_short(sum) + " of their fair shares' " +
           format_rate_short(fair) + " (" + ratio(sum, fair) + ")";
  } else if (!r.receiver_bps) {
    note = "receiver " + s.receiver + ": what it received could not be read";
  } else {
    const double total = *r.receiver_bps;
    const double link = double(plan.recv_rate);
    note = "receiver " + s.receiver + ": " + format_rate_short(total) +
           (plan.recv_rate
                ? " of its link's " + format_rate_short(link) + " (" + ratio(total, link) + ")"
                : "");
  }
  if (plan.rdma && !plan.traffic)
    note += "; rxe rcvd_seq_err on " + s.receiver + ": " +
            std::to_string(rxe_counter(paths, s.receiver, "rcvd_seq_err") - rxe.seq_err);
  if (!stalled.empty()) {
    std::string names;
    for (const std::string& f : stalled) names += (names.empty() ? "" : ", ") + f;
    note += "; stalled (their QPs wait out rxe's retransmission timeout, stopped after " +
            printf_string("%.0f", rdma_limit_s) + " s of wall clock without all their writes " +
            "done): " + names;
  }
  return note;
}

}  // namespace

double received_rate(const std::vector<std::pair<double, uint64_t>>& samples, double factor) {
  if (samples.size() < 2 || samples.back().second <= samples.front().second) return 0;
  const uint64_t base = samples.front().second;
  const double total = double(samples.back().second - base);
  size_t from = 0, to = samples.size() - 1;
  while (from + 1 < samples.size() && double(samples[from + 1].second - base) <= 0.01 * total)
    ++from;
  for (size_t k = from + 1; k < samples.size(); ++k)
    if (double(samples[k].second - base) >= 0.99 * total) {
      to = k;
      break;
    }
  const double seconds = samples[to].first - samples[from].first;
  if (seconds <= 0) return 0;
  return double(samples[to].second - samples[from].second) * 8 / seconds * factor;
}

StepResult run_incast(const LabModel& m, const LabPaths& paths, size_t index, const IncastStep& s,
                      std::chrono::seconds timeout) {
  const TimeScale& ts = m.time_scale;
  StepResult r;
  const bool traffic = s.is_traffic();
  r.title = "workload[" + std::to_string(index) + "] " + (traffic ? "traffic " : "incast ") +
            (traffic ? std::to_string(s.flows.size()) + " flows"
                     : std::to_string(s.senders.size()) + " -> " + s.receiver) +
            " (" + s.transport + ")";
  IncastPlan plan = plan_incast(m, paths, s, r.failure);
  if (!r.failure.empty()) return r;

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = ProcessClock::now() + timeout;
  auto servers = start_servers(m, paths, plan.pairs, deadline);
  if (!servers) {
    r.failure = servers.error().what();
    return r;
  }
  const RxeBefore rxe = read_rxe_before(paths, s, plan);
  const std::map<int, NicCnps> cnps_before = read_cnps(m, paths, plan);
  // RDMA clients write a block; one whose QP stalls (a lost frame, rxe's retransmission timeout
  // dilated: minutes of wall clock) is stopped at three times the time its block needs when the
  // senders share the receiver, plus 10 s.
  const double rdma_limit_s =
      3 * ts.wall_s(double(s.duration_ns) * 1e-9) * double(std::max<size_t>(1, s.senders.size())) +
      10;
  run_clients(m, paths, plan, rxe, deadline,
              std::chrono::milliseconds(static_cast<int64_t>(rdma_limit_s * 1000)));
  for (Process& p : *servers) p.stop(std::chrono::seconds(2));
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::map<int, NicCnps> cnps_after = read_cnps(m, paths, plan);

  std::vector<std::string> stalled;
  for (size_t i = 0; i < plan.pairs.size(); ++i) {
    Pair& p = plan.pairs[i];
    if (plan.rdma)
      p.flow.retransmits = rxe_counter(paths, p.flow.from, "completer_retry_err") - rxe.retries[i];
    if (cnps_after.count(p.client_node) && cnps_before.count(p.client_node))
      p.flow.cnps =
          int64_t(cnps_after.at(p.client_node).received - cnps_before.at(p.client_node).received);
    bool stall = false;
    judge_flow(plan, ts, rdma_limit_s, p, stall);
    if (stall) stalled.push_back(p.flow.from + " -> " + p.flow.to);
    r.flows.push_back(p.flow);
  }
  for (const FlowResult& f : r.flows)
    if (!f.failure.empty()) r.failure += (r.failure.empty() ? "" : "; ") + f.failure;
  r.ok = r.failure.empty();
  if (plan.rdma && !plan.traffic)
    r.receiver_bps = receiver_total(plan.pairs, ts.factor);
  else if (!plan.traffic && plan.received.size() >= 2)
    r.receiver_bps = received_rate(plan.received, ts.factor);
  r.note = step_note(paths, s, plan, r, rxe, stalled, rdma_limit_s);
  if (!plan.traffic) {
    std::vector<double> senders;
    for (const FlowResult& f : r.flows)
      if (f.role == "incast") senders.push_back(f.bps);
    if (senders.size() > 1)
      r.note += printf_string("; Jain's fairness among the senders: %.3f", jain_index(senders));
    const int receiver = receiver_node(plan);
    if (cnps_after.count(receiver) && cnps_before.count(receiver))
      r.note += "; DCQCN: " + s.receiver + "'s NIC sent " +
                std::to_string(cnps_after.at(receiver).sent - cnps_before.at(receiver).sent) +
                " CNPs";
  }
  r.table = flow_table(m, s, plan, r);
  return r;
}

}  // namespace fabemu
