// Interface dump through libnl's link cache, taken inside the node's namespace.
#include "apply/inspect.h"

#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <sched.h>

#include <memory>

#include "apply/rtnl.h"
#include "util/netns.h"

namespace fabemu {

Result<std::vector<InterfaceState>> read_interfaces(const std::string& netns_path) {
  auto home = open_namespace("/proc/thread-self/ns/net");
  if (!home) return home.error();
  auto target = open_namespace(netns_path);
  if (!target) return target.error();
  FABEMU_TRY(enter_namespace(target->get(), CLONE_NEWNET, netns_path));
  // The socket keeps the namespace it was opened in; go home right away.
  std::unique_ptr<nl_sock, void (*)(nl_sock*)> sock(nl_socket_alloc(), nl_socket_free);
  int err = sock ? nl_connect(sock.get(), NETLINK_ROUTE) : -NLE_NOMEM;
  FABEMU_TRY(enter_namespace(home->get(), CLONE_NEWNET, "home"));
  if (err < 0) return nl_error(err, "connecting rtnetlink in " + netns_path);

  nl_cache* raw = nullptr;
  if (int e = rtnl_link_alloc_cache(sock.get(), AF_UNSPEC, &raw); e < 0)
    return nl_error(e, "listing interfaces in " + netns_path);
  std::unique_ptr<nl_cache, void (*)(nl_cache*)> cache(raw, nl_cache_free);
  std::vector<InterfaceState> out;
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* l = reinterpret_cast<rtnl_link*>(o);
    InterfaceState s;
    s.name = rtnl_link_get_name(l);
    unsigned flags = rtnl_link_get_flags(l);
    s.up = flags & IFF_UP;
    s.running = flags & IFF_RUNNING;
    s.mtu = rtnl_link_get_mtu(l);
    s.rx_packets = rtnl_link_get_stat(l, RTNL_LINK_RX_PACKETS);
    s.tx_packets = rtnl_link_get_stat(l, RTNL_LINK_TX_PACKETS);
    s.rx_bytes = rtnl_link_get_stat(l, RTNL_LINK_RX_BYTES);
    s.tx_bytes = rtnl_link_get_stat(l, RTNL_LINK_TX_BYTES);
    s.rx_dropped = rtnl_link_get_stat(l, RTNL_LINK_RX_DROPPED);
    s.tx_dropped = rtnl_link_get_stat(l, RTNL_LINK_TX_DROPPED);
    s.rx_errors = rtnl_link_get_stat(l, RTNL_LINK_RX_ERRORS);
    s.tx_errors = rtnl_link_get_stat(l, RTNL_LINK_TX_ERRORS);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace fabemu
