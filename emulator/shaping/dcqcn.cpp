// DCQCN for soft-RoCE (rdma: {cc: dcqcn}, ebpf/dcqcn.h): a host port's NIC parameters in the
// link model's maps, the notification point at its ingress, and what the reaction points track.
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <ctime>

#include "link_shaper.skel.h"
#include "shaping/attachment.h"
#include "shaping/link_shaper.h"

namespace fabemu {

namespace {

static_assert(sizeof(fabemu_dcqcn_counters) % 8 == 0);  // per-CPU values at 8-byte strides

uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);  // bpf_ktime_get_ns's clock
  return uint64_t(ts.tv_sec) * 1'000'000'000ull + uint64_t(ts.tv_nsec);
}

}  // namespace

Result<void> LinkShaper::set_dcqcn(uint32_t ifindex, const fabemu_dcqcn_cfg& cfg) {
  const int fd = bpf_map__fd(skel_->maps.fabemu_dcqcn_cfg);
  if (int err = bpf_map_update_elem(fd, &ifindex, &cfg, BPF_ANY); err < 0)
    return make_error("writing DCQCN's parameters of port " + std::to_string(ifindex), -err);
  return ok();
}

Result<void> LinkShaper::attach_notification_point(const std::string& ifname, uint32_t ifindex,
                                                   const std::string& where) {
  if (auto r = attach_ingress_here(roce_prog_fd(), ifname, ifindex, where); !r)
    return r.error().context("DCQCN's notification point");
  return ok();
}

Result<DcqcnCounters> LinkShaper::dcqcn_counters(uint32_t ifindex) const {
  const int fd = bpf_map__fd(skel_->maps.fabemu_dcqcn_counters);
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return make_error("counting possible CPUs", -cpus);
  std::vector<fabemu_dcqcn_counters> per_cpu(static_cast<size_t>(cpus));
  DcqcnCounters sum;
  if (int err = bpf_map_lookup_elem(fd, &ifindex, per_cpu.data()); err < 0) {
    if (err == -ENOENT) return sum;  // nothing happened on the port yet
    return make_error("reading DCQCN's counters of port " + std::to_string(ifindex), -err);
  }
  for (const auto& c : per_cpu) {
    sum.cnps_sent += c.cnps_sent;
    sum.cnps_received += c.cnps_received;
    sum.ce_received += c.ce_received;
    sum.cnps_held += c.cnps_held;
    sum.paced += c.paced;
    sum.untracked += c.untracked;
  }
  return sum;
}

Result<std::vector<DcqcnQp>> LinkShaper::dcqcn_qps() const {
  const int qps = bpf_map__fd(skel_->maps.fabemu_dcqcn_qps);
  const int cfgs = bpf_map__fd(skel_->maps.fabemu_dcqcn_cfg);
  std::vector<DcqcnQp> out;
  const uint64_t now = monotonic_ns();
  fabemu_dcqcn_key key{}, next{};
  for (void* at = nullptr; bpf_map_get_next_key(qps, at, &next) == 0; at = &key) {
    key = next;
    fabemu_dcqcn_qp q{};
    fabemu_dcqcn_cfg c{};
    if (bpf_map_lookup_elem(qps, &key, &q) < 0 || bpf_map_lookup_elem(cfgs, &key.ifindex, &c) < 0)
      continue;  // gone meanwhile
    DcqcnQp d;
    d.ifindex = key.ifindex;
    d.peer = ntohl(key.peer);
    d.qpn = key.qpn;
    d.cut = q.alpha_at != 0;
    d.rate_bps = fabemu_dcqcn_rate(&c, &q, now);  // a copy advanced to now; the map's stays
    d.target_bps = d.cut ? q.target_bps : c.line_bps;
    d.alpha = double(q.alpha) / double(FABEMU_DCQCN_ONE);
    d.cnps = q.cnps;
    d.decreases = q.decreases;
    d.packets = q.packets;
    d.bytes = q.bytes;
    out.push_back(d);
  }
  return out;
}

}  // namespace fabemu
