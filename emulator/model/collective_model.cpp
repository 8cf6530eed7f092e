// Collective traffic patterns and their time on the modelled fabric.
#include "model/collective_model.h"

#include <algorithm>
#include <cerrno>
#include <map>

#include "util/collectives.h"
#include "util/json.h"

namespace fabemu {
namespace {

// Each rank sends `share` of S to the next rank, `steps` times in a row.
void ring(CollectivePattern& p, int n, int steps, double share) {
  for (int s = 0; s < steps; ++s) {
    Phase ph;
    for (int r = 0; r < n; ++r) ph.flows.push_back({r, (r + 1) % n, share});
    p.phases.push_back(std::move(ph));
  }
}

// The rank's route towards `ip`: the longest matching prefix.
const Route* lookup(const std::vector<Route>& table, Ipv4 ip) {
  const Route* best = nullptr;
  for (const Route& r : table)
    if (r.dst.contains(ip) && (!best || r.dst.len > best->dst.len)) best = &r;
  return best;
}

// Link direction key: 2 * link + (b_to_a ? 1 : 0).
using Shares = std::map<int, double>;

// How the traffic from host `src` to host `dst` spreads over link directions.
Result<Shares> path_shares(const Topology& t, const AddressPlan& a,
                           const std::vector<std::vector<Route>>& routes, int src, int dst) {
  const Ipv4 ip = a.host_address(t, dst);
  Shares out;
  std::map<int, double> at{{src, 1.0}};
  for (int hop = 0; hop < 64 && !at.empty(); ++hop) {
    std::map<int, double> next;
    for (auto [node, f] : at) {
      if (node == dst) continue;
      // Connected first: the kernel's own route to a link's /31 is not in the plan.
      int direct = -1;
      for (int l : t.links_of(node))
        if (t.links[l].peer(node).node == dst) direct = l;
      if (direct >= 0) {
        out[2 * direct + (t.links[direct].b.node == node ? 1 : 0)] += f;
        next[dst] += f;
        continue;
      }
      const Route* r = lookup(routes[node], ip);
      if (!r || r->nexthops.empty())
        return make_error("no route from " + t.nodes[node].name + " to " + t.nodes[dst].name,
                          EHOSTUNREACH);
      const double each = f / static_cast<double>(r->nexthops.size());
      for (const Nexthop& nh : r->nexthops) {
        const Link& l = t.links[nh.link];
        const bool back = l.b.node == node;
        out[2 * nh.link + (back ? 1 : 0)] += each;
        next[l.peer(node).node] += each;
      }
    }
    at.clear();
    for (auto [node, f] : next)
      if (node != dst) at[node] = f;
  }
  if (!at.empty()) return make_error("routing loop towards " + t.nodes[dst].name, ELOOP);
  return out;
}

const LinkShape& shape_of(const Topology& t, int key) {
  const Link& l = t.links[key / 2];
  return key % 2 ? l.b_to_a : l.a_to_b;
}

std::string key_name(const Topology& t, int key) {
  const Link& l = t.links[key / 2];
  const LinkEnd& from = key % 2 ? l.b : l.a;
  return t.nodes[from.node].name + ">" + t.nodes[l.peer(from.node).node].name;
}

// Gloo's reduce-scatter: recursive halving where the world is a power of two.
void reduce_scatter(CollectivePattern& p, int n) {
  const double dn = n;
  if (n & (n - 1)) {
    // Gloo splits other world sizes into power-of-two blocks; the ring moves the same
    // bytes per rank, which is what bounds a bandwidth-limited run.
    p.algorithm = "halving_doubling (modelled as ring)";
    ring(p, n, n - 1, 1 / dn);
  } else {
    // Recursive halving: partner r XOR 2^i gets S/2^(i+1); then each reduced S/n block goes
    // to its owner, bitrev(r) (the halving leaves them in bit-reversed order).
    p.algorithm = "halving_doubling";
    int bits = 0;
    while ((1 << bits) < n) ++bits;
    for (int i = 0; i < bits; ++i) {
      Phase ph;
      for (int r = 0; r < n; ++r) ph.flows.push_back({r, r ^ (1 << i), 1.0 / (2 << i)});
      p.phases.push_back(std::move(ph));
    }
    Phase dist;
    for (int r = 0; r < n; ++r) {
      int rev = 0;
      for (int b = 0; b < bits; ++b)
        if (r & (1 << b)) rev |= 1 << (bits - 1 - b);
      if (rev != r) dist.flows.push_back({r, rev, 1 / dn});
    }
    if (!dist.flows.empty()) p.phases.push_back(std::move(dist));
  }
}

}  // namespace

Result<CollectivePattern> collective_pattern(std::string_view name, int n) {
  if (n < 1) return make_error("a collective needs at least one rank", EINVAL);
  auto collective = parse_collective(name);
  if (!collective) return collective.error();
  CollectivePattern p;
  p.collective = name;
  p.bus_factor = bus_factor(*collective, n);
  const double dn = n;
  switch (*collective) {
    case Collective::AllReduce:
      // Gloo's ring_chunked: reduce-scatter then allgather around the ring; per rank 2(n-1)/n
      // of S to its right neighbour (in 2n chunks, two in flight).
      p.algorithm = "ring_chunked";
      ring(p, n, 2 * (n - 1), 1 / dn);
      break;
    case Collective::AllGather:
      p.algorithm = "ring";
      ring(p, n, n - 1, 1 / dn);
      break;
    case Collective::ReduceScatter:
      reduce_scatter(p, n);
      break;
    case Collective::AllToAll: {
      // Every rank sends S/n to every other rank, all at once.
      p.algorithm = "pairwise";
      Phase ph;
      for (int r = 0; r < n; ++r)
        for (int d = 0; d < n; ++d)
          if (d != r) ph.flows.push_back({r, d, 1 / dn});
      if (!ph.flows.empty()) p.phases.push_back(std::move(ph));
      break;
    }
    case Collective::Broadcast: {
      // The root sends the whole buffer to every other rank itself.
      p.algorithm = "one_to_all";
      Phase ph;
      for (int d = 1; d < n; ++d) ph.flows.push_back({0, d, 1});
      if (!ph.flows.empty()) p.phases.push_back(std::move(ph));
      break;
    }
  }
  return p;
}

WireCost wire_cost(std::string_view transport, uint32_t mtu) {
  constexpr double kEth = 14;  // what the link model counts: the L2 frame without FCS
  WireCost c;
  if (transport == "ibverbs") {
    // RoCE's path MTU is the largest IB MTU that fits the netdev's; headers: IP 20, UDP 8,
    // BTH 12, ICRC 4.
    double pmtu = 256;
    for (double m : {4096.0, 2048.0, 1024.0, 512.0})
      if (m + 20 + 8 + 12 + 4 <= mtu) {
        pmtu = m;
        break;
      }
    c.forward = (pmtu + 20 + 8 + 12 + 4 + kEth) / pmtu;
    return c;
  }
  const double mss = static_cast<double>(mtu) - 20 - 20 - 12;  // IP, TCP, timestamps
  c.forward = (mtu + kEth) / mss;
  c.reverse = (20 + 20 + 12 + kEth) / (2 * mss);  // one ACK per two segments
  return c;
}

double Prediction::busbw(double size) const {
  const double t = latency_s + seconds_per_byte * size;
  if (seconds_per_byte <= 0 || t <= 0) return 0;
  return bus_factor * size / t;
}

Result<Prediction> predict(const Topology& t, const AddressPlan& a,
                           const std::vector<std::vector<Route>>& routes,
                           const CollectivePattern& p, const WireCost& cost) {
  return predict(t, a, routes, p, cost, t.hosts());
}

Result<Prediction> predict(const Topology& t, const AddressPlan& a,
                           const std::vector<std::vector<Route>>& routes,
                           const CollectivePattern& p, const WireCost& cost,
                           const std::vector<int>& hosts) {
  std::map<std::pair<int, int>, Shares> paths;  // (src rank, dst rank) -> shares
  auto path = [&](int s, int d) -> Result<const Shares*> {
    auto it = paths.find({s, d});
    if (it == paths.end()) {
      auto sh = path_shares(t, a, routes, hosts[s], hosts[d]);
      if (!sh) return sh.error();
      it = paths.emplace(std::pair{s, d}, std::move(*sh)).first;
    }
    return &it->second;
  };

  Prediction out;
  out.bus_factor = p.bus_factor;
  double worst_phase = -1;
  for (const Phase& ph : p.phases) {
    Shares bytes;  // per direction, per byte of S
    double delay_ns = 0;
    for (const Flow& f : ph.flows) {
      if (f.src >= static_cast<int>(hosts.size()) || f.dst >= static_cast<int>(hosts.size()))
        return make_error("the pattern has more ranks than the lab has hosts", EINVAL);
      auto fwd = path(f.src, f.dst);
      if (!fwd) return fwd.error();
      double d = 0;
      for (auto [key, share] : **fwd) {
        bytes[key] += f.share * share * cost.forward;
        d += share * static_cast<double>(shape_of(t, key).delay_ns.value_or(0));
      }
      delay_ns = std::max(delay_ns, d);
      if (cost.reverse > 0) {
        auto back = path(f.dst, f.src);
        if (!back) return back.error();
        for (auto [key, share] : **back) bytes[key] += f.share * share * cost.reverse;
      }
    }
    double phase_spb = 0;  // seconds per byte of S
    int slowest = -1;
    for (auto [key, b] : bytes) {
      const auto rate = shape_of(t, key).rate_bps;
      if (!rate || !*rate) continue;
      const double spb = b * 8 / static_cast<double>(*rate);
      if (spb > phase_spb) phase_spb = spb, slowest = key;
    }
    out.seconds_per_byte += phase_spb;
    out.latency_s += delay_ns * 1e-9;
    if (slowest >= 0 && phase_spb > worst_phase) {
      worst_phase = phase_spb;
      out.bottleneck = key_name(t, slowest);
    }
  }
  return out;
}

std::string predictions_json(const Topology& t, const AddressPlan& a,
                             const std::vector<std::vector<Route>>& routes,
                             std::string_view transport, uint32_t mtu) {
  Json j = Json::object();
  const int n = t.host_count();
  for (Collective collective : kAllCollectives) {
    const std::string_view c = name_of(collective);
    auto p = collective_pattern(c, n);
    if (!p) continue;
    auto pr = predict(t, a, routes, *p, wire_cost(transport, mtu));
    if (!pr) continue;
    j[std::string(c)] = {{"algorithm", p->algorithm},
                         {"latency_s", pr->latency_s},
                         {"seconds_per_byte", pr->seconds_per_byte},
                         {"bus_factor", pr->bus_factor},
                         {"bottleneck", pr->bottleneck}};
  }
  return json_text(j);
}

}  // namespace fabemu
