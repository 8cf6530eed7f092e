// rtnetlink through libnl-route: link state, addresses, (multipath) routes.
#include "apply/rtnl.h"

#include <arpa/inet.h>
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/cache.h>
#include <netlink/errno.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/neighbour.h>
#include <netlink/route/route.h>
#include <netlink/route/rule.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace fabemu {
namespace {

template <typename T, void (*F)(T*)>
struct Deleter {
  void operator()(T* p) const { F(p); }
};
using LinkPtr = std::unique_ptr<rtnl_link, Deleter<rtnl_link, rtnl_link_put>>;
using AddrPtr = std::unique_ptr<rtnl_addr, Deleter<rtnl_addr, rtnl_addr_put>>;
using RoutePtr = std::unique_ptr<rtnl_route, Deleter<rtnl_route, rtnl_route_put>>;
using NlAddrPtr = std::unique_ptr<nl_addr, Deleter<nl_addr, nl_addr_put>>;

NlAddrPtr to_nl(Prefix p) {
  uint32_t be = htonl(p.addr.v);
  NlAddrPtr a(nl_addr_build(AF_INET, &be, sizeof be));
  if (a) nl_addr_set_prefixlen(a.get(), p.len);
  return a;
}

// The IPv4 address in a libnl address; unset for none or another family.
std::optional<Ipv4> ipv4_of(const nl_addr* a) {
  if (!a || nl_addr_get_len(a) != 4) return std::nullopt;
  uint32_t be;
  std::memcpy(&be, nl_addr_get_binary_addr(a), 4);
  return Ipv4{ntohl(be)};
}

int errno_for(int nl_err) {
  switch (nl_err < 0 ? -nl_err : nl_err) {
    case NLE_EXIST:
      return EEXIST;
    case NLE_NODEV:
      return ENODEV;
    case NLE_PERM:
      return EPERM;
    case NLE_INVAL:
      return EINVAL;
    case NLE_OPNOTSUPP:
      return EOPNOTSUPP;
    case NLE_NOADDR:
      return EADDRNOTAVAIL;
    case NLE_OBJ_NOTFOUND:
      return ENOENT;
    case NLE_NOMEM:
      return ENOMEM;
    case NLE_BUSY:
      return EBUSY;
    case NLE_RANGE:
      return ERANGE;
    default:
      return EIO;
  }
}

}  // namespace

Error nl_error(int nl_err, const std::string& what) {
  int err = errno_for(nl_err);
  // Where libnl's code has no errno of its own, keep its words.
  return err == EIO ? make_error(what + ": " + nl_geterror(nl_err), EIO) : make_error(what, err);
}

void RtnlSocket::Free::operator()(nl_sock* s) const {
  nl_socket_free(s);
}

Result<RtnlSocket> RtnlSocket::open() {
  // libnl builds each request in one buffer of this size (default a page): a spine of a
  // 256-leaf fabric routes another spine's loopback over 256 next hops (4.1 KB). Process-wide,
  // so set once, before any thread builds a message.
  static std::once_flag sized;
  std::call_once(sized, [] { nlmsg_set_default_size(64 * 1024); });
  std::unique_ptr<nl_sock, Free> s(nl_socket_alloc());
  if (!s) return make_error("allocating netlink socket", ENOMEM);
  if (int err = nl_connect(s.get(), NETLINK_ROUTE); err < 0)
    return nl_error(err, "connecting rtnetlink socket");
  return RtnlSocket(std::move(s));
}

Result<void> RtnlSocket::set_up(int ifindex, const std::string& what) {
  LinkPtr orig(rtnl_link_alloc()), change(rtnl_link_alloc());
  if (!orig || !change) return make_error("allocating link", ENOMEM);
  rtnl_link_set_ifindex(orig.get(), ifindex);
  rtnl_link_set_flags(change.get(), IFF_UP);
  if (int err = rtnl_link_change(sock_.get(), orig.get(), change.get(), 0); err < 0)
    return nl_error(err, "setting " + what + " up");
  return ok();
}

Result<void> RtnlSocket::add_address(int ifindex, Prefix p, const std::string& what) {
  AddrPtr addr(rtnl_addr_alloc());
  NlAddrPtr local = to_nl(p);
  if (!addr || !local) return make_error("allocating address", ENOMEM);
  rtnl_addr_set_ifindex(addr.get(), ifindex);
  rtnl_addr_set_family(addr.get(), AF_INET);
  rtnl_addr_set_local(addr.get(), local.get());
  if (int err = rtnl_addr_add(sock_.get(), addr.get(), NLM_F_EXCL); err < 0)
    return nl_error(err, "adding address " + p.str() + " to " + what);
  return ok();
}

Result<void> RtnlSocket::add_neighbour(int ifindex, Ipv4 ip, const std::array<uint8_t, 6>& mac,
                                       const std::string& what) {
  std::unique_ptr<rtnl_neigh, Deleter<rtnl_neigh, rtnl_neigh_put>> n(rtnl_neigh_alloc());
  NlAddrPtr dst = to_nl(Prefix{ip, 32});
  NlAddrPtr ll(nl_addr_build(AF_LLC, mac.data(), mac.size()));
  if (!n || !dst || !ll) return make_error("allocating neighbour", ENOMEM);
  rtnl_neigh_set_ifindex(n.get(), ifindex);
  rtnl_neigh_set_family(n.get(), AF_INET);
  rtnl_neigh_set_dst(n.get(), dst.get());
  rtnl_neigh_set_lladdr(n.get(), ll.get());
  rtnl_neigh_set_state(n.get(), NUD_PERMANENT);
  if (int err = rtnl_neigh_add(sock_.get(), n.get(), NLM_F_CREATE | NLM_F_REPLACE); err < 0)
    return nl_error(err, "adding neighbour " + ip.str() + " on " + what);
  return ok();
}

Result<void> RtnlSocket::add_route(Prefix dst, const std::vector<Hop>& hops,
                                   std::optional<Ipv4> src, const std::string& what,
                                   std::optional<uint32_t> rto_min_ms) {
  return put_route(dst, hops, src, NLM_F_CREATE | NLM_F_EXCL, "adding route " + what, rto_min_ms);
}

Result<void> RtnlSocket::replace_route(Prefix dst, const std::vector<Hop>& hops,
                                       std::optional<Ipv4> src, const std::string& what) {
  return put_route(dst, hops, src, NLM_F_CREATE | NLM_F_REPLACE, "replacing route " + what);
}

namespace {

// An IPv4 route object of the main table to dst, or null when libnl is out of memory.
RoutePtr main_table_route(Prefix dst) {
  RoutePtr route(rtnl_route_alloc());
  NlAddrPtr d = to_nl(dst);
  if (!route || !d) return nullptr;
  rtnl_route_set_family(route.get(), AF_INET);
  rtnl_route_set_dst(route.get(), d.get());
  rtnl_route_set_table(route.get(), RT_TABLE_MAIN);
  return route;
}

}  // namespace

Result<void> RtnlSocket::delete_route(Prefix dst, const std::string& what) {
  RoutePtr route = main_table_route(dst);
  if (!route) return make_error("allocating route", ENOMEM);
  rtnl_route_set_scope(route.get(), RT_SCOPE_NOWHERE);  // any scope
  if (int err = rtnl_route_delete(sock_.get(), route.get(), 0); err < 0) {
    if (err == -NLE_OBJ_NOTFOUND) return ok();
    return nl_error(err, "deleting route " + what);
  }
  return ok();
}

Result<void> RtnlSocket::put_route(Prefix dst, const std::vector<Hop>& hops,
                                   std::optional<Ipv4> src, int flags, const std::string& what,
                                   std::optional<uint32_t> rto_min_ms) {
  RoutePtr route = main_table_route(dst);
  if (!route) return make_error("allocating route", ENOMEM);
  rtnl_route_set_protocol(route.get(), RTPROT_STATIC);
  rtnl_route_set_scope(route.get(), RT_SCOPE_UNIVERSE);
  rtnl_route_set_type(route.get(), RTN_UNICAST);
  NlAddrPtr pref = src ? to_nl(Prefix{*src, 32}) : nullptr;
  if (pref) rtnl_route_set_pref_src(route.get(), pref.get());
  if (rto_min_ms) {
    // TCP reads RTAX_RTO_MIN only when it is locked (tcp_rto_min()), as `ip route ... rto_min
    // lock N` sets it.
    int err = rtnl_route_set_metric(route.get(), RTAX_RTO_MIN, *rto_min_ms);
    if (err >= 0) err = rtnl_route_set_metric(route.get(), RTAX_LOCK, 1u << RTAX_RTO_MIN);
    if (err < 0) return nl_error(err, what + ": setting rto_min");
  }
  for (const Hop& h : hops) {
    rtnl_nexthop* nh = rtnl_route_nh_alloc();
    if (!nh) return make_error("allocating nexthop", ENOMEM);
    NlAddrPtr gw = to_nl(Prefix{h.gateway, 32});
    rtnl_route_nh_set_ifindex(nh, h.ifindex);
    rtnl_route_nh_set_gateway(nh, gw.get());
    rtnl_route_add_nexthop(route.get(), nh);  // the route owns nh now
  }
  if (int err = rtnl_route_add(sock_.get(), route.get(), flags); err < 0)
    return nl_error(err, what);
  return ok();
}

Result<std::vector<RtnlSocket::KernelRoute>> RtnlSocket::gateway_routes() {
  nl_cache* raw = nullptr;
  if (int err = rtnl_route_alloc_cache(sock_.get(), AF_INET, 0, &raw); err < 0)
    return nl_error(err, "reading the routing table");
  std::unique_ptr<nl_cache, Deleter<nl_cache, nl_cache_free>> cache(raw);
  std::vector<KernelRoute> out;
  for (nl_object* o = nl_cache_get_first(cache.get()); o; o = nl_cache_get_next(o)) {
    auto* r = reinterpret_cast<rtnl_route*>(o);
    if (rtnl_route_get_table(r) != RT_TABLE_MAIN || rtnl_route_get_type(r) != RTN_UNICAST) continue;
    KernelRoute k;
    nl_addr* dst = rtnl_route_get_dst(r);
    const auto dst_ip = ipv4_of(dst);
    k.dst =
        dst_ip ? Prefix{*dst_ip, static_cast<int>(nl_addr_get_prefixlen(dst))} : Prefix{Ipv4{0}, 0};
    for (int i = 0, n = rtnl_route_get_nnexthops(r); i < n; ++i)
      if (auto gw = ipv4_of(rtnl_route_nh_get_gateway(rtnl_route_nexthop_n(r, i))))
        k.gateways.push_back(*gw);
    if (k.gateways.empty()) continue;
    std::sort(k.gateways.begin(), k.gateways.end());
    out.push_back(std::move(k));
  }
  return out;
}

Result<void> RtnlSocket::blackhole_rule(Prefix src, Prefix dst, uint32_t prio, bool add) {
  std::unique_ptr<rtnl_rule, Deleter<rtnl_rule, rtnl_rule_put>> rule(rtnl_rule_alloc());
  NlAddrPtr s = to_nl(src), d = to_nl(dst);
  if (!rule || !s || !d) return make_error("allocating a rule", ENOMEM);
  rtnl_rule_set_family(rule.get(), AF_INET);
  rtnl_rule_set_prio(rule.get(), prio);
  if (int err = rtnl_rule_set_src(rule.get(), s.get()); err < 0) return nl_error(err, "rule src");
  if (int err = rtnl_rule_set_dst(rule.get(), d.get()); err < 0) return nl_error(err, "rule dst");
  rtnl_rule_set_action(rule.get(), FR_ACT_BLACKHOLE);
  const std::string what = "rule from " + src.str() + " to " + dst.str() + " blackhole";
  if (add) {
    if (int err = rtnl_rule_add(sock_.get(), rule.get(), NLM_F_CREATE | NLM_F_EXCL); err < 0)
      return nl_error(err, "adding " + what);
  } else if (int err = rtnl_rule_delete(sock_.get(), rule.get(), 0);
             err < 0 && err != -NLE_OBJ_NOTFOUND && err != -NLE_NOADDR) {
    return nl_error(err, "deleting " + what);
  }
  return ok();
}

}  // namespace fabemu
