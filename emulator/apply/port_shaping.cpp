// One port under the link model.
#include "apply/port_shaping.h"

#include <linux/netlink.h>

#include <chrono>

#include "apply/veth.h"
#include "shaping/port_setup.h"
#include "util/netns.h"

namespace fabemu {

Result<void> shape_port_here(LinkShaper& shaper, const ShapePort& p, NetlinkSocket& rtnl,
                             bool set_gso) {
  const std::string where = p.ifname + " in " + p.ns;
  // The attachment stays when the lab outlives this process.
  auto attached = shaper.attach_here(p.ifname, p.ns);
  if (!attached) return attached.error();
  attached->release();
  if (attached->ifindex() != p.ifindex)
    return make_error("port " + where + " has ifindex " + std::to_string(attached->ifindex()) +
                          ", the plan gave it " + std::to_string(p.ifindex),
                      EINVAL);
  FABEMU_TRY(shaper.set(p));
  if (p.dcqcn) FABEMU_TRY(shaper.attach_notification_point(p.ifname, p.ifindex, p.ns));
  if (set_gso) {
    if (auto r = set_gso_max_segs(rtnl, static_cast<int>(p.ifindex), p.gso_max_segs); !r)
      return r.error().context(where + " (kernels before 5.19 cannot change it after creation)");
  }
  // With fabric.gso the super-frames stay whole through the fabric: segmentation and checksum
  // offloads on, as the kernel makes a veth.
  if (p.gso_max_segs <= 1) {
    if (auto r = disable_offloads(p.ifname); !r) return r.error().context(where);
  }
  if (p.fq) {
    if (auto r = replace_root_fq(rtnl, static_cast<int>(p.ifindex), *p.fq); !r)
      return r.error().context(where);
  }
  if (!p.pfc_qdisc.empty()) {
    if (auto r = replace_root_kind(rtnl, static_cast<int>(p.ifindex), p.pfc_qdisc); !r)
      return r.error().context(where);
  }
  if (p.htb) {
    if (auto r = replace_root_htb(rtnl, static_cast<int>(p.ifindex), *p.htb, false); !r)
      return r.error().context(where);
  }
  return ok();
}

Result<void> shape_port_in(LinkShaper& shaper, const std::string& netns_path, const ShapePort& p,
                           bool set_gso) {
  return run_in_netns(netns_path, [&]() -> Result<void> {
    auto rtnl = NetlinkSocket::open(NETLINK_ROUTE, std::chrono::seconds(30));
    if (!rtnl) return rtnl.error();
    return shape_port_here(shaper, p, *rtnl, set_gso);
  });
}

}  // namespace fabemu
