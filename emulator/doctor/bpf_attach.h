// The BPF steps the link model depends on, in their smallest form: load, clsact attach, tcx link.
#pragma once

#include "util/netlink.h"
#include "util/result.h"

namespace fabemu::doctor {

// Loads `r0 = 0; exit` as BPF_PROG_TYPE_SCHED_CLS: a program that passes every packet.
Result<UniqueFd> load_pass_sched_cls();

// Creates the clsact qdisc on `ifindex` (the hook the tc attach path needs).
Result<void> add_clsact(NetlinkSocket& rtnl, int ifindex);

// Attaches `prog_fd` at clsact egress as a cls_bpf direct-action filter, like
// `tc filter add dev X egress bpf da fd N`, which is what libbpf's bpf_tc_attach sends.
Result<void> attach_cls_bpf_egress(NetlinkSocket& rtnl, int ifindex, int prog_fd);

// Attaches `prog_fd` at tcx egress with BPF_LINK_CREATE; the link detaches when the fd closes.
Result<UniqueFd> create_tcx_egress_link(int ifindex, int prog_fd);

}  // namespace fabemu::doctor
