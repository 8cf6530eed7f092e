// fq by raw rtnetlink (libnl has no fq), offloads by the ethtool ioctl, and the fq probe.
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

#include "util/unique_fd.h"

namespace fabemu {

Result<void> replace_root_fq(NetlinkSocket& rtnl, int ifindex, const FqParams& p) {
  NetlinkMessage m(RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE);
  tcmsg h{};
  h.tcm_family = AF_UNSPEC;
  h.tcm_ifindex = ifindex;
  h.tcm_parent = TC_H_ROOT;
  m.put_header(h);
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

Result<void> disable_offloads(const std::string& ifname) {
  UniqueFd sock(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock.valid()) return errno_error("opening an ethtool socket");
  for (uint32_t cmd : {ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO}) {
    ethtool_value v{};
    v.cmd = cmd;
    v.data = 0;
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    ifr.ifr_data = reinterpret_cast<char*>(&v);
    if (::ioctl(sock.get(), SIOCETHTOOL, &ifr) != 0 && errno != EOPNOTSUPP)
      return errno_error("turning segmentation offloads off on " + ifname);
  }
  return ok();
}

Result<void> probe_fq() {
  std::optional<Result<void>> out;
  std::thread worker([&] {
    if (::unshare(CLONE_NEWNET) != 0)
      return void(out.emplace(errno_error("making a namespace to look for fq")));
    auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, std::chrono::seconds(5));
    if (!rtnl) return void(out.emplace(rtnl.error()));
    FqParams p;
    p.limit = p.flow_limit = 100;
    p.horizon_ns = 10'000'000'000;
    out.emplace(replace_root_fq(*rtnl, 1, p));  // loopback is ifindex 1 in a new namespace
  });
  worker.join();
  return std::move(*out);
}

}  // namespace fabemu
