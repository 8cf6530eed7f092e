// perftest and ucx_perftest between two hosts: argv, environment and the server/client run.
#include "runtime/perf.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "runtime/spawn.h"
#include "util/proc_net.h"

namespace fabemu {
namespace {

constexpr const char* kPerftestTools[] = {"ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat",
                                          "ib_send_lat"};
constexpr const char* kUcxPerftest = "ucx_perftest";
// The tools' own default ports; each host has its own network namespace, so they only clash
// when one host serves two runs at once.
constexpr int kPerftestPort = 18515;
constexpr int kUcxPort = 13337;

bool is_perftest(const std::string& tool) {
  return std::find_if(std::begin(kPerftestTools), std::end(kPerftestTools),
                      [&](const char* t) { return tool == t; }) != std::end(kPerftestTools);
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (off_t at = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

}  // namespace

bool is_perf_tool(const std::string& tool) {
  return is_perftest(tool) || tool == kUcxPerftest;
}

Result<PerfSetup> plan_perf(const LabModel& model, const LabPaths& paths, const PerfRequest& r) {
  const Topology& t = model.topo;
  const bool perftest = is_perftest(r.tool);
  int ids[2];
  for (int i = 0; i < 2; ++i) {
    const std::string& name = i ? r.client : r.server;
    ids[i] = t.find(name);
    if (ids[i] < 0 || t.nodes[ids[i]].role != Role::Host)
      return make_error("lab " + paths.lab + " has no host named '" + name + "'", EINVAL);
  }
  if (ids[0] == ids[1])
    return make_error("the server and the client must be two different hosts", EINVAL);
  if (perftest && !model.rdma.rxe)
    return make_error(r.tool + " needs soft-RoCE (rxe) devices, and lab " + paths.lab +
                          " has none: " + model.rdma.why_not +
                          ". `--tool ucx_perftest` measures over TCP instead",
                      EINVAL);
  if (!find_program(r.tool))
    return make_error(
        r.tool + " is not installed (apt install " + (perftest ? "perftest" : "ucx-utils") + ")",
        ENOENT);

  PerfSetup s;
  s.request = r;
  NodeContext server = node_context(model, paths, ids[0]);
  NodeContext client = node_context(model, paths, ids[1]);
  s.server_netns = server.netns_path;
  s.server_address = model.addresses.host_address(t, ids[0]).str();
  s.client_address = model.addresses.host_address(t, ids[1]).str();
  s.port = perftest ? kPerftestPort : kUcxPort;
  std::vector<std::string> server_argv, client_argv;
  bool ucx_over_tcp = false;
  // A dilated lab's RC retransmission timeout grows with it: 4.096 us x 2^u, perftest's 14 by
  // default.
  const int timeout_exp =
      std::min(31, 14 + static_cast<int>(std::ceil(std::log2(model.time_scale.factor))));
  if (perftest) {
    // -x 1: GID index 1, RoCEv2 with the NIC's IPv4 address. -F: no complaint about CPU
    // frequency scaling (VMs and laptops), which makes the latency tests fail.
    auto side = [&](const std::string& host) {
      return std::vector<std::string>{
          r.tool, "-d", paths.rxe_name(host),   "-x", "1",
          "-F",   "-p", std::to_string(s.port), "-u", std::to_string(timeout_exp)};
    };
    s.rc_timeout_exp = timeout_exp;
    server_argv = side(r.server);
    client_argv = side(r.client);
    server_argv.insert(server_argv.end(), r.extra.begin(), r.extra.end());
    client_argv.insert(client_argv.end(), r.extra.begin(), r.extra.end());
    client_argv.push_back(s.server_address);
  } else {
    // The server learns the test from the client: extra arguments (later ones win) go there.
    server_argv = {kUcxPerftest, "-p", std::to_string(s.port)};
    client_argv = {kUcxPerftest, s.server_address, "-p", std::to_string(s.port)};
    for (const char* d : {"-t", "tag_bw", "-s", "65536", "-n", "2000"}) client_argv.push_back(d);
    client_argv.insert(client_argv.end(), r.extra.begin(), r.extra.end());
    // TCP on the hosts' NICs unless the caller chose transports (UCX_TLS in our environment,
    // which the tool inherits): UCX 1.13 wires RC up over UD, and its UD endpoints time out
    // between rxe devices in namespaces (kernel 7.3), where ibv_ud_pingpong works.
    if (!std::getenv("UCX_TLS")) {
      ucx_over_tcp = true;
      for (NodeContext* c : {&server, &client}) {
        c->env.push_back({"UCX_TLS", "tcp,self"});
        c->env.push_back({"UCX_NET_DEVICES", host_nic(t, c == &server ? ids[0] : ids[1])});
      }
    }
  }
  if (model.time_scale.dilated()) {
    const std::string n = format_factor(model.time_scale.factor);
    s.dilation_note =
        "dilated x" + n + ": " + r.tool + " reports the lab's wall clock: its bandwidths x " + n +
        " and its latencies / " + n + " are the real fabric's" +
        (perftest ? " (RC timeout raised with it: -u " + std::to_string(timeout_exp) + ")" : "");
  }
  s.over = ucx_over_tcp     ? "TCP (UCX_TLS=tcp; set UCX_TLS to choose transports)"
           : model.rdma.rxe ? paths.rxe_name(r.server) + " / " + paths.rxe_name(r.client)
                            : "TCP";
  // Both stay in our process group, so that a Ctrl-C reaches them too.
  s.server = node_process(server, server_argv);
  s.client = node_process(client, client_argv);
  return s;
}

Result<PerfOutcome> run_perf(PerfSetup s) {
  UniqueFd server_out(::memfd_create("fabemu-perf-server", MFD_CLOEXEC));
  if (!server_out.valid()) return errno_error("creating a buffer for the server's output");
  s.server.out = s.server.err = Stdio::Fd;
  s.server.out_fd = s.server.err_fd = server_out.get();
  UniqueFd client_out;
  if (s.request.capture) {
    client_out = UniqueFd(::memfd_create("fabemu-perf-client", MFD_CLOEXEC));
    if (!client_out.valid()) return errno_error("creating a buffer for the client's output");
    s.client.out = s.client.err = Stdio::Fd;
    s.client.out_fd = s.client.err_fd = client_out.get();
  }
  ServerClientSpec spec;
  spec.server = s.server;
  spec.client = s.client;
  const std::string netns = s.server_netns;
  const int port = s.port;
  spec.ready = [netns, port](pid_t pid) { return listening_in(pid, netns, port); };
  spec.deadline = ProcessClock::now() + std::chrono::seconds(s.request.timeout_s);
  auto run = run_server_client(spec);
  if (!run) return run.error();
  PerfOutcome o;
  const std::string& server = s.request.server;
  if (run->server_early_exit)
    o.failure = "the server on " + server + " exited (status " +
                std::to_string(*run->server_early_exit) + ") before it listened";
  else if (!run->ready)
    o.failure = "the server on " + server + " did not listen on port " + std::to_string(port) +
                " within " + std::to_string(s.request.timeout_s) + " s";
  else if (run->client_timed_out)
    o.failure = "timed out after " + std::to_string(s.request.timeout_s) + " s (--timeout)";
  else if (run->client && *run->client != 0)
    o.failure = "the client on " + s.request.client + " failed (exit status " +
                std::to_string(*run->client) + ")";
  o.ok = o.failure.empty();
  if (!o.ok) o.server_output = read_all(server_out.get());
  if (client_out.valid()) o.client_output = read_all(client_out.get());
  return o;
}

PerftestTable parse_perftest(const std::string& output) {
  // A column: "#word", or words up to a "[unit]".
  static const std::regex column(R"(#\w+|[^#\s][^\]]*\])");
  // ucx_perftest's last line: "Final:" and the figures of its table's eight columns.
  static const std::vector<std::string> ucx_columns = {"#iterations",
                                                       "overhead 50.0%ile[usec]",
                                                       "overhead average[usec]",
                                                       "overhead overall[usec]",
                                                       "BW average[MB/sec]",
                                                       "BW overall[MB/sec]",
                                                       "MsgRate average[msg/sec]",
                                                       "MsgRate overall[msg/sec]"};
  PerftestTable t;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("Final:")) {
      t.columns = ucx_columns;
      t.rows.clear();
      line.erase(0, 6);
    }
    if (line.find("#bytes") != std::string::npos) {
      t.columns.clear();
      t.rows.clear();
      for (std::sregex_iterator m(line.begin(), line.end(), column), end; m != end; ++m)
        t.columns.push_back(m->str());
      continue;
    }
    if (t.columns.empty()) continue;
    std::istringstream words(line);
    std::vector<double> row;
    for (std::string w; words >> w;) {
      char* rest = nullptr;
      const double v = std::strtod(w.c_str(), &rest);
      if (rest == w.c_str() || *rest) break;
      row.push_back(v);
    }
    if (row.size() == t.columns.size()) t.rows.push_back(std::move(row));
  }
  if (t.rows.empty()) t.columns.clear();
  return t;
}

double real_value(const std::string& column, double wall_value, double factor) {
  if (column.find("[usec]") != std::string::npos) return wall_value / factor;
  if (column.find("BW") != std::string::npos || column.find("MsgRate") != std::string::npos)
    return wall_value * factor;
  return wall_value;
}

}  // namespace fabemu
