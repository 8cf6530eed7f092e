// Real <-> wall conversions of time dilation.
#include "model/time_scale.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "model/lab_model.h"

namespace fabemu {
namespace {

uint64_t rounded(double v) {
  return v <= 0 ? 0 : v >= 1.8e19 ? UINT64_MAX : static_cast<uint64_t>(std::llround(v));
}

// `v` to 6 significant digits: the value a person wrote, when it maps to the same wall value.
double readable(double v) {
  if (v <= 0) return v;
  const double scale = std::pow(10.0, 5 - std::floor(std::log10(v)));
  return std::round(v * scale) / scale;
}

template <typename F>
std::optional<uint64_t> map(const std::optional<uint64_t>& v, F f) {
  if (!v) return std::nullopt;
  return f(*v);
}

}  // namespace

uint64_t TimeScale::wall_ns(uint64_t real_ns) const {
  return rounded(double(real_ns) * factor);
}

uint64_t TimeScale::wall_bps(uint64_t real_bps) const {
  if (real_bps == 0) return 0;  // "off" stays off
  const uint64_t w = rounded(double(real_bps) / factor);
  return w == 0 ? 1 : w;
}

uint64_t TimeScale::real_bps_exact(uint64_t wall) const {
  const uint64_t nice = rounded(readable(double(wall) * factor));
  return wall_bps(nice) == wall ? nice : rounded(double(wall) * factor);
}

uint64_t TimeScale::real_ns_exact(uint64_t wall) const {
  const uint64_t nice = rounded(readable(double(wall) / factor));
  return wall_ns(nice) == wall ? nice : rounded(double(wall) / factor);
}

std::string format_factor(double factor) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", factor);
  return buf;
}

LinkShape to_wall(const LinkShape& real, const TimeScale& t) {
  if (!t.dilated()) return real;
  LinkShape w = real;
  w.rate_bps = map(real.rate_bps, [&](uint64_t v) { return t.wall_bps(v); });
  for (auto field : {&LinkShape::delay_ns, &LinkShape::jitter_ns, &LinkShape::queue_ns,
                     &LinkShape::ecn_threshold_ns})
    w.*field = map(real.*field, [&](uint64_t v) { return t.wall_ns(v); });
  if (w.pfc) w.pfc->watchdog_ns = t.wall_ns(w.pfc->watchdog_ns);
  return w;
}

LinkShape to_real(const LinkShape& wall, const TimeScale& t) {
  if (!t.dilated()) return wall;
  LinkShape r = wall;
  r.rate_bps = map(wall.rate_bps, [&](uint64_t v) { return t.real_bps_exact(v); });
  for (auto field : {&LinkShape::delay_ns, &LinkShape::jitter_ns, &LinkShape::queue_ns,
                     &LinkShape::ecn_threshold_ns})
    r.*field = map(wall.*field, [&](uint64_t v) { return t.real_ns_exact(v); });
  if (r.pfc) r.pfc->watchdog_ns = t.real_ns_exact(r.pfc->watchdog_ns);
  return r;
}

const char* to_string(CapacityKind k) {
  return k == CapacityKind::Gso ? "gso" : "plain";
}

std::optional<double> lab_demand(const LabModel& m) {
  const Topology& t = m.topo;
  const auto hosts = t.hosts();
  if (hosts.size() < 2) return 0.0;
  // Hosts grouped by the switch (or host) their NIC leads to; hops between two hosts are two
  // plus the switches' distance.
  std::map<int, int> per_edge;
  std::vector<int> edge_of(t.nodes.size(), -1);
  for (int h : hosts) {
    const int edge = t.links[t.links_of(h).front()].peer(h).node;
    edge_of[h] = edge;
    ++per_edge[edge];
  }
  const auto dist = switch_distances(t);
  auto hops = [&](int a_edge, int b_edge) -> double {
    if (t.nodes[a_edge].role != Role::Switch || t.nodes[b_edge].role != Role::Switch) return 1;
    const int d = dist[a_edge][b_edge];
    return d < 0 ? 0 : 2 + d;
  };
  const double frame_bits = 8.0 * (m.scenario.fabric.mtu + 38);  // + Ethernet header, FCS, gap
  double demand = 0;
  for (int h : hosts) {
    const auto& links = t.links_of(h);
    const LinkShape& out = t.links[links.front()].out_of(h);
    if (!out.rate_bps || !*out.rate_bps) return std::nullopt;
    double sum = 0;
    for (const auto& [edge, n] : per_edge)
      sum += hops(edge_of[h], edge) * (n - (edge == edge_of[h]));
    demand += double(*out.rate_bps) / frame_bits * sum / double(hosts.size() - 1);
    // Its other links (a rail-optimized server's scale-up switch) at their rate too, each frame
    // two hops: to the switch and on to a GPU of the same server.
    for (size_t k = 1; k < links.size(); ++k) {
      const LinkShape& up = t.links[links[k]].out_of(h);
      if (up.rate_bps && *up.rate_bps) demand += double(*up.rate_bps) / frame_bits * 2;
    }
  }
  return demand;
}

double latency_time_scale(const LabModel& m, const Capacity& c) {
  const Topology& t = m.topo;
  const auto hosts = t.hosts();
  if (hosts.empty() || c.step_overhead_s <= 0) return 1;
  uint64_t rate = 0;  // the slowest host NIC's
  for (int h : hosts) {
    const LinkShape& out = t.links[t.links_of(h).front()].out_of(h);
    if (!out.rate_bps || !*out.rate_bps) return 1;
    rate = rate ? std::min(rate, *out.rate_bps) : *out.rate_bps;
  }
  uint64_t smallest = 0;
  for (const WorkloadStep& w : m.scenario.workload)
    if (const auto* c = std::get_if<CollectiveStep>(&w.step))
      for (uint64_t s : c->sizes) smallest = smallest ? std::min(smallest, s) : s;
  if (!smallest) return 1;
  const double n = double(hosts.size());
  const double step_s = double(smallest) / n * 8 / double(rate);
  const double overhead_s = c.step_overhead_s * std::max(1.0, n / 8);
  return overhead_s / (0.05 * step_s);
}

double auto_time_scale(double demand, double capacity) {
  return capacity <= 0 ? 1 : readable_factor(demand / capacity);
}

double readable_factor(double need) {
  if (!(need > 1)) return 1;
  need = std::min(need, kMaxTimeScale);
  const double decade = std::pow(10.0, std::floor(std::log10(need)));
  for (double step : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (step * decade >= need * (1 - 1e-9)) return step * decade;
  return 10 * decade;
}

}  // namespace fabemu
