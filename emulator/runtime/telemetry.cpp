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
    // Sample k is due at t0 + k intervals on every machine of a lab (merge_run_parts matches
    // them by index): a round that overran is followed at once by the one due, and the plots
    // leave out samples much closer than the interval (plotted_samples).
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

TelemetrySample TelemetrySampler::mark() {
  return take();
}

std::string TelemetrySampler::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

uint64_t TelemetrySampler::slack_bytes() const {
  // A frame is at most the MTU and its Ethernet header: shaped ports send one packet per skb.
  return maps_ ? uint64_t{LinkShaper::cpus()} * (model_.scenario.fabric.mtu + 14) : 0;
}

DirectionSample shaped_sample(const PortSnapshot& p, const TimeScale& scale) {
  const LinkCounters& c = p.counters;
  DirectionSample d;
  d.shaped = true;
  d.queued_bytes = p.queued_bytes();
  d.bytes = c.bytes - d.queued_bytes;
  d.packets = c.packets;
  d.drops = c.drops();
  d.drop_down = c.drop_down;
  d.drop_loss = c.drop_loss;
  d.drop_queue = c.drop_queue;
  d.drop_watchdog = c.drop_watchdog;
  d.ce_marks = c.ce_marks;
  d.pause_ns = static_cast<uint64_t>(scale.real_ns(double(c.pause_ns)));
  d.pause_events = c.pause_events;
  d.lossless_drops = c.lossless_drops;
  d.lossless_packets = c.lossless_packets;
  d.rate_bps = scale.real_bps_exact(p.cfg.rate_bps);
  d.down = p.cfg.flags & FABEMU_LINK_DOWN;
  d.queue_delay_p99_ns =
      static_cast<uint64_t>(scale.real_ns(double(queue_delay_quantile(c, 0.99))));
  return d;
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
  auto real_since_t0 = [&](Clock::time_point at) {
    return model_.time_scale.real_s(std::chrono::duration<double>(at - t0_).count());
  };
  // Kernel counters of every namespace, for the ports the link model does not count, with the
  // time each namespace's were read.
  struct Dump {
    std::map<std::string, InterfaceState> ifs;
    double t_s = -1;
  };
  std::map<std::string, Dump> kernel;
  for (size_t l = 0; l < t.links.size(); ++l)
    for (bool back : {false, true}) {
      DirectionSample& d = s.dirs[2 * l + (back ? 1 : 0)];
      // A lab across machines: the machine a direction leaves from samples it.
      if (!local_node(model_, back ? t.links[l].b.node : t.links[l].a.node)) continue;
      if (maps_) {
        auto p = maps_->snapshot(port_ifindex(static_cast<int>(l), back));
        if (!p) note(p.error());
        if (p && *p) {
          d = shaped_sample(**p, model_.time_scale);
          // steady_clock is CLOCK_MONOTONIC, the clock the snapshot is stamped with.
          d.t_s = real_since_t0(Clock::time_point(std::chrono::nanoseconds((*p)->read_ns)));
          continue;
        }
      }
      const int from = back ? t.links[l].b.node : t.links[l].a.node;
      const std::string netns = node_netns_path(model_, paths_, from);
      auto it = kernel.find(netns);
      if (it == kernel.end()) {
        it = kernel.emplace(netns, Dump{}).first;
        if (auto ifs = read_interfaces(netns)) {
          for (auto& i : *ifs) it->second.ifs[i.name] = i;
        } else {
          note(ifs.error());
        }
        it->second.t_s = real_since_t0(Clock::now());
      }
      const std::string& ifname = back ? t.links[l].b.ifname : t.links[l].a.ifname;
      if (auto i = it->second.ifs.find(ifname); i != it->second.ifs.end()) {
        d.bytes = i->second.tx_bytes;
        d.packets = i->second.tx_packets;
        d.drops = i->second.tx_dropped;
        d.t_s = it->second.t_s;
      }
    }
  if (maps_ &&
      (model_.scenario.rdma_cc.cc == RoceCc::Dcqcn || model_.scenario.switch_buffers.any())) {
    LinkModelState st;
    read_buffers_and_dcqcn(model_, *maps_, st);
    for (const HostDcqcnState& h : st.dcqcn)
      for (const DcqcnQp& q : h.qps)
        s.qps.push_back({h.name, Ipv4{q.peer}.str(), q.qpn,
                         uint64_t(model_.time_scale.real_bps(double(q.rate_bps))), q.cnps});
    for (const SwitchBufferState& b : st.buffers) s.buffers[b.name] = b.occupancy.used;
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
