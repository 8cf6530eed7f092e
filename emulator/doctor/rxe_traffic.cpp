// rxe between namespaces, tried with the tools a user would use: rdma(8) and ibv_rc_pingpong.
#include "doctor/rxe_traffic.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>
#include <vector>

#include "apply/netns.h"
#include "apply/rtnl.h"
#include "apply/veth.h"
#include "util/files.h"

namespace fabemu::doctor {
namespace {

using Clock = std::chrono::steady_clock;

std::string find_tool(const char* name) {
  for (const char* dir : {"/usr/bin", "/usr/sbin", "/bin", "/sbin", "/usr/local/bin"}) {
    std::string p = std::string(dir) + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

// Starts argv with stdout and stderr into `log`; -1 when fork fails.
pid_t start(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) ::dup2(fd, STDOUT_FILENO), ::dup2(fd, STDERR_FILENO);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

// Waits for pid until the deadline, then kills it; its exit status, or -1.
int finish(pid_t pid, Clock::time_point deadline) {
  int ws = 0;
  while (::waitpid(pid, &ws, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &ws, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

int run(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = start(argv, log);
  return pid < 0 ? -1 : finish(pid, Clock::now() + std::chrono::seconds(5));
}

std::string last_line(const std::string& path) {
  auto text = read_file(path);
  if (!text) return "";
  std::string s = *text;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  auto nl = s.find_last_of('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

// The probe's two namespaces, pinned in a private directory and gone with it.
class Pair {
 public:
  ~Pair() {
    for (const auto& p : pins_) (void)unpin_namespace(p);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  Result<void> make() {
    char tmpl[] = "/run/fabemu-rxe-probe-XXXXXX";
    if (!::mkdtemp(tmpl)) return errno_error("creating a probe directory");
    dir_ = tmpl;
    UniqueFd fds[2];
    for (int i = 0; i < 2; ++i) {
      pins_.push_back(dir_ + (i ? "/b" : "/a"));
      Result<UniqueFd> made = make_error("no thread");
      std::thread([&] { made = create_pinned_namespace(pins_[i], "", ""); }).join();
      if (!made) return made.error();
      fds[i] = std::move(*made);
    }
    auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, std::chrono::seconds(5));
    if (!rtnl) return rtnl.error();
    FABEMU_TRY(
        create_veth_pair(*rtnl, {fds[0].get(), "fe-rxa"}, {fds[1].get(), "fe-rxb"}, 1500, 0));
    for (int i = 0; i < 2; ++i) {
      FABEMU_TRY(run_in_netns(pins_[i], [&]() -> Result<void> {
        auto sock = RtnlSocket::open();
        if (!sock) return sock.error();
        int index = static_cast<int>(::if_nametoindex(i ? "fe-rxb" : "fe-rxa"));
        FABEMU_TRY(sock->add_address(
            index, Prefix{Ipv4{0x0afe4d01u + static_cast<uint32_t>(i)}, 24}, "probe veth"));
        return sock->set_up(index, "probe veth");
      }));
    }
    return ok();
  }
  const std::string& pin(int i) const { return pins_[i]; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::string> pins_;
};

}  // namespace

RxeTraffic probe_rxe_traffic() {
  const std::string nsenter = find_tool("nsenter"), rdma = find_tool("rdma"),
                    pingpong = find_tool("ibv_rc_pingpong");
  if (nsenter.empty() || rdma.empty() || pingpong.empty())
    return {ProbeStatus::Partial,
            "rxe devices can be created; traffic between namespaces not tried: needs nsenter, "
            "rdma and ibv_rc_pingpong (apt install util-linux iproute2 ibverbs-utils "
            "ibverbs-providers)"};
  Pair pair;
  if (auto r = pair.make(); !r)
    return {ProbeStatus::Partial,
            "rxe devices can be created; the traffic probe could not set up "
            "its namespaces: " +
                r.error().what()};
  const std::string log = pair.dir() + "/log";
  for (int i = 0; i < 2; ++i) {
    const std::string dev = i ? "fabemu_rxb" : "fabemu_rxa", net = i ? "fe-rxb" : "fe-rxa";
    if (run({nsenter, "--net=" + pair.pin(i), rdma, "link", "add", dev, "type", "rxe", "netdev",
             net},
            log) != 0)
      return {ProbeStatus::No,
              "creating an rxe device in a second namespace failed: " + last_line(log)};
  }
  const auto deadline = Clock::now() + std::chrono::seconds(8);
  pid_t server = start({nsenter, "--net=" + pair.pin(1), pingpong, "-d", "fabemu_rxb", "-g", "1",
                        "-p", "18777", "-n", "5"},
                       log);
  int client_status = -1;
  // The server needs a moment to listen; the client retries its TCP handshake a few times.
  for (int attempt = 0; attempt < 20 && client_status != 0 && Clock::now() < deadline; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    client_status = run({nsenter, "--net=" + pair.pin(0), pingpong, "-d", "fabemu_rxa", "-g", "1",
                         "-p", "18777", "-n", "5", "10.254.77.2"},
                        log);
  }
  int server_status = server < 0 ? -1 : finish(server, deadline);
  // Gone before their namespaces are: a namespace torn down with rxe devices in it can make
  // the next unshare() fail for a while on 7.3.
  for (int i = 0; i < 2; ++i)
    run({nsenter, "--net=" + pair.pin(i), rdma, "link", "delete", i ? "fabemu_rxb" : "fabemu_rxa"},
        log);
  if (client_status == 0 && server_status == 0)
    return {ProbeStatus::Yes,
            "rxe devices in two namespaces exchanged RC messages (ibv_rc_pingpong, RoCEv2 GID 1)"};
  return {ProbeStatus::No,
          "rxe devices can be created, but ibv_rc_pingpong between two namespaces failed (this "
          "kernel's rxe works only in the initial namespace; >= 7.1 needed): " +
              last_line(log)};
}

}  // namespace fabemu::doctor
