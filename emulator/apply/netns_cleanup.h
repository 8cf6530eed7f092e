// Waiting for the kernel to finish freeing network namespaces.
//
// When a namespace's last reference goes (a lab's pins detached, its processes gone) the
// kernel frees it later, on one worker, batch by batch: every device of a batch unregistered
// under the RTNL lock, then sysctls and the rest. A 512-host lab is ~0.55 s of that work, and a
// lab brought up meanwhile waits for the same lock (`up` took 1.5-1.8 s instead of 0.8 s).
// The references themselves may go later than the unmount that drops them (the kernel may put
// a lazily detached tree's mounts from a worker): a sentinel namespace dropped right after the
// unmount was freed 0.11 s into a lab's 0.55 s cleanup here. Hence the probes.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "util/netlink.h"
#include "util/result.h"
#include "util/unique_fd.h"

namespace fabemu {

class NetnsCleanupWatch {
 public:
  // A watcher namespace of its own (freed with the watch).
  static Result<NetnsCleanupWatch> create();

  // Before the namespace pinned at `pin` is dropped: a veth from it into the watcher, which the
  // kernel unregisters when it frees that namespace.
  Result<void> probe(const std::string& pin);
  // Probes made so far; forget(n) drops those made after the first n (a namespace whose pins
  // stayed is not freed, and waiting for it would wait out the timeout).
  size_t probes() const { return probes_.size(); }
  void forget(size_t n) { probes_.resize(std::min(n, probes_.size())); }

  // Returns once every probed namespace has been freed, and then once more a sentinel
  // namespace dropped after that, with a veth into the watcher too: the kernel frees
  // namespaces in the order they were dropped, so by then the batches that held namespaces
  // dropped with the probed ones (a lab's pins all go in one unmount) have been freed. A few
  // tens of milliseconds when nothing is pending. ETIMEDOUT when not done within `timeout`.
  Result<void> wait(std::chrono::milliseconds timeout);

 private:
  NetnsCleanupWatch(UniqueFd watcher, UniqueFd sock, NetlinkSocket rtnl)
      : watcher_(std::move(watcher)), sock_(std::move(sock)), rtnl_(std::move(rtnl)) {}
  Result<unsigned> veth_from(int ns_fd);  // the watcher's end's ifindex
  Result<void> wait_gone(const std::vector<unsigned>& ifindexes,
                         std::chrono::steady_clock::time_point deadline);

  UniqueFd watcher_;
  UniqueFd sock_;  // a socket in the watcher: asks for devices by ifindex without a lock
  NetlinkSocket rtnl_;
  std::vector<unsigned> probes_;
  unsigned made_ = 0;
};

}  // namespace fabemu
