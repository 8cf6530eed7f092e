// Max-min fair rates by progressive filling over ECMP-split fluid flows.
#include "model/fair_share.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace fabemu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The share of the flow each link direction (2 * link + b_to_a) carries: shortest paths from
// `from` to `to` through switches, split evenly at every hop.
std::vector<double> spread(const Topology& t, int from, int to) {
  const int n = static_cast<int>(t.nodes.size());
  std::vector<int> dist(n, -1);
  std::deque<int> queue{to};
  dist[to] = 0;
  while (!queue.empty()) {
    const int u = queue.front();
    queue.pop_front();
    // Hosts other than the ends forward nothing.
    if (u != to && t.nodes[u].role == Role::Host) continue;
    for (int l : t.links_of(u)) {
      const int v = t.links[l].peer(u).node;
      if (dist[v] < 0) {
        dist[v] = dist[u] + 1;
        queue.push_back(v);
      }
    }
  }
  std::vector<double> share(2 * t.links.size(), 0.0);
  if (dist[from] < 0) return share;
  std::vector<double> at(n, 0.0);
  at[from] = 1;
  std::vector<int> order;
  for (int v = 0; v < n; ++v)
    if (dist[v] > 0 && dist[v] <= dist[from]) order.push_back(v);
  std::sort(order.begin(), order.end(), [&](int a, int b) { return dist[a] > dist[b]; });
  for (int u : order) {
    if (at[u] == 0 || (u != from && t.nodes[u].role == Role::Host)) continue;
    std::vector<int> next;
    for (int l : t.links_of(u)) {
      const int v = t.links[l].peer(u).node;
      if (dist[v] == dist[u] - 1 && (v == to || t.nodes[v].role == Role::Switch)) next.push_back(l);
    }
    for (int l : next) {
      const double part = at[u] / static_cast<double>(next.size());
      share[2 * l + (t.links[l].a.node == u ? 0 : 1)] += part;
      at[t.links[l].peer(u).node] += part;
    }
  }
  return share;
}

double capacity(const LinkShape& s) {
  if (s.down.value_or(false)) return 0;
  return s.rate_bps.value_or(0) ? static_cast<double>(*s.rate_bps) : kInf;
}

}  // namespace

std::vector<double> max_min_rates(const Topology& t,
                                  const std::vector<std::pair<int, int>>& flows) {
  const size_t dirs = 2 * t.links.size();
  std::vector<std::vector<double>> share;
  for (const auto& [from, to] : flows) share.push_back(spread(t, from, to));
  std::vector<double> cap(dirs), used(dirs, 0.0), rate(flows.size(), 0.0);
  for (size_t l = 0; l < t.links.size(); ++l) {
    cap[2 * l] = capacity(t.links[l].a_to_b);
    cap[2 * l + 1] = capacity(t.links[l].b_to_a);
  }
  std::vector<bool> active(flows.size(), true);
  for (size_t round = 0; round <= flows.size(); ++round) {
    // Raise every active flow alike until a link direction fills; its flows are then done.
    double step = kInf;
    std::vector<double> load(dirs, 0.0);
    for (size_t f = 0; f < flows.size(); ++f)
      if (active[f])
        for (size_t d = 0; d < dirs; ++d) load[d] += share[f][d];
    for (size_t d = 0; d < dirs; ++d)
      if (load[d] > 0 && cap[d] < kInf) step = std::min(step, (cap[d] - used[d]) / load[d]);
    if (step == kInf) {
      for (size_t f = 0; f < flows.size(); ++f)
        if (active[f]) rate[f] = kInf;
      break;
    }
    bool any = false;
    for (size_t f = 0; f < flows.size(); ++f)
      if (active[f]) rate[f] += step;
    for (size_t d = 0; d < dirs; ++d) used[d] += step * load[d];
    for (size_t d = 0; d < dirs; ++d) {
      if (load[d] == 0 || cap[d] == kInf || cap[d] - used[d] > 1e-9 * cap[d]) continue;
      for (size_t f = 0; f < flows.size(); ++f)
        if (active[f] && share[f][d] > 0) active[f] = false;
    }
    for (bool a : active) any |= a;
    if (!any) break;
  }
  return rate;
}

}  // namespace fabemu
