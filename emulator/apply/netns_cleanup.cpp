#include "apply/netns_cleanup.h"

#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "apply/veth.h"
#include "util/netns.h"

namespace fabemu {
namespace {

using Clock = std::chrono::steady_clock;

// A new network namespace for the calling thread, which stays in it; its fd.
Result<UniqueFd> unshare_net(const char* what) {
  if (unshare_retrying(CLONE_NEWNET) != 0) return errno_error(std::string("creating ") + what);
  return open_namespace("/proc/thread-self/ns/net");
}

// Runs f on a thread of its own, which may change namespaces and dies with them.
template <typename R, typename F>
R on_own_thread(F&& f) {
  R out = make_error("no thread ran");
  std::thread([&] { out = f(); }).join();
  return out;
}

}  // namespace

Result<NetnsCleanupWatch> NetnsCleanupWatch::create() {
  return on_own_thread<Result<NetnsCleanupWatch>>([]() -> Result<NetnsCleanupWatch> {
    auto watcher = unshare_net("the cleanup watcher's namespace");
    if (!watcher) return watcher.error();
    UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (sock.get() < 0) return errno_error("opening a socket in the cleanup watcher's namespace");
    auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, std::chrono::seconds(10));
    if (!rtnl) return rtnl.error();
    return NetnsCleanupWatch(std::move(*watcher), std::move(sock), std::move(*rtnl));
  });
}

Result<unsigned> NetnsCleanupWatch::veth_from(int ns_fd) {
  // Named in the watcher only (the other end, "fabemu-gone", is alone in its namespace: a lab
  // never names a port so).
  const std::string name = "w" + std::to_string(made_++);
  FABEMU_TRY(create_veth_pair(rtnl_, VethEnd{ns_fd, "fabemu-gone", 0, std::nullopt},
                              VethEnd{watcher_.get(), name, 0, std::nullopt}, 1500, 0));
  ifreq req{};
  std::strncpy(req.ifr_name, name.c_str(), IFNAMSIZ - 1);
  if (::ioctl(sock_.get(), SIOCGIFINDEX, &req) != 0)
    return errno_error("finding " + name + " in the cleanup watcher's namespace");
  return static_cast<unsigned>(req.ifr_ifindex);
}

Result<void> NetnsCleanupWatch::probe(const std::string& pin) {
  auto ns = open_namespace(pin);
  if (!ns) return ns.error();
  auto ifindex = veth_from(ns->get());
  if (!ifindex) return ifindex.error().context("probing " + pin);
  probes_.push_back(*ifindex);
  return ok();
}

Result<void> NetnsCleanupWatch::wait_gone(const std::vector<unsigned>& ifindexes,
                                          Clock::time_point deadline) {
  for (unsigned ifindex : ifindexes) {
    for (;;) {
      ifreq req{};
      req.ifr_ifindex = static_cast<int>(ifindex);
      if (::ioctl(sock_.get(), SIOCGIFNAME, &req) != 0) {
        if (errno == ENODEV) break;  // unregistered: its namespace has been freed
        return errno_error("watching a veth in the cleanup watcher's namespace");
      }
      if (Clock::now() > deadline)
        return make_error(
            "the kernel was still freeing network namespaces when fabemu stopped "
            "waiting",
            ETIMEDOUT);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  return ok();
}

Result<void> NetnsCleanupWatch::wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  FABEMU_TRY(wait_gone(probes_, deadline));
  probes_.clear();
  // The sentinel: made, joined to the watcher by a veth and dropped on a thread of its own.
  auto sentinel = on_own_thread<Result<unsigned>>([&]() -> Result<unsigned> {
    auto ns = unshare_net("a cleanup sentinel namespace");
    if (!ns) return ns.error();
    return veth_from(ns->get());  // the thread dies next, the fd with it: the last references
  });
  if (!sentinel) return sentinel.error();
  return wait_gone({*sentinel}, deadline);
}

}  // namespace fabemu
