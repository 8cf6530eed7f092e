// `perf LAB SERVER CLIENT`: a perftest (ib_*_bw/lat) or ucx_perftest pair between two hosts,
// the server started first and the client run against the server's fabric address.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <thread>

#include "apply/lab.h"
#include "cli/commands.h"
#include "runtime/spawn.h"
#include "util/proc_net.h"
#include "util/unique_fd.h"

namespace fabemu::cli {
namespace {

using Clock = std::chrono::steady_clock;

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

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && ::access((dir + "/" + tool).c_str(), X_OK) == 0) return true;
  return false;
}

// Forks a child that enters the node and runs argv, stdout and stderr onto out_fd (-1: ours).
// It stays in our process group, so that a Ctrl-C reaches it too.
pid_t start_in_node(const NodeContext& node, const std::vector<std::string>& argv, int out_fd) {
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    if (out_fd >= 0) ::dup2(out_fd, STDOUT_FILENO), ::dup2(out_fd, STDERR_FILENO);
    Error e = exec_in_node(node, argv);
    std::fprintf(stderr, "fabemu perf: %s\n", e.what().c_str());
    std::fflush(stderr);
    ::_exit(127);
  }
  return pid;
}

// The child's exit status (128 + signal when killed), or nullopt while it runs past deadline.
std::optional<int> wait_until(pid_t pid, Clock::time_point deadline) {
  for (;;) {
    int ws = 0;
    pid_t r = ::waitpid(pid, &ws, WNOHANG);
    if (r == pid) return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    if (r < 0 && errno != EINTR) return -1;
    if (Clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

std::string captured(int fd) {
  std::string out;
  char buf[4096];
  for (off_t at = 0;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, at);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
    at += n;
  }
  return out;
}

}  // namespace

int cmd_perf(const PerfArgs& args, const LabPaths& base) {
  const bool perftest = is_perftest(args.tool);
  if (!perftest && args.tool != kUcxPerftest) {
    print_error("perf: --tool " + args.tool +
                " is not one of ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_send_lat, "
                "ucx_perftest");
    return kExitBadInput;
  }
  if (args.timeout_s <= 0) {
    print_error("perf: --timeout takes a positive number of seconds");
    return kExitBadInput;
  }
  if (!require_root("perf")) return kExitNeedsRoot;
  LabPaths paths = base;
  paths.lab = args.lab;
  auto model = lab_model(paths);
  if (!model) return lab_error(model.error());
  const Topology& t = model->topo;
  int ids[2];
  for (int i = 0; i < 2; ++i) {
    const std::string& name = i ? args.client : args.server;
    ids[i] = t.find(name);
    if (ids[i] < 0 || t.nodes[ids[i]].role != Role::Host) {
      print_error("perf: lab " + args.lab + " has no host named '" + name + "'");
      return kExitBadInput;
    }
  }
  if (ids[0] == ids[1]) {
    print_error("perf: the server and the client must be two different hosts");
    return kExitBadInput;
  }
  if (perftest && !model->rdma.rxe) {
    print_error("perf: " + args.tool + " needs soft-RoCE (rxe) devices, and lab " + args.lab +
                " has none: " + model->rdma.why_not +
                ". `--tool ucx_perftest` measures over TCP instead");
    return kExitBadInput;
  }
  if (!on_path(args.tool)) {
    print_error("perf: " + args.tool + " is not installed (apt install " +
                (perftest ? "perftest" : "ucx-utils") + ")");
    return kExitFailed;
  }

  NodeContext server = node_context(*model, paths, ids[0]);
  NodeContext client = node_context(*model, paths, ids[1]);
  const std::string address = model->addresses.host_address(t, ids[0]).str();
  const int port = perftest ? kPerftestPort : kUcxPort;
  std::vector<std::string> server_argv, client_argv;
  bool ucx_over_tcp = false;
  if (perftest) {
    // -x 1: GID index 1, RoCEv2 with the NIC's IPv4 address. -F: no complaint about CPU
    // frequency scaling (VMs and laptops), which makes the latency tests fail.
    auto side = [&](const std::string& host) {
      return std::vector<std::string>{args.tool, "-d", paths.rxe_name(host), "-x", "1",
                                      "-F",      "-p", std::to_string(port)};
    };
    server_argv = side(args.server);
    client_argv = side(args.client);
    server_argv.insert(server_argv.end(), args.extra.begin(), args.extra.end());
    client_argv.insert(client_argv.end(), args.extra.begin(), args.extra.end());
    client_argv.push_back(address);
  } else {
    // The server learns the test from the client: extra arguments (later ones win) go there.
    server_argv = {kUcxPerftest, "-p", std::to_string(port)};
    client_argv = {kUcxPerftest, address, "-p", std::to_string(port)};
    for (const char* d : {"-t", "tag_bw", "-s", "65536", "-n", "2000"}) client_argv.push_back(d);
    client_argv.insert(client_argv.end(), args.extra.begin(), args.extra.end());
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

  const auto deadline = Clock::now() + std::chrono::seconds(args.timeout_s);
  const std::string over = ucx_over_tcp ? "TCP (UCX_TLS=tcp; set UCX_TLS to choose transports)"
                           : model->rdma.rxe
                               ? paths.rxe_name(args.server) + " / " + paths.rxe_name(args.client)
                               : "TCP";
  std::printf("perf: %s, server %s (%s), client %s (%s), over %s\n", args.tool.c_str(),
              args.server.c_str(), address.c_str(), args.client.c_str(),
              model->addresses.host_address(t, ids[1]).str().c_str(), over.c_str());
  UniqueFd server_out(::memfd_create("fabemu-perf-server", MFD_CLOEXEC));
  if (!server_out.valid()) {
    print_error(errno_error("perf: creating a buffer for the server's output").what());
    return kExitFailed;
  }
  pid_t server_pid = start_in_node(server, server_argv, server_out.get());
  if (server_pid < 0) {
    print_error(errno_error("perf: starting the server").what());
    return kExitFailed;
  }
  auto fail = [&](const std::string& why) {
    kill_and_reap(server_pid);
    print_error("perf: " + why);
    const std::string out = captured(server_out.get());
    if (!out.empty())
      std::fprintf(stderr, "--- server (%s) said:\n%s", args.server.c_str(), out.c_str());
    return kExitFailed;
  };

  // Until the server listens for the client's handshake.
  while (!listening_in(server_pid, server.netns_path, port)) {
    if (auto exited = wait_until(server_pid, Clock::now())) {
      server_pid = -1;
      print_error("perf: the server on " + args.server + " exited (status " +
                  std::to_string(*exited) + ") before it listened");
      std::fprintf(stderr, "%s", captured(server_out.get()).c_str());
      return kExitFailed;
    }
    if (Clock::now() >= deadline)
      return fail("the server on " + args.server + " did not listen on port " +
                  std::to_string(port) + " within " + std::to_string(args.timeout_s) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  pid_t client_pid = start_in_node(client, client_argv, -1);
  if (client_pid < 0) return fail(errno_error("starting the client").what());
  std::optional<int> status = wait_until(client_pid, deadline);
  if (!status) {
    kill_and_reap(client_pid);
    return fail("timed out after " + std::to_string(args.timeout_s) + " s (--timeout)");
  }
  if (*status != 0)
    return fail("the client on " + args.client + " failed (exit status " + std::to_string(*status) +
                ")");
  // The server ends by itself once the client is done; a moment's grace, then it goes.
  if (!wait_until(server_pid, std::min(deadline, Clock::now() + std::chrono::seconds(5))))
    kill_and_reap(server_pid);
  return kExitOk;
}

}  // namespace fabemu::cli
