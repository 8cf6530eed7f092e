// Veth pairs with fixed ifindexes and GSO limits, built as RTM_NEWLINK messages.
#include "apply/veth.h"

#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>

namespace fabemu {

namespace {

Result<void> ack(Result<std::vector<std::string>> r) {
  if (!r) return r.error();
  return ok();
}

// One end's ifinfomsg and attributes (in the message itself for end a, inside VETH_INFO_PEER
// for end b).
void put_end(NetlinkMessage& m, const VethEnd& end, uint32_t mtu, uint32_t gso_max_segs, bool up) {
  ifinfomsg h{};
  h.ifi_family = AF_UNSPEC;
  h.ifi_index = static_cast<int>(end.ifindex);
  if (up) {
    h.ifi_flags = IFF_UP;
    h.ifi_change = IFF_UP;
  }
  m.put_header(h);
  m.put_string(IFLA_IFNAME, end.ifname);
  m.put_u32(IFLA_MTU, mtu);
  m.put_u32(IFLA_NET_NS_FD, static_cast<uint32_t>(end.ns_fd));
  if (gso_max_segs) m.put_u32(IFLA_GSO_MAX_SEGS, gso_max_segs);
  if (end.mac) m.put_attr(IFLA_ADDRESS, end.mac->data(), end.mac->size());
}

}  // namespace

Result<void> create_veth_pair(NetlinkSocket& rtnl, const VethEnd& a, const VethEnd& b, uint32_t mtu,
                              uint32_t gso_max_segs) {
  NetlinkMessage m(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  put_end(m, a, mtu, gso_max_segs, true);
  size_t linkinfo = m.begin_nest(IFLA_LINKINFO);
  m.put_string(IFLA_INFO_KIND, "veth");
  size_t data = m.begin_nest(IFLA_INFO_DATA);
  size_t peer = m.begin_nest(VETH_INFO_PEER);
  put_end(m, b, mtu, gso_max_segs, false);
  m.end_nest(peer);
  m.end_nest(data);
  m.end_nest(linkinfo);
  std::string what = "creating veth " + a.ifname + " <-> " + b.ifname;
  if (a.ifindex || b.ifindex)
    what += " (ifindex " + std::to_string(a.ifindex) + "/" + std::to_string(b.ifindex) + ")";
  return ack(rtnl.transact(m, what));
}

Result<void> set_gso_max_segs(NetlinkSocket& rtnl, int ifindex, uint32_t segs) {
  NetlinkMessage m(RTM_NEWLINK, 0);
  ifinfomsg h{};
  h.ifi_family = AF_UNSPEC;
  h.ifi_index = ifindex;
  m.put_header(h);
  m.put_u32(IFLA_GSO_MAX_SEGS, segs);
  return ack(rtnl.transact(m, "setting gso_max_segs " + std::to_string(segs) + " on ifindex " +
                                  std::to_string(ifindex)));
}

}  // namespace fabemu
