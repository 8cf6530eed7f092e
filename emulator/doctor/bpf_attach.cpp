// BPF load and attach through the raw bpf(2) syscall and rtnetlink, without libbpf.
#include "doctor/bpf_attach.h"

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "doctor/rtnl.h"
#include "util/bpf_sys.h"

namespace fabemu::doctor {

Result<UniqueFd> load_pass_sched_cls() {
  // r0 = 0 (TC_ACT_OK: let the packet through); exit.
  bpf_insn insns[2]{};
  insns[0].code = BPF_ALU64 | BPF_MOV | BPF_K;
  insns[0].dst_reg = BPF_REG_0;
  insns[0].imm = 0;
  insns[1].code = BPF_JMP | BPF_EXIT;
  static const char kLicense[] = "GPL";

  bpf_attr attr{};
  attr.prog_type = BPF_PROG_TYPE_SCHED_CLS;
  attr.insn_cnt = 2;
  attr.insns = reinterpret_cast<uint64_t>(insns);
  attr.license = reinterpret_cast<uint64_t>(kLicense);
  std::strncpy(attr.prog_name, "fabemu_probe", sizeof(attr.prog_name) - 1);
  long fd = sys_bpf(BPF_PROG_LOAD, &attr);
  if (fd < 0) return errno_error("loading a 2-instruction SCHED_CLS program (BPF_PROG_LOAD)");
  return UniqueFd(static_cast<int>(fd));
}

Result<void> add_clsact(NetlinkSocket& rtnl, int ifindex) {
  NetlinkMessage m = new_qdisc_message(ifindex, TC_H_CLSACT, TC_H_MAKE(TC_H_CLSACT, 0), "clsact");
  auto r = rtnl.transact(m, "creating qdisc clsact");
  if (!r) return r.error();
  return ok();
}

Result<void> attach_cls_bpf_egress(NetlinkSocket& rtnl, int ifindex, int prog_fd) {
  NetlinkMessage m(RTM_NEWTFILTER, NLM_F_CREATE | NLM_F_EXCL);
  tcmsg h{};
  h.tcm_family = AF_UNSPEC;
  h.tcm_ifindex = ifindex;
  h.tcm_parent = TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS);
  h.tcm_handle = 1;
  h.tcm_info = TC_H_MAKE(1U << 16, htons(ETH_P_ALL));  // priority 1, every protocol
  m.put_header(h);
  m.put_string(TCA_KIND, "bpf");
  size_t options = m.begin_nest(TCA_OPTIONS);
  m.put_u32(TCA_BPF_FD, static_cast<uint32_t>(prog_fd));
  m.put_string(TCA_BPF_NAME, "fabemu_probe");
  m.put_u32(TCA_BPF_FLAGS, TCA_BPF_FLAG_ACT_DIRECT);
  m.end_nest(options);
  auto r = rtnl.transact(m, "attaching a cls_bpf direct-action filter at clsact egress");
  if (!r) return r.error();
  return ok();
}

Result<UniqueFd> create_tcx_egress_link(int ifindex, int prog_fd) {
  bpf_attr attr{};
  attr.link_create.prog_fd = static_cast<uint32_t>(prog_fd);
  attr.link_create.target_ifindex = static_cast<uint32_t>(ifindex);
  attr.link_create.attach_type = kBpfTcxEgress;
  long fd = sys_bpf(BPF_LINK_CREATE, &attr);
  if (fd < 0) return errno_error("creating a BPF_TCX_EGRESS link (BPF_LINK_CREATE)");
  return UniqueFd(static_cast<int>(fd));
}

}  // namespace fabemu::doctor
