// fq and htb by raw rtnetlink (libnl has no fq), offloads by the ethtool ioctl, the probes.
#include "shaping/port_setup.h"

#include <linux/ethtool.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "util/unique_fd.h"

namespace fabemu {

namespace {

constexpr uint32_t kHtbRoot = TC_H_MAKE(1U << 16, 0);   // 1:
constexpr uint32_t kHtbClass = TC_H_MAKE(1U << 16, 1);  // 1:1
constexpr uint32_t kHtbLeaf = TC_H_MAKE(2U << 16, 0);   // 2: (bfifo under 1:1)

tcmsg tc_header(int ifindex, uint32_t parent, uint32_t handle) {
  tcmsg h{};
  h.tcm_family = AF_UNSPEC;
  h.tcm_ifindex = ifindex;
  h.tcm_parent = parent;
  h.tcm_handle = handle;
  return h;
}

}  // namespace

Result<void> replace_root_fq(NetlinkSocket& rtnl, int ifindex, const FqParams& p) {
  NetlinkMessage m(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE);
  m.put_header(tc_header(ifindex, TC_H_ROOT, 0));
  m.put_string(TCA_KIND, "fq");
  size_t options = m.begin_nest(TCA_OPTIONS);
  m.put_u32(TCA_FQ_PLIMIT, p.limit);
  m.put_u32(TCA_FQ_FLOW_PLIMIT, p.flow_limit);
  // In microseconds, as fq keeps it.
  const uint64_t horizon_us = std::min<uint64_t>(p.horizon_ns / 1000, UINT32_MAX);
  m.put_u32(TCA_FQ_HORIZON, static_cast<uint32_t>(horizon_us));
  m.put_u8(TCA_FQ_HORIZON_DROP, 1);
  m.end_nest(options);
  auto r = rtnl.transact(m, "making fq the root qdisc of ifindex " + std::to_string(ifindex));
  if (!r) return r.error();
  return ok();
}

Result<void> replace_root_htb(NetlinkSocket& rtnl, int ifindex, const HtbParams& p, bool exists) {
  const std::string where = " of ifindex " + std::to_string(ifindex);
  if (!exists) {
    NetlinkMessage q(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE);
    q.put_header(tc_header(ifindex, TC_H_ROOT, kHtbRoot));
    q.put_string(TCA_KIND, "htb");
    size_t options = q.begin_nest(TCA_OPTIONS);
    tc_htb_glob glob{};
    glob.version = TC_HTB_PROTOVER;
    glob.rate2quantum = 10;
    glob.defcls = 1;  // everything goes to 1:1
    q.put_attr(TCA_HTB_INIT, &glob, sizeof(glob));
    q.end_nest(options);
    if (auto r = rtnl.transact(q, "making htb the root qdisc" + where); !r) return r.error();
  }

  const uint64_t bytes_per_s = std::max<uint64_t>(p.rate_bps / 8, 1);
  tc_htb_opt opt{};
  opt.rate.linklayer = TC_LINKLAYER_ETHERNET;  // no rate table: the kernel computes lengths
  opt.rate.rate = static_cast<uint32_t>(std::min<uint64_t>(bytes_per_s, UINT32_MAX));
  opt.ceil = opt.rate;
  // htb keeps bursts as time at the rate, in 64 ns ticks.
  const uint64_t burst_ns = p.burst_bytes * 1'000'000'000ULL / bytes_per_s;
  opt.buffer = opt.cbuffer = static_cast<uint32_t>(std::min<uint64_t>(burst_ns >> 6, UINT32_MAX));
  opt.quantum = 65536;
  NetlinkMessage c(RTM_NEWTCLASS, NLM_F_CREATE | NLM_F_REPLACE);
  c.put_header(tc_header(ifindex, kHtbRoot, kHtbClass));
  c.put_string(TCA_KIND, "htb");
  size_t options = c.begin_nest(TCA_OPTIONS);
  c.put_attr(TCA_HTB_PARMS, &opt, sizeof(opt));
  if (bytes_per_s >= UINT32_MAX) {
    c.put_attr(TCA_HTB_RATE64, &bytes_per_s, sizeof(bytes_per_s));
    c.put_attr(TCA_HTB_CEIL64, &bytes_per_s, sizeof(bytes_per_s));
  }
  c.end_nest(options);
  if (auto r = rtnl.transact(c, "setting the htb class" + where); !r) return r.error();

  NetlinkMessage f(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE);
  f.put_header(tc_header(ifindex, kHtbClass, kHtbLeaf));
  f.put_string(TCA_KIND, "bfifo");
  tc_fifo_qopt fifo{};
  fifo.limit = p.limit_bytes;
  f.put_attr(TCA_OPTIONS, &fifo, sizeof(fifo));
  if (auto r = rtnl.transact(f, "setting the htb class's FIFO" + where); !r) return r.error();
  return ok();
}

Result<void> replace_root_kind(NetlinkSocket& rtnl, int ifindex, const std::string& kind) {
  NetlinkMessage m(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE);
  m.put_header(tc_header(ifindex, TC_H_ROOT, TC_H_MAKE(1U << 16, 0)));
  m.put_string(TCA_KIND, kind);
  auto r =
      rtnl.transact(m, "making " + kind + " the root qdisc of ifindex " + std::to_string(ifindex));
  if (!r) return r.error();
  return ok();
}

Result<void> remove_root_qdisc(NetlinkSocket& rtnl, int ifindex) {
  NetlinkMessage m(RTM_DELQDISC, 0);
  m.put_header(tc_header(ifindex, TC_H_ROOT, 0));
  auto r = rtnl.transact(m, "removing the root qdisc of ifindex " + std::to_string(ifindex));
  if (!r && errno_of(r.error()) != ENOENT && errno_of(r.error()) != EINVAL) return r.error();
  return ok();
}

Result<void> disable_offloads(const std::string& ifname, bool tx_checksum) {
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return errno_error("opening an ethtool socket");
  std::vector<uint32_t> cmds = {ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO};
  if (tx_checksum) cmds.insert(cmds.begin(), ETHTOOL_STXCSUM);  // TSO needs it: off first
  for (uint32_t cmd : cmds) {
    ethtool_value v{};
    v.cmd = cmd;
    v.data = 0;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = reinterpret_cast<char*>(&v);
    if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0 && errno != EOPNOTSUPP)
      return errno_error("turning offloads off on " + ifname);
  }
  return ok();
}

Result<void> try_root_fq(NetlinkSocket& rtnl, int ifindex) {
  FqParams p;
  p.limit = p.flow_limit = 100;
  p.horizon_ns = 10'000'000'000;
  FABEMU_TRY(replace_root_fq(rtnl, ifindex, p));
  return remove_root_qdisc(rtnl, ifindex);
}

Result<void> try_root_htb(NetlinkSocket& rtnl, int ifindex) {
  HtbParams p;
  p.rate_bps = 1'000'000;
  p.burst_bytes = 3000;
  p.limit_bytes = 100'000;
  FABEMU_TRY(replace_root_htb(rtnl, ifindex, p, /*exists=*/false));
  return remove_root_qdisc(rtnl, ifindex);
}

}  // namespace fabemu
