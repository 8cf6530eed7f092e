// The raw rtnetlink requests the doctor's probes need for what `up` never makes: bridges, ifb,
// the qdiscs it does not use (netem, tbf). Veths, addresses and routes the probes make through
// `up`'s own code (apply/veth.h, apply/rtnl.h).
#pragma once

#include <cstdint>
#include <string>

#include "util/netlink.h"
#include "util/result.h"

namespace fabemu::doctor {

// A link that needs no kind-specific data: "bridge", "ifb", "dummy".
Result<void> create_link(NetlinkSocket& rtnl, const std::string& name, const std::string& kind);
Result<int> link_index(const std::string& name);
Result<void> set_link_master(NetlinkSocket& rtnl, int ifindex, int master_ifindex);

// The start of an RTM_NEWQDISC request (create, exclusive) with TCA_KIND set; the caller
// appends TCA_OPTIONS in the kind's own format and sends it.
NetlinkMessage new_qdisc_message(int ifindex, uint32_t parent, uint32_t handle,
                                 const std::string& kind);
Result<void> delete_root_qdisc(NetlinkSocket& rtnl, int ifindex);

}  // namespace fabemu::doctor
