// Route change notifications (RTNLGRP_IPV4_ROUTE) from the BGP routers' namespaces.
#include "runtime/fib_watch.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>

#include "util/netns.h"

namespace fabemu {

Result<std::unique_ptr<FibWatcher>> FibWatcher::start(const LabModel& m, const LabPaths& paths,
                                                      std::function<void()> on_change) {
  std::unique_ptr<FibWatcher> w(new FibWatcher());
  w->on_change_ = std::move(on_change);
  for (const BgpRouter& r : m.bgp) {
    if (!local_node(m, r.node)) continue;
    UniqueFd fd;
    FABEMU_TRY(run_in_netns(node_netns_path(m, paths, r.node), [&]() -> Result<void> {
      fd = UniqueFd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE));
      if (!fd.valid()) return errno_error("opening an rtnetlink socket");
      sockaddr_nl sa{};
      sa.nl_family = AF_NETLINK;
      sa.nl_groups = RTMGRP_IPV4_ROUTE;
      if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
        return errno_error("subscribing to route changes in " + m.topo.nodes[r.node].name);
      return ok();
    }));
    w->sockets_.emplace_back(r.node, std::move(fd));
  }
  w->thread_ = std::jthread([p = w.get()](std::stop_token stop) { p->run(stop); });
  return w;
}

FibWatcher::~FibWatcher() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

std::vector<FibChange> FibWatcher::changes() const {
  std::lock_guard lock(mu_);
  return changes_;
}

void FibWatcher::run(std::stop_token stop) {
  std::vector<pollfd> fds;
  for (const auto& [node, fd] : sockets_) fds.push_back({fd.get(), POLLIN, 0});
  std::vector<char> buf(1 << 16);
  while (!stop.stop_requested()) {
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    const auto now = std::chrono::steady_clock::now();
    bool changed = false;
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      int routes = 0;
      for (;;) {
        const ssize_t n = ::recv(fds[i].fd, buf.data(), buf.size(), 0);
        if (n <= 0) break;
        int left = static_cast<int>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf.data()); NLMSG_OK(h, left);
             h = NLMSG_NEXT(h, left)) {
          if (h->nlmsg_type != RTM_NEWROUTE && h->nlmsg_type != RTM_DELROUTE) continue;
          const auto* rt = static_cast<const rtmsg*>(NLMSG_DATA(h));
          if (rt->rtm_protocol == RTPROT_BGP && rt->rtm_table == RT_TABLE_MAIN) ++routes;
        }
      }
      if (routes) {
        std::lock_guard lock(mu_);
        changes_.push_back({now, sockets_[i].first, routes});
        changed = true;
      }
    }
    if (changed && on_change_) on_change_();
  }
}

}  // namespace fabemu
