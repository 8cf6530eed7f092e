// rxe between namespaces, tried the way a lab uses it: an rxe device in each of two namespaces
// (apply/rdma, as `up` makes them), then ibv_rc_pingpong between them.
#include "doctor/rxe_traffic.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <sched.h>
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
#include "util/process.h"

namespace fabemu::doctor {
namespace {

using Clock = std::chrono::steady_clock;

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
  const auto found = find_program("ibv_rc_pingpong");
  const std::string pingpong = found ? *found : "";
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
  UniqueFd log_fd(::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  // The server listens once its device is open; then the client runs once. The deadline is
  // generous (soft-RoCE under an emulated CPU on a busy machine is slow) and costs nothing where
  // rxe fails: kernels < 7.1 end the client themselves when its retries run out (~3 s).
  auto in_ns = [&](int i, std::vector<std::string> argv) {
    ProcessSpec p;
    p.argv = std::move(argv);
    p.out = p.err = log_fd.valid() ? Stdio::Fd : Stdio::Null;
    p.out_fd = p.err_fd = log_fd.get();
    const int ns = pair.fd(i);
    p.before_exec = [ns]() -> Result<void> {
      if (::setns(ns, CLONE_NEWNET) != 0) return errno_error("entering the probe namespace");
      return ok();
    };
    return p;
  };
  ServerClientSpec spec;
  spec.server = in_ns(1, {pingpong, "-d", devices[1], "-g", "1", "-p", "18777", "-n", "5"});
  spec.client =
      in_ns(0, {pingpong, "-d", devices[0], "-g", "1", "-p", "18777", "-n", "5", "10.254.77.2"});
  const std::string server_ns = pair.pin(1);
  spec.ready = [server_ns](pid_t pid) { return listening_in(pid, server_ns, 18777); };
  spec.deadline = Clock::now() + std::chrono::seconds(35);
  auto run = run_server_client(spec);
  if (!run) return {ProbeStatus::Partial, "starting ibv_rc_pingpong: " + describe(run.error())};
  if (!run->ready)
    return {ProbeStatus::Partial,
            "ibv_rc_pingpong's server on an rxe device did not listen: " + last_line(log)};
  // Out of time: too slow a machine to tell, not a verdict on the kernel (not cached by `up`).
  if (run->client_timed_out)
    return {ProbeStatus::Partial,
            "ibv_rc_pingpong between rxe devices in two namespaces did not finish within 35 s: " +
                last_line(log)};
  const std::string seen = last_line(log);
  if (run->client == 0 && run->server == 0)
    return {ProbeStatus::Yes,
            "rxe devices in two namespaces exchanged RC messages (ibv_rc_pingpong, RoCEv2 GID 1)"};
  return {ProbeStatus::No,
          "rxe devices can be created, but ibv_rc_pingpong between two namespaces failed (this "
          "kernel's rxe works only in the initial namespace; >= 7.1 needed): " +
              seen};
}

}  // namespace fabemu::doctor
