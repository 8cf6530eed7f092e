// LinkShaper: the loaded link-model program with its maps (pinned per lab), live shape updates,
// counters, and attachment to emulated ports.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ebpf/dcqcn.h"
#include "ebpf/link_shaper.h"
#include "ebpf/load_balance.h"
#include "plan/plan.h"
#include "scenario/scenario.h"
#include "shaping/attachment.h"
#include "util/result.h"

struct link_shaper;  // the bpftool skeleton, kept out of this header

namespace fabemu {

// One port's counters, summed over CPUs.
struct LinkCounters {
  uint64_t packets = 0, bytes = 0;
  uint64_t drop_down = 0, drop_loss = 0, drop_queue = 0;
  uint64_t ce_marks = 0;
  std::array<uint64_t, FABEMU_HIST_BUCKETS> queue_delay_hist{};  // see ebpf/link_shaper.h
  // PFC of the lossless class (see ebpf/link_shaper.h).
  uint64_t lossless_packets = 0, pause_ns = 0, pause_events = 0, drop_watchdog = 0;
  uint64_t lossless_drops = 0;             // of those drops, frames of the lossless class
  uint64_t corrupted = 0, duplicated = 0;  // damage on the wire (the next hop drops corrupted)

  uint64_t drops() const { return drop_down + drop_loss + drop_queue + drop_watchdog; }
};

// One port's shape, counters and virtual queue read together, for rates. The counters count a
// frame when the link admits it to its queue; a real port counts it when it leaves. Subtracting
// the queue at the moment of the read gives the bytes the link has serialized by then, which
// over any interval stay within its rate however bursty the admissions were.
struct PortSnapshot {
  fabemu_link_cfg cfg{};
  LinkCounters counters;
  uint64_t busy_until_ns = 0;  // the virtual clock: when the queue will have drained
  uint64_t read_ns = 0;        // CLOCK_MONOTONIC (the datapath's clock) when the read ended
  // Admitted but not serialized at read_ns (the drain time at the configured rate), at most
  // what was admitted: what a real port would still hold.
  uint64_t queued_bytes() const;
};

// A switch's shared buffer, read at one moment.
struct BufferOccupancy {
  uint64_t bytes = 0;  // the buffer
  uint64_t used = 0;   // occupied at the read (frames admitted that have not left)
  uint64_t peak = 0;   // the most an admitted frame found there
};

// One ECMP group's counters from the balancer (fabric.load_balance), summed over CPUs.
struct BalanceCounters {
  uint32_t members = 0;
  std::array<uint32_t, FABEMU_LB_MAX_MEMBERS> ifindex{};  // each member's port
  std::array<uint64_t, FABEMU_LB_MAX_MEMBERS> frames{}, bytes{};
  uint64_t moves = 0;       // a flow (or frame) took another member than its last
  uint64_t down_skips = 0;  // a member's link was down and another took the frame
  uint64_t no_member = 0;   // every member down: the kernel's FIB had the frame
};

// One flow's order at its last hop, as the balancer counted it (ebpf/load_balance.h).
struct FlowOrderCounters {
  uint32_t saddr = 0, daddr = 0;  // host order
  uint16_t sport = 0, dport = 0;  // TCP
  uint32_t qp = 0;                // RoCEv2: the destination QP
  bool roce = false;
  uint64_t frames = 0, reordered = 0;
};

// DCQCN at one host port (rdma: {cc: dcqcn}), summed over CPUs (see ebpf/dcqcn.h).
struct DcqcnCounters {
  uint64_t cnps_sent = 0, cnps_received = 0, ce_received = 0, cnps_held = 0, paced = 0,
           untracked = 0;
};

// One QP as its sender's reaction point sees it, its rate advanced to the moment of the read.
struct DcqcnQp {
  uint32_t ifindex = 0;                   // the sender's port
  uint32_t peer = 0;                      // IPv4 of the receiver, host order
  uint32_t qpn = 0;                       // the destination QP its frames carry
  bool cut = false;                       // a CNP came (else the line rate)
  uint64_t rate_bps = 0, target_bps = 0;  // in the lab's wall units (dilated)
  double alpha = 0;
  uint64_t cnps = 0, decreases = 0, packets = 0, bytes = 0;
};

// A port somebody attached to, as recorded in the ports map.
struct ShapedPort {
  uint32_t ifindex = 0;
  uint64_t netns_dev = 0, netns_ino = 0;
  std::string ifname;
};

struct ShaperOptions {
  // A bpffs directory for the maps (see lab_pin_dir); maps already pinned there are reused, so
  // every process of a lab reads and writes the same shapes. Empty: the maps live as long as
  // this object and the attachments made from it.
  std::string pin_dir;
};

class LinkShaper {
 public:
  // Opens, verifies and loads the program; creates or reuses the maps. One per process is
  // enough: a single program serves every port of every namespace.
  static Result<LinkShaper> load(const ShaperOptions& options = {});

  LinkShaper(LinkShaper&&) noexcept;
  LinkShaper& operator=(LinkShaper&&) noexcept;
  ~LinkShaper();

  // Attaches the program at the egress of `ifname` inside the network namespace pinned at
  // `netns_path` ("" = the caller's namespace). The attachment stays valid after this object
  // is gone (the kernel holds the program), and detaches when it is destroyed.
  Result<ShaperAttachment> attach(const std::string& netns_path, const std::string& ifname,
                                  AttachMethod method = AttachMethod::Auto);
  // The same in the calling thread's namespace, on this thread; `where` names it in errors.
  Result<ShaperAttachment> attach_here(const std::string& ifname, const std::string& where,
                                       AttachMethod method = AttachMethod::Auto);

  // Sets the shape of the port with this ifindex, live: the next packet sees it. The port's
  // virtual clock and loss sequence carry on unless the seed changes.
  Result<void> set(uint32_t ifindex, const fabemu_link_cfg& cfg);
  Result<void> set(uint32_t ifindex, const LinkShape& shape, uint64_t seed, bool policer);
  // A planned port's shape, with PFC: the buffer its far end keeps for it is configured (and
  // forgotten when PFC goes off).
  Result<void> set(const ShapePort& port);
  Result<fabemu_link_cfg> get(uint32_t ifindex) const;
  // Stops shaping the port (its packets pass untouched) and forgets its state and counters.
  Result<void> remove(uint32_t ifindex);
  // Empties the port's virtual queue and restarts its PRNG from the configured seed.
  Result<void> reset_state(uint32_t ifindex);

  Result<LinkCounters> counters(uint32_t ifindex) const;
  // The port's shape, counters and virtual clock, read again while the clock moved during the
  // read (a frame was admitted): consistent but for frames that other CPUs are counting at
  // that moment, at most one per CPU, which the queue holds and the counters miss (the next
  // read has them). Empty when the port is unshaped.
  Result<std::optional<PortSnapshot>> snapshot(uint32_t ifindex) const;
  // The CPUs the counters are kept for (libbpf's possible CPUs), at least 1.
  static unsigned cpus();
  // Every shaped port (config present), ascending by ifindex.
  Result<std::vector<uint32_t>> shaped() const;
  // Every attached port as recorded by attach().
  Result<std::vector<ShapedPort>> ports() const;

  // A digest of the BPF object built into this binary: a verdict about loading it (cached per
  // boot by the capability probe) holds for this program only.
  static uint64_t program_digest();

  // PFC's queue mode (shaping/pfc_qdisc.cpp): loads the lab's BPF qdisc with this shaper's
  // maps and registers it as qdisc kind `kind`, pinned as kPfcQdiscPin in the pin dir so that
  // removing the pin dir unregisters it. A kind already pinned there is kept.
  Result<void> register_pfc_qdisc(const std::string& kind);
  // Whether this kernel verifies the BPF qdisc (Linux 6.16+ with CONFIG_NET_SCH_BPF), without
  // registering it; the error says why not.
  static Result<void> probe_pfc_qdisc();

  // fabric.load_balance on one switch (shaping/load_balancer.cpp): its groups and routes in the
  // maps, and the balancer at the ingress of its ports, which must be in the calling thread's
  // namespace.
  Result<void> balance(const BalanceSwitch& b);
  // A balanced switch's groups and routes replaced by `b`'s (after a reroute); its ports keep
  // the balancer.
  Result<void> rebalance(const BalanceSwitch& b);
  // A group's counters; empty when the lab has no such group.
  Result<std::optional<BalanceCounters>> balance_counters(uint32_t group) const;
  // Every group's moves, down skips and frames without a member, summed (the lab's groups are
  // numbered from 0); `members` stays 0.
  Result<BalanceCounters> balance_totals() const;
  // Every flow the balancers saw at its last hop (the most recent FABEMU_LB_MAX_ORDER_FLOWS).
  Result<std::vector<FlowOrderCounters>> flow_order() const;
  // The balancer, for BPF_PROG_TEST_RUN.
  int balance_prog_fd() const;

  // DCQCN at a host port (shaping/dcqcn.cpp): its NIC's parameters, for the reaction point
  // at its egress (the port shaped with FABEMU_LINK_DCQCN) and the notification point at its
  // ingress, which `attach_notification_point` puts there (the port in the calling thread's
  // namespace, `where`).
  Result<void> set_dcqcn(uint32_t ifindex, const fabemu_dcqcn_cfg& cfg);
  Result<void> attach_notification_point(const std::string& ifname, uint32_t ifindex,
                                         const std::string& where);
  Result<DcqcnCounters> dcqcn_counters(uint32_t ifindex) const;
  // Every QP the lab's reaction points track.
  Result<std::vector<DcqcnQp>> dcqcn_qps() const;
  // The notification point's program, for BPF_PROG_TEST_RUN.
  int roce_prog_fd() const;

  // A switch's shared buffer (switches: {buffer, alpha}), which its ports name by id: written
  // before the ports that queue in it; `buffer` reads its occupancy.
  Result<void> set_buffer(const SharedBufferParams& b);
  Result<BufferOccupancy> buffer(uint32_t id) const;

  // The program, for BPF_PROG_TEST_RUN and for other attach methods (tcx).
  int prog_fd() const;
  const std::string& pin_dir() const { return pin_dir_; }

 private:
  struct Destroy {
    void operator()(link_shaper* s) const;
  };
  LinkShaper(std::unique_ptr<link_shaper, Destroy> skel, std::string pin_dir);
  int cfg_fd() const;
  int state_fd() const;
  int counters_fd() const;
  int ports_fd() const;
  int pfc_cfg_fd() const;
  int pfc_state_fd() const;

  std::unique_ptr<link_shaper, Destroy> skel_;
  std::string pin_dir_;
};

}  // namespace fabemu
