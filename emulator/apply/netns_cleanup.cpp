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
#include "util/netlink.h"
#include "util/netns.h"
#include "util/unique_fd.h"

namespace fabemu {
namespace {

using Clock = std::chrono::steady_clock;

// A new network namespace for the calling thread, which stays in it; its fd.
Result<UniqueFd> unshare_net(const char* what) {
  if (unshare_retrying(CLONE_NEWNET) != 0) return errno_error(std::string("creating ") + what);
  return open_namespace("/proc/thread-self/ns/net");
}

// On a thread of its own: it moves between namespaces.
Result<void> sentinel_rounds(std::chrono::milliseconds timeout) {
  auto watcher = unshare_net("the cleanup watcher's namespace");
  if (!watcher) return watcher.error();
  // Asks the watcher's namespace for a device by ifindex, which needs no lock of the kernel's.
  UniqueFd probe(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (probe.get() < 0) return errno_error("opening a socket in the cleanup watcher's namespace");
  auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, timeout);
  if (!rtnl) return rtnl.error();
  const auto deadline = Clock::now() + timeout;
  for (int round = 0; round < 2; ++round) {
    auto sentinel = unshare_net("a cleanup sentinel namespace");
    if (!sentinel) return sentinel.error();
    FABEMU_TRY(enter_namespace(watcher->get(), CLONE_NEWNET, "the cleanup watcher's namespace"));
    FABEMU_TRY(create_veth_pair(*rtnl, VethEnd{sentinel->get(), "s", 0, std::nullopt},
                                VethEnd{watcher->get(), "w", 0, std::nullopt}, 1500, 0));
    const unsigned ifindex = if_nametoindex("w");
    if (ifindex == 0) return errno_error("finding the cleanup sentinel's veth");
    sentinel->reset();  // its last reference: the kernel queues it behind what is pending
    for (;;) {
      ifreq req{};
      req.ifr_ifindex = static_cast<int>(ifindex);
      if (::ioctl(probe.get(), SIOCGIFNAME, &req) != 0) {
        if (errno == ENODEV) break;  // the sentinel's batch unregistered it
        return errno_error("watching the cleanup sentinel's veth");
      }
      if (Clock::now() > deadline)
        return make_error("the kernel was still freeing network namespaces after " +
                              std::to_string(timeout.count() / 1000.0).substr(0, 4) + " s",
                          ETIMEDOUT);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // The watcher's own veth name is free again for the second round.
  }
  return {};
}

}  // namespace

Result<void> wait_for_netns_cleanup(std::chrono::milliseconds timeout) {
  Result<void> result;
  std::thread t([&] { result = sentinel_rounds(timeout); });
  t.join();
  return result;
}

}  // namespace fabemu
