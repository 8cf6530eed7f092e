// rxe between namespaces, tried the way a lab uses it: an rxe device in each of two namespaces
// (apply/rdma, as `up` makes them), then ibv_rc_pingpong between them.
#include "doctor/rxe_traffic.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "apply/rdma.h"
#include "apply/rtnl.h"
#include "apply/veth.h"
#include "util/files.h"
#include "util/netns.h"
#include "util/proc_net.h"

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

// Starts argv inside the network namespace behind `ns_fd`, stdout and stderr into `log`; -1
// when fork fails. Everything is opened before fork(): the child only makes system calls.
pid_t start_in(int ns_fd, const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  UniqueFd out(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  UniqueFd null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::setns(ns_fd, CLONE_NEWNET) != 0) ::_exit(126);
    if (out.valid()) ::dup2(out.get(), STDOUT_FILENO), ::dup2(out.get(), STDERR_FILENO);
    if (null.valid()) ::dup2(null.get(), STDIN_FILENO);
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

// The log's last complaint ("Failed status transport retry counter exceeded (12) for wr_id
// 2"), else its last line: client and server write to it both.
std::string last_line(const std::string& path) {
  auto text = read_file(path);
  if (!text) return "";
  std::istringstream in(*text);
  std::string line, last, complaint;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    last = line;
    if (line.find("ail") != std::string::npos || line.find("rror") != std::string::npos)
      complaint = line;
  }
  return complaint.empty() ? last : complaint;
}

// The probe's two namespaces joined by a veth (fe-rxa 10.254.77.1, fe-rxb .2), pinned in a
// private directory and gone with it.
class Pair {
 public:
  ~Pair() {
    fds_[0].reset();
    fds_[1].reset();
    for (const auto& p : pins_) (void)unpin_namespace(p);
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  Result<void> make() {
    char tmpl[] = "/run/fabemu-rxe-probe-XXXXXX";
    if (!::mkdtemp(tmpl)) return errno_error("creating a probe directory");
    dir_ = tmpl;
    for (int i = 0; i < 2; ++i) {
      pins_.push_back(dir_ + (i ? "/b" : "/a"));
      Result<UniqueFd> made = make_error("no thread");
      std::thread([&] { made = create_pinned_namespace(pins_[i], "", ""); }).join();
      if (!made) return made.error();
      fds_[i] = std::move(*made);
    }
    auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, std::chrono::seconds(5));
    if (!rtnl) return rtnl.error();
    FABEMU_TRY(
        create_veth_pair(*rtnl, {fds_[0].get(), netdev(0)}, {fds_[1].get(), netdev(1)}, 1500, 0));
    for (int i = 0; i < 2; ++i) {
      FABEMU_TRY(run_in_netns(pins_[i], [&]() -> Result<void> {
        auto sock = RtnlSocket::open();
        if (!sock) return sock.error();
        int index = static_cast<int>(::if_nametoindex(netdev(i)));
        FABEMU_TRY(sock->add_address(
            index, Prefix{Ipv4{0x0afe4d01u + static_cast<uint32_t>(i)}, 24}, "probe veth"));
        return sock->set_up(index, "probe veth");
      }));
    }
    return ok();
  }
  static const char* netdev(int i) { return i ? "fe-rxb" : "fe-rxa"; }
  const std::string& pin(int i) const { return pins_[i]; }
  int fd(int i) const { return fds_[i].get(); }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::vector<std::string> pins_;
  UniqueFd fds_[2];
};

bool means_no_rxe_driver(const Error& e) {
  // The RDMA core answers EINVAL for a link type no driver (nor loadable module) provides.
  const int err = errno_of(e);
  return err == EINVAL || err == EOPNOTSUPP || err == EPROTONOSUPPORT;
}

}  // namespace

RxeTraffic probe_rxe_traffic() {
  const std::string pingpong = find_tool("ibv_rc_pingpong");
  Pair pair;
  if (auto r = pair.make(); !r)
    return {ProbeStatus::Partial,
            "the rxe traffic probe could not set up its namespaces: " + describe(r.error())};
  // RDMA device names are global: the pid keeps concurrent probes (parallel `up`s) apart.
  const std::string tag = std::to_string(::getpid());
  const std::string devices[2] = {"fabemu-probe-" + tag + "-a", "fabemu-probe-" + tag + "-b"};
  // Deleted before the namespaces go (declared after the pair): a namespace torn down with
  // rxe devices in it can make the next unshare() fail for a while on 7.3.
  std::optional<RxeLink> links[2];
  for (int i = 0; i < 2; ++i) {
    auto link = RxeLink::create(pair.pin(i), devices[i], Pair::netdev(i));
    if (!link) {
      if (means_no_rxe_driver(link.error()))
        return {ProbeStatus::No,
                "this kernel has no rdma_rxe: creating an rxe device in a "
                "network namespace: " +
                    describe(link.error())};
      return {ProbeStatus::No,
              "creating an rxe device in a network namespace failed: " + describe(link.error())};
    }
    links[i].emplace(std::move(*link));
  }
  if (pingpong.empty())
    return {ProbeStatus::Partial,
            "rxe devices can be created in namespaces; traffic between them not tried: needs "
            "ibv_rc_pingpong (apt install ibverbs-utils ibverbs-providers)"};

  const std::string log = pair.dir() + "/log";
  // The server listens once its device is open; then the client runs once. The deadlines are
  // generous (soft-RoCE under an emulated CPU on a busy machine is slow) and cost nothing where
  // rxe fails: kernels < 7.1 end the client themselves when its retries run out (~3 s).
  pid_t server =
      start_in(pair.fd(1), {pingpong, "-d", devices[1], "-g", "1", "-p", "18777", "-n", "5"}, log);
  if (server < 0) return {ProbeStatus::Partial, describe(errno_error("starting ibv_rc_pingpong"))};
  const auto listen_deadline = Clock::now() + std::chrono::seconds(15);
  bool listens = false;
  int ws = 0;
  while (!(listens = listening_in(server, pair.pin(1), 18777)) &&
         ::waitpid(server, &ws, WNOHANG) == 0 && Clock::now() < listen_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!listens) {
    finish(server, Clock::now());
    return {ProbeStatus::Partial,
            "ibv_rc_pingpong's server on an rxe device did not listen: " + last_line(log)};
  }
  pid_t client = start_in(
      pair.fd(0), {pingpong, "-d", devices[0], "-g", "1", "-p", "18777", "-n", "5", "10.254.77.2"},
      log);
  const int client_status =
      client < 0 ? -2 : finish(client, Clock::now() + std::chrono::seconds(20));
  // The server ends by itself after a successful exchange; after a failed one it would wait.
  const int server_status =
      finish(server, Clock::now() +
                         (client_status == 0 ? std::chrono::seconds(5) : std::chrono::seconds(0)));
  // Out of time: too slow a machine to tell, not a verdict on the kernel (not cached by `up`).
  if (client_status == -1)
    return {ProbeStatus::Partial,
            "ibv_rc_pingpong between rxe devices in two namespaces did not finish within 20 s: " +
                last_line(log)};
  const std::string seen = last_line(log);
  if (client_status == 0 && server_status == 0)
    return {ProbeStatus::Yes,
            "rxe devices in two namespaces exchanged RC messages (ibv_rc_pingpong, RoCEv2 GID 1)"};
  return {ProbeStatus::No,
          "rxe devices can be created, but ibv_rc_pingpong between two namespaces failed (this "
          "kernel's rxe works only in the initial namespace; >= 7.1 needed): " +
              seen};
}

}  // namespace fabemu::doctor
