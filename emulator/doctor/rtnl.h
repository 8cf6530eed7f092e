// The rtnetlink requests the doctor's probes need: links, addresses, routes and qdiscs.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "util/netlink.h"
#include "util/result.h"

namespace fabemu::doctor {

Result<void> create_veth(NetlinkSocket& rtnl, const std::string& name, const std::string& peer);
// A link that needs no kind-specific data: "bridge", "ifb", "dummy".
Result<void> create_link(NetlinkSocket& rtnl, const std::string& name, const std::string& kind);
Result<int> link_index(const std::string& name);
Result<void> set_link_up(NetlinkSocket& rtnl, int ifindex);
Result<void> set_link_master(NetlinkSocket& rtnl, int ifindex, int master_ifindex);
Result<void> add_ipv4_address(NetlinkSocket& rtnl, int ifindex, in_addr addr, int prefix_len);

struct Nexthop {
  in_addr gateway;
  int ifindex;
};
// One route with several nexthops (RTA_MULTIPATH): what a router fabric's ECMP group is.
Result<void> add_multipath_route(NetlinkSocket& rtnl, in_addr dst, int prefix_len,
                                 const std::vector<Nexthop>& nexthops);

// The start of an RTM_NEWQDISC request (create, exclusive) with TCA_KIND set; the caller
// appends TCA_OPTIONS in the kind's own format and sends it.
NetlinkMessage new_qdisc_message(int ifindex, uint32_t parent, uint32_t handle,
                                 const std::string& kind);
Result<void> delete_root_qdisc(NetlinkSocket& rtnl, int ifindex);

}  // namespace fabemu::doctor
