// fabric.load_balance: the link model's balancer program (ebpf/load_balance.bpf.h) at a
// switch's ports' ingress, its groups and routes written to the lab's maps, and its counters.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>

#include "link_shaper.skel.h"
#include "shaping/attachment.h"
#include "shaping/link_shaper.h"

namespace fabemu {

namespace {

static_assert(sizeof(fabemu_lb_counters) % 8 == 0);  // per-CPU values at 8-byte strides

fabemu_lb_group group_cfg(const BalanceSwitch::Group& g) {
  fabemu_lb_group out{};
  switch (g.lb.mode) {
    case LoadBalanceMode::Ecmp:
      out.mode = FABEMU_LB_ECMP;
      break;
    case LoadBalanceMode::Flowlet:
      out.mode = FABEMU_LB_FLOWLET;
      break;
    case LoadBalanceMode::Spray:
      out.mode = FABEMU_LB_SPRAY;
      break;
    case LoadBalanceMode::Adaptive:
      out.mode = FABEMU_LB_ADAPTIVE;
      break;
  }
  if (g.hash != EcmpHash::L3) out.flags |= FABEMU_LB_HASH_L4;
  if (g.hash == EcmpHash::Qp) out.flags |= FABEMU_LB_HASH_QP;
  if (g.lb.random) out.flags |= FABEMU_LB_RANDOM;
  if (g.lb.per_flowlet) out.flags |= FABEMU_LB_PER_FLOWLET;
  out.n = static_cast<uint32_t>(g.members.size());
  out.seed = g.seed;
  out.gap_ns = g.gap_wall_ns;
  for (size_t i = 0; i < g.members.size() && i < FABEMU_LB_MAX_MEMBERS; ++i) {
    out.members[i].ifindex = g.members[i].ifindex;
    out.members[i].nexthop = htonl(g.members[i].nexthop.v);
  }
  return out;
}

// Writes the switch's groups and routes (over what its key already holds).
Result<void> write_groups(int groups_fd, int routes_fd, const BalanceSwitch& b,
                          const std::string& what) {
  for (const auto& g : b.groups) {
    if (g.members.size() < 2 || g.members.size() > FABEMU_LB_MAX_MEMBERS)
      return make_error(what + ": a group of " + std::to_string(g.members.size()) +
                            " members; the balancer takes 2 to " +
                            std::to_string(FABEMU_LB_MAX_MEMBERS),
                        EINVAL);
    if (g.id >= FABEMU_LB_MAX_GROUPS)
      return make_error(
          what + ": more than " + std::to_string(FABEMU_LB_MAX_GROUPS) + " ECMP groups in the lab",
          E2BIG);
    const fabemu_lb_group cfg = group_cfg(g);
    if (int err = bpf_map_update_elem(groups_fd, &g.id, &cfg, BPF_ANY); err < 0)
      return make_error(what + ": writing group " + std::to_string(g.id), -err);
  }
  for (const auto& r : b.routes) {
    fabemu_lb_route_key key{static_cast<uint32_t>(32 + r.dst.len), b.switch_id,
                            htonl(r.dst.addr.v)};
    if (int err = bpf_map_update_elem(routes_fd, &key, &r.group, BPF_ANY); err < 0)
      return make_error(what + ": writing its route to " + r.dst.str(), -err);
  }
  return ok();
}

}  // namespace

Result<void> LinkShaper::balance(const BalanceSwitch& b) {
  const std::string what = "balancing " + b.node;
  const int ports_fd = bpf_map__fd(skel_->maps.fabemu_lb_ports);
  FABEMU_TRY(write_groups(bpf_map__fd(skel_->maps.fabemu_lb_groups),
                          bpf_map__fd(skel_->maps.fabemu_lb_routes), b, what));
  // The ports last: the program balances a port's frames once it finds its switch.
  for (const auto& p : b.ports) {
    if (int err = bpf_map_update_elem(ports_fd, &p.ifindex, &b.switch_id, BPF_ANY); err < 0)
      return make_error(what + ": recording port " + p.ifname, -err);
    if (auto r = attach_ingress_here(balance_prog_fd(), p.ifname, p.ifindex, b.ns); !r)
      return r.error().context("the balancer of " + b.node);
  }
  return ok();
}

Result<void> LinkShaper::rebalance(const BalanceSwitch& b) {
  const std::string what = "rebalancing " + b.node;
  const int routes_fd = bpf_map__fd(skel_->maps.fabemu_lb_routes);
  // The switch's routes out first (a route the reroute dropped must not stay), then anew: a
  // frame in between meets the kernel's FIB, which holds the new routes already.
  std::vector<fabemu_lb_route_key> mine;
  fabemu_lb_route_key key{}, next{};
  for (void* at = nullptr; bpf_map_get_next_key(routes_fd, at, &next) == 0; at = &key) {
    key = next;
    if (key.switch_id == b.switch_id) mine.push_back(key);
  }
  for (const auto& k : mine)
    if (int err = bpf_map_delete_elem(routes_fd, &k); err < 0 && err != -ENOENT)
      return make_error(what + ": removing a route", -err);
  return write_groups(bpf_map__fd(skel_->maps.fabemu_lb_groups), routes_fd, b, what);
}

Result<std::optional<BalanceCounters>> LinkShaper::balance_counters(uint32_t group) const {
  const int fd = bpf_map__fd(skel_->maps.fabemu_lb_counters);
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return make_error("counting possible CPUs", -cpus);
  std::vector<fabemu_lb_counters> per_cpu(static_cast<size_t>(cpus));
  if (int err = bpf_map_lookup_elem(fd, &group, per_cpu.data()); err < 0)
    return make_error("reading the balancer's counters of group " + std::to_string(group), -err);
  BalanceCounters sum;
  for (const auto& c : per_cpu) {
    for (size_t m = 0; m < FABEMU_LB_MAX_MEMBERS; ++m) {
      sum.frames[m] += c.frames[m];
      sum.bytes[m] += c.bytes[m];
    }
    sum.moves += c.moves;
    sum.down_skips += c.down_skips;
    sum.no_member += c.no_member;
  }
  fabemu_lb_group cfg{};
  if (bpf_map_lookup_elem(bpf_map__fd(skel_->maps.fabemu_lb_groups), &group, &cfg) < 0 ||
      cfg.n == 0)
    return std::optional<BalanceCounters>{};
  sum.members = cfg.n;
  for (uint32_t m = 0; m < cfg.n && m < FABEMU_LB_MAX_MEMBERS; ++m)
    sum.ifindex[m] = cfg.members[m].ifindex;
  return std::optional<BalanceCounters>{sum};
}

Result<BalanceCounters> LinkShaper::balance_totals() const {
  BalanceCounters sum;
  for (uint32_t g = 0; g < FABEMU_LB_MAX_GROUPS; ++g) {
    auto c = balance_counters(g);
    if (!c) return c.error();
    if (!*c) break;
    sum.moves += (*c)->moves;
    sum.down_skips += (*c)->down_skips;
    sum.no_member += (*c)->no_member;
  }
  return sum;
}

Result<std::vector<FlowOrderCounters>> LinkShaper::flow_order() const {
  const int fd = bpf_map__fd(skel_->maps.fabemu_lb_order);
  std::vector<FlowOrderCounters> out;
  fabemu_lb_order_key key{}, next{};
  for (void* at = nullptr; bpf_map_get_next_key(fd, at, &next) == 0; at = &key) {
    key = next;
    fabemu_lb_order o{};
    if (bpf_map_lookup_elem(fd, &key, &o) < 0) continue;  // evicted meanwhile (LRU)
    FlowOrderCounters f;
    f.saddr = ntohl(key.saddr);
    f.daddr = ntohl(key.daddr);
    f.roce = key.proto == FABEMU_LB_ORDER_ROCE;
    if (f.roce) {
      f.qp = ntohl(key.ports);
    } else {
      f.sport = ntohs(static_cast<uint16_t>(key.ports & 0xffff));
      f.dport = ntohs(static_cast<uint16_t>(key.ports >> 16));
    }
    f.frames = o.frames;
    f.reordered = o.reordered;
    out.push_back(f);
  }
  return out;
}

}  // namespace fabemu
