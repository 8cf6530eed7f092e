// rtnetlink requests for the doctor's probes, written raw so each probe sees the kernel's answer.
#include "doctor/rtnl.h"

#include <linux/if_link.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
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

Result<void> set_link_master(NetlinkSocket& rtnl, int ifindex, int master_ifindex) {
  NetlinkMessage m(RTM_NEWLINK, 0);
  m.put_header(link_header(ifindex));
  m.put_u32(IFLA_MASTER, static_cast<uint32_t>(master_ifindex));
  return ack(rtnl.transact(m, "enslaving interface " + std::to_string(ifindex) + " to " +
                                  std::to_string(master_ifindex)));
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
