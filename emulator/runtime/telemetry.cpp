// Telemetry sampler: the link model's maps (kept open) and, for unshaped ports and rxe, the
// kernel's own counters.
#include "runtime/telemetry.h"

#include <optional>

#include "apply/inspect.h"
#include "apply/link_control.h"
#include "apply/rdma.h"

namespace fabemu {

using Clock = std::chrono::steady_clock;

TelemetrySampler::TelemetrySampler(const LabModel& model, const LabPaths& paths,
                                   std::chrono::milliseconds interval)
    : model_(model), paths_(paths), interval_(interval) {
  // Opening the maps loads and verifies the program (seconds on an emulated CPU): done here,
  // before the workload's start, so that the first sample is taken at the start.
  if (auto m = open_link_model(paths_)) maps_.emplace(std::move(*m));
}

TelemetrySampler::~TelemetrySampler() {
  stop();
}

void TelemetrySampler::start(Clock::time_point t0) {
  t0_ = t0;
  thread_ = std::jthread([this](std::stop_token stop) {
    for (auto next = Clock::now();; next += interval_) {
      TelemetrySample s = take();
      std::unique_lock lock(mu_);
      samples_.push_back(std::move(s));
      cv_.wait_until(lock, stop, next + interval_, [] { return false; });
      if (stop.stop_requested()) break;
    }
    TelemetrySample last = take();
    std::lock_guard lock(mu_);
    samples_.push_back(std::move(last));
  });
}

void TelemetrySampler::stop() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
}

std::vector<TelemetrySample> TelemetrySampler::samples() const {
  std::lock_guard lock(mu_);
  return samples_;
}

std::string TelemetrySampler::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

TelemetrySample TelemetrySampler::take() {
  const Topology& t = model_.topo;
  TelemetrySample s;
  s.wall_s = std::chrono::duration<double>(Clock::now() - t0_).count();
  s.t_s = model_.time_scale.real_s(s.wall_s);
  s.dirs.resize(2 * t.links.size());
  auto note = [&](const Error& e) {
    std::lock_guard lock(mu_);
    if (error_.empty()) error_ = e.what();
  };
  std::optional<LinkModelState> lm;
  if (maps_)
    if (auto r = read_link_model(paths_, model_, &*maps_)) lm = std::move(*r);
  // Kernel counters of every namespace, for the ports the link model does not count.
  std::map<std::string, std::map<std::string, InterfaceState>> kernel;
  for (size_t l = 0; l < t.links.size(); ++l)
    for (bool back : {false, true}) {
      DirectionSample& d = s.dirs[2 * l + (back ? 1 : 0)];
      // A lab across machines: the machine a direction leaves from samples it.
      if (!local_node(model_, back ? t.links[l].b.node : t.links[l].a.node)) continue;
      if (lm) {
        const DirectionState& st = lm->dirs[2 * l + (back ? 1 : 0)];
        if (st.shaped) {
          d.shaped = true;
          d.bytes = st.counters.bytes;
          d.packets = st.counters.packets;
          d.drops = st.counters.drops();
          d.ce_marks = st.counters.ce_marks;
          d.pause_ns =
              static_cast<uint64_t>(model_.time_scale.real_ns(double(st.counters.pause_ns)));
          d.pause_events = st.counters.pause_events;
          d.lossless_drops = st.counters.lossless_drops;
          d.queue_delay_p99_ns = static_cast<uint64_t>(
              model_.time_scale.real_ns(double(queue_delay_quantile(st.counters, 0.99))));
          continue;
        }
      }
      const int from = back ? t.links[l].b.node : t.links[l].a.node;
      const std::string netns = node_netns_path(model_, paths_, from);
      auto it = kernel.find(netns);
      if (it == kernel.end()) {
        it = kernel.emplace(netns, std::map<std::string, InterfaceState>{}).first;
        if (auto ifs = read_interfaces(netns)) {
          for (auto& i : *ifs) it->second[i.name] = i;
        } else {
          note(ifs.error());
        }
      }
      const std::string& ifname = back ? t.links[l].b.ifname : t.links[l].a.ifname;
      if (auto i = it->second.find(ifname); i != it->second.end()) {
        d.bytes = i->second.tx_bytes;
        d.packets = i->second.tx_packets;
        d.drops = i->second.tx_dropped;
      }
    }
  if (model_.rdma.rxe)
    for (int h : t.hosts()) {
      if (!local_node(model_, h)) continue;
      auto dev = read_rdma_device(paths_.rxe_name(t.nodes[h].name));
      if (dev.present) s.rxe[t.nodes[h].name] = dev.hw_counters;
    }
  return s;
}

}  // namespace fabemu
