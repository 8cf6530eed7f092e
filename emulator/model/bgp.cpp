// RFC 7938 numbering and sessions; the expected FIB from the static route plan.
#include "model/bgp.h"

#include <algorithm>
#include <map>
#include <set>

namespace fabemu {

namespace {

bool has_switch_peer(const Topology& t, int node) {
  for (int l : t.links_of(node))
    if (t.nodes[t.links[l].peer(node).node].role == Role::Switch) return true;
  return false;
}

// Whether some shortest path from `n` to switch `dst` crosses no ASN in `seen` and none twice:
// BGP refuses a path that holds its own ASN, so only such paths can carry dst's routes. `seen`
// is the path so far (a few hops: a vector, searched linearly, allocates nothing per call).
bool loop_free_path(const Topology& t, const std::vector<uint32_t>& asn,
                    const std::vector<std::vector<int>>& dist, int n, int dst,
                    std::vector<uint32_t>& seen) {
  if (std::find(seen.begin(), seen.end(), asn[n]) != seen.end()) return false;
  if (n == dst) return true;
  seen.push_back(asn[n]);
  bool found = false;
  for (int l : t.links_of(n)) {
    const int peer = t.links[l].peer(n).node;
    if (t.nodes[peer].role == Role::Switch && dist[dst][peer] == dist[dst][n] - 1 &&
        loop_free_path(t, asn, dist, peer, dst, seen)) {
      found = true;
      break;
    }
  }
  seen.pop_back();
  return found;
}

}  // namespace

std::vector<uint32_t> plan_asns(const Topology& t) {
  std::vector<uint32_t> asn(t.nodes.size(), 0);
  std::vector<int> routers;
  int top = 0;
  for (int s : t.switches())
    if (has_switch_peer(t, s)) {
      routers.push_back(s);
      top = std::max(top, t.nodes[s].tier);
    }
  // Groups in the order they get numbers: the top tier, then tier by tier downwards.
  std::map<std::pair<int, std::set<int>>, std::vector<int>> groups;  // (-tier, key) -> nodes
  for (int r : routers) {
    const int tier = t.nodes[r].tier;
    std::set<int> key;  // empty: the top tier, one group
    if (tier <= 1 || top <= 1) {
      key = {r};
    } else if (tier < top) {
      for (int l : t.links_of(r)) {
        const int peer = t.links[l].peer(r).node;
        if (t.nodes[peer].role == Role::Switch && t.nodes[peer].tier < tier) key.insert(peer);
      }
    }
    groups[{-tier, key}].push_back(r);
  }
  // Numbered from the top tier down, each tier's groups in node order.
  std::vector<std::vector<int>> ordered;
  for (auto& [k, nodes] : groups) ordered.push_back(nodes);
  std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    const int ta = t.nodes[a.front()].tier, tb = t.nodes[b.front()].tier;
    return ta != tb ? ta > tb : a.front() < b.front();
  });
  const bool two_byte = ordered.size() <= 65534 - 64512 + 1;
  uint32_t next = two_byte ? 64512 : 4200000000u;
  for (const auto& g : ordered) {
    for (int n : g) asn[n] = next;
    ++next;
  }
  return asn;
}

Result<std::vector<BgpRouter>> plan_bgp(const Topology& t, const AddressPlan& plan) {
  auto routes = plan_routes(t, plan, {}, /*summarize=*/false);
  if (!routes) return routes.error();
  const std::vector<uint32_t> asn = plan_asns(t);
  const auto dist = switch_distances(t);
  // Which switch announces a prefix (its host block and its loopback), by address and length:
  // looked up once per planned route.
  std::map<std::pair<uint32_t, int>, int> origin;
  for (int s : t.switches()) {
    if (plan.edge_block[s]) origin[{plan.edge_block[s]->addr.v, plan.edge_block[s]->len}] = s;
    if (plan.loopback[s]) origin[{plan.loopback[s]->v, 32}] = s;
  }
  auto origin_of = [&](const Prefix& p) {
    auto it = origin.find({p.addr.v, p.len});
    return it == origin.end() ? -1 : it->second;
  };
  std::vector<BgpRouter> out;
  std::vector<uint32_t> seen;
  for (int s : t.switches()) {
    if (!asn[s]) continue;
    BgpRouter r;
    r.node = s;
    r.asn = asn[s];
    if (!plan.loopback[s]) return make_error("switch " + t.nodes[s].name + " has no loopback");
    r.router_id = *plan.loopback[s];
    for (int l : t.links_of(s)) {
      const int peer = t.links[l].peer(s).node;
      if (t.nodes[peer].role != Role::Switch) continue;
      r.neighbors.push_back({l, plan.address_of(t, l, peer), asn[peer], peer});
    }
    if (plan.edge_block[s]) r.networks.push_back(*plan.edge_block[s]);
    r.networks.push_back(Prefix{r.router_id, 32});
    for (const Route& route : (*routes)[s]) {
      if (!via_switches(t, s, route)) continue;
      const int dst = origin_of(route.dst);
      if (dst < 0 || !asn[dst]) continue;
      // The static plan's next hops through which BGP can learn the route: a leaf's prefixes
      // over every shortest path, but not the loopback of a switch that shares this one's ASN
      // (two spines of a leaf-spine, two cores of a fat-tree), as RFC 7938 describes.
      Route learned{route.dst, {}, route.src};
      for (const Nexthop& h : route.nexthops) {
        seen.assign(1, r.asn);
        if (loop_free_path(t, asn, dist, t.links[h.link].peer(s).node, dst, seen))
          learned.nexthops.push_back(h);
      }
      if (!learned.nexthops.empty()) r.fib.push_back(std::move(learned));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace fabemu
