// VXLAN through libnl's rtnl_link_vxlan API.
#include "apply/vxlan.h"

#include <arpa/inet.h>
#include <linux/if_link.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/link/vxlan.h>

#include <memory>

#include "apply/rtnl.h"

namespace fabemu {
namespace {

struct LinkFree {
  void operator()(rtnl_link* l) const { rtnl_link_put(l); }
};
struct AddrFree {
  void operator()(nl_addr* a) const { nl_addr_put(a); }
};
struct SockFree {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};

std::unique_ptr<nl_addr, AddrFree> ipv4_addr(Ipv4 ip) {
  const uint32_t be = htonl(ip.v);
  return std::unique_ptr<nl_addr, AddrFree>(nl_addr_build(AF_INET, &be, sizeof be));
}

}  // namespace

Result<void> create_vxlan(const VxlanEnd& e) {
  const std::string what = "creating VXLAN " + e.ifname + " (vni " + std::to_string(e.vni) + ", " +
                           e.local.str() + " -> " + e.remote.str() + ")";
  std::unique_ptr<nl_sock, SockFree> sock(nl_socket_alloc());
  if (!sock) return make_error(what + ": allocating a netlink socket", ENOMEM);
  if (int err = nl_connect(sock.get(), NETLINK_ROUTE); err < 0) return nl_error(err, what);
  std::unique_ptr<rtnl_link, LinkFree> link(rtnl_link_vxlan_alloc());
  auto local = ipv4_addr(e.local), remote = ipv4_addr(e.remote);
  if (!link || !local || !remote) return make_error(what, ENOMEM);
  rtnl_link_set_name(link.get(), e.ifname.c_str());
  if (e.ifindex) rtnl_link_set_ifindex(link.get(), static_cast<int>(e.ifindex));
  rtnl_link_set_mtu(link.get(), e.mtu);
  rtnl_link_set_ns_fd(link.get(), e.ns_fd);
  std::unique_ptr<nl_addr, AddrFree> mac;
  if (e.mac) {
    mac.reset(nl_addr_build(AF_LLC, e.mac->data(), e.mac->size()));
    if (!mac) return make_error(what, ENOMEM);
    rtnl_link_set_addr(link.get(), mac.get());
  }
  int err = rtnl_link_vxlan_set_id(link.get(), e.vni);
  // A unicast "group" is the remote end: the tunnel goes to one machine, never to a multicast
  // group, and never learns addresses (the two ends are all there is).
  if (err >= 0) err = rtnl_link_vxlan_set_group(link.get(), remote.get());
  if (err >= 0) err = rtnl_link_vxlan_set_local(link.get(), local.get());
  if (err >= 0)
    err = rtnl_link_vxlan_set_link(link.get(), static_cast<uint32_t>(e.underlay_ifindex));
  if (err >= 0) err = rtnl_link_vxlan_set_port(link.get(), e.port);
  if (err >= 0) err = rtnl_link_vxlan_set_learning(link.get(), 0);
  if (err < 0) return nl_error(err, what);
  if (err = rtnl_link_add(sock.get(), link.get(), NLM_F_CREATE | NLM_F_EXCL); err < 0)
    return nl_error(err, what);
  return ok();
}

}  // namespace fabemu
