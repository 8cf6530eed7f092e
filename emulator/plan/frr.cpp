// FRR configuration text for RFC 7938 eBGP with BFD.
#include "plan/frr.h"

#include <algorithm>
#include <cmath>

namespace fabemu {

std::vector<std::string> frr_daemons(const LabModel& m) {
  if (m.scenario.fabric.bfd) return {"zebra", "bfdd", "bgpd"};
  return {"zebra", "bgpd"};
}

FrrTimers frr_timers(const LabModel& m) {
  FrrTimers t;
  const double f = m.time_scale.factor;
  t.keepalive_s = static_cast<uint64_t>(std::ceil(3 * f));
  t.hold_s = 3 * t.keepalive_s;
  if (const auto& bfd = m.scenario.fabric.bfd) {
    t.bfd_interval_ms =
        static_cast<uint64_t>(std::llround(static_cast<double>(bfd->interval_ns) * f / 1e6));
    t.bfd_multiplier = bfd->multiplier;
  }
  return t;
}

Result<void> frr_timers_fit(const LabModel& m) {
  const FrrTimers t = frr_timers(m);
  const double f = m.time_scale.factor;
  // RFC 4271: hold time fits 16 bits.
  if (t.hold_s > 65535)
    return make_error("routing: bgp at time_scale " + format_factor(f) +
                          ": BGP's hold time would be " + std::to_string(t.hold_s) +
                          " s of wall clock, above the 65535 s BGP allows",
                      EINVAL);
  if (m.scenario.fabric.bfd && t.bfd_interval_ms < 10)
    return make_error("fabric.bfd.interval at time_scale " + format_factor(f) + " is " +
                          std::to_string(t.bfd_interval_ms) +
                          " ms of wall clock, below the 10 ms FRR's bfdd takes",
                      EINVAL);
  if (t.bfd_interval_ms > 60000)
    return make_error("fabric.bfd.interval at time_scale " + format_factor(f) + " is " +
                          std::to_string(t.bfd_interval_ms) +
                          " ms of wall clock, above the 60000 ms FRR's bfdd takes",
                      EINVAL);
  return ok();
}

std::vector<FrrConfig> frr_configs(const LabModel& m, const BgpRouter& r, const FrrTimers& t) {
  const Topology& topo = m.topo;
  const std::string& name = topo.nodes[r.node].name;
  const std::string head =
      "! fabemu lab switch " + name + " (routing: bgp)\nhostname " + name + "\nlog file /run/frr/";
  std::vector<FrrConfig> out;
  // Routes with their next hops inline (RTA_MULTIPATH), as `up` installs static ones, rather
  // than kernel nexthop objects.
  out.push_back({"zebra.conf", head + "zebra.log\nno zebra nexthop kernel enable\n"});
  if (t.bfd_interval_ms) {
    out.push_back({"bfdd.conf", head + "bfdd.log\nbfd\n profile fabemu\n  receive-interval " +
                                    std::to_string(t.bfd_interval_ms) + "\n  transmit-interval " +
                                    std::to_string(t.bfd_interval_ms) + "\n  detect-multiplier " +
                                    std::to_string(t.bfd_multiplier) + "\n exit\nexit\n"});
  }
  std::string bgp = head + "bgpd.log\nrouter bgp " + std::to_string(r.asn) + "\n bgp router-id " +
                    r.router_id.str() +
                    "\n no bgp ebgp-requires-policy\n no bgp network import-check\n"
                    " bgp bestpath as-path multipath-relax\n timers bgp " +
                    std::to_string(t.keepalive_s) + " " + std::to_string(t.hold_s) + "\n";
  for (const BgpNeighbor& n : r.neighbors) {
    const std::string a = " neighbor " + n.address.str();
    bgp += a + " remote-as " + std::to_string(n.asn) + "\n";
    bgp += a + " description " + topo.nodes[n.node].name + "\n";
    // Retry a refused connection at once: a peer's bgpd may start a moment later.
    bgp += a + " timers connect 1\n";
    if (t.bfd_interval_ms) bgp += a + " bfd profile fabemu\n";
  }
  bgp += " address-family ipv4 unicast\n";
  for (const Prefix& p : r.networks) bgp += "  network " + p.str() + "\n";
  bgp += "  maximum-paths 64\n exit-address-family\nexit\n";
  out.push_back({"bgpd.conf", bgp});
  out.push_back({"vtysh.conf", "service integrated-vtysh-config\n"});
  return out;
}

}  // namespace fabemu
