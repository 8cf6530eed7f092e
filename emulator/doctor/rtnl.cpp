// rtnetlink requests for the doctor's probes, written raw so each probe sees the kernel's answer.
#include "doctor/rtnl.h"

#include <linux/if_link.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>

#include <cstring>

namespace fabemu::doctor {

namespace {

constexpr uint16_t kCreate = NLM_F_CREATE | NLM_F_EXCL;

ifinfomsg link_header(int ifindex = 0) {
  ifinfomsg h{};
  h.ifi_family = AF_UNSPEC;
  h.ifi_index = ifindex;
  return h;
}

Result<void> ack(Result<std::vector<std::string>> r) {
  if (!r) return r.error();
  return ok();
}

}  // namespace

Result<void> create_veth(NetlinkSocket& rtnl, const std::string& name, const std::string& peer) {
  NetlinkMessage m(RTM_NEWLINK, kCreate);
  m.put_header(link_header());
  m.put_string(IFLA_IFNAME, name);
  size_t linkinfo = m.begin_nest(IFLA_LINKINFO);
  m.put_string(IFLA_INFO_KIND, "veth");
  size_t data = m.begin_nest(IFLA_INFO_DATA);
  // The peer is described by a whole ifinfomsg plus attributes inside VETH_INFO_PEER.
  size_t peer_info = m.begin_nest(VETH_INFO_PEER);
  m.put_header(link_header());
  m.put_string(IFLA_IFNAME, peer);
  m.end_nest(peer_info);
  m.end_nest(data);
  m.end_nest(linkinfo);
  return ack(rtnl.transact(m, "creating veth " + name + "/" + peer));
}

Result<void> create_link(NetlinkSocket& rtnl, const std::string& name, const std::string& kind) {
  NetlinkMessage m(RTM_NEWLINK, kCreate);
  m.put_header(link_header());
  m.put_string(IFLA_IFNAME, name);
  size_t linkinfo = m.begin_nest(IFLA_LINKINFO);
  m.put_string(IFLA_INFO_KIND, kind);
  m.end_nest(linkinfo);
  return ack(rtnl.transact(m, "creating " + kind + " " + name));
}

Result<int> link_index(const std::string& name) {
  // if_nametoindex asks through a socket of the calling thread, i.e. in the probe's namespace.
  unsigned index = ::if_nametoindex(name.c_str());
  if (index == 0) return errno_error("looking up interface " + name);
  return static_cast<int>(index);
}

Result<void> set_link_up(NetlinkSocket& rtnl, int ifindex) {
  NetlinkMessage m(RTM_NEWLINK, 0);
  ifinfomsg h = link_header(ifindex);
  h.ifi_flags = IFF_UP;
  h.ifi_change = IFF_UP;
  m.put_header(h);
  return ack(rtnl.transact(m, "bringing up interface " + std::to_string(ifindex)));
}

Result<void> set_link_master(NetlinkSocket& rtnl, int ifindex, int master_ifindex) {
  NetlinkMessage m(RTM_NEWLINK, 0);
  m.put_header(link_header(ifindex));
  m.put_u32(IFLA_MASTER, static_cast<uint32_t>(master_ifindex));
  return ack(rtnl.transact(m, "enslaving interface " + std::to_string(ifindex) + " to " +
                                  std::to_string(master_ifindex)));
}

Result<void> add_ipv4_address(NetlinkSocket& rtnl, int ifindex, in_addr addr, int prefix_len) {
  NetlinkMessage m(RTM_NEWADDR, kCreate);
  ifaddrmsg h{};
  h.ifa_family = AF_INET;
  h.ifa_prefixlen = static_cast<unsigned char>(prefix_len);
  h.ifa_scope = RT_SCOPE_UNIVERSE;
  h.ifa_index = static_cast<unsigned>(ifindex);
  m.put_header(h);
  m.put_attr(IFA_LOCAL, &addr, sizeof(addr));
  m.put_attr(IFA_ADDRESS, &addr, sizeof(addr));
  return ack(rtnl.transact(m, "adding an IPv4 address to interface " + std::to_string(ifindex)));
}

Result<void> add_multipath_route(NetlinkSocket& rtnl, in_addr dst, int prefix_len,
                                 const std::vector<Nexthop>& nexthops) {
  NetlinkMessage m(RTM_NEWROUTE, kCreate);
  rtmsg h{};
  h.rtm_family = AF_INET;
  h.rtm_dst_len = static_cast<unsigned char>(prefix_len);
  h.rtm_table = RT_TABLE_MAIN;
  h.rtm_protocol = RTPROT_STATIC;
  h.rtm_scope = RT_SCOPE_UNIVERSE;
  h.rtm_type = RTN_UNICAST;
  m.put_header(h);
  m.put_attr(RTA_DST, &dst, sizeof(dst));
  // RTA_MULTIPATH is not a nest of attributes but an array of rtnexthop, each followed by its
  // own attributes (here the gateway), so it is laid out by hand.
  std::vector<char> hops;
  for (const Nexthop& nh : nexthops) {
    rtnexthop rtnh{};
    rtnh.rtnh_len = static_cast<unsigned short>(RTNH_LENGTH(RTA_LENGTH(sizeof(in_addr))));
    rtnh.rtnh_ifindex = nh.ifindex;
    rtattr gw{};
    gw.rta_len = static_cast<unsigned short>(RTA_LENGTH(sizeof(in_addr)));
    gw.rta_type = RTA_GATEWAY;
    size_t at = hops.size();
    hops.resize(at + rtnh.rtnh_len);
    std::memcpy(hops.data() + at, &rtnh, sizeof(rtnh));
    std::memcpy(hops.data() + at + RTNH_LENGTH(0), &gw, sizeof(gw));
    std::memcpy(hops.data() + at + RTNH_LENGTH(0) + RTA_LENGTH(0), &nh.gateway, sizeof(in_addr));
  }
  m.put_attr(RTA_MULTIPATH, hops.data(), hops.size());
  return ack(
      rtnl.transact(m, "adding a route with " + std::to_string(nexthops.size()) + " nexthops"));
}

NetlinkMessage new_qdisc_message(int ifindex, uint32_t parent, uint32_t handle,
                                 const std::string& kind) {
  NetlinkMessage m(RTM_NEWQDISC, kCreate);
  tcmsg h{};
  h.tcm_family = AF_UNSPEC;
  h.tcm_ifindex = ifindex;
  h.tcm_parent = parent;
  h.tcm_handle = handle;
  m.put_header(h);
  m.put_string(TCA_KIND, kind);
  return m;
}

Result<void> delete_root_qdisc(NetlinkSocket& rtnl, int ifindex) {
  NetlinkMessage m(RTM_DELQDISC, 0);
  tcmsg h{};
  h.tcm_family = AF_UNSPEC;
  h.tcm_ifindex = ifindex;
  h.tcm_parent = TC_H_ROOT;
  m.put_header(h);
  return ack(rtnl.transact(m, "deleting the root qdisc"));
}

}  // namespace fabemu::doctor
