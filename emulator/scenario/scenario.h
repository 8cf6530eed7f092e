// Scenario: the parsed, validated content of a scenario YAML file (pure data).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "replay/program.h"

namespace fabemu {

// Where a value came from, for error messages: "fabric.yaml:12:5".
struct SourceLoc {
  std::string file;
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based
  std::string str() const;
};

// One direction of one link. Unset fields inherit from a less specific level.
// Gilbert-Elliott burst loss: a two-state chain stepped once per packet.
struct BurstLoss {
  double p = 0;          // P(good -> bad) per packet
  double r = 1;          // P(bad -> good) per packet: bursts last 1/r packets on average
  double loss_bad = 1;   // drop probability in the bad state
  double loss_good = 0;  // drop probability in the good state
  bool operator==(const BurstLoss&) const = default;
};

// Priority flow control of the lossless class on one direction: the buffer the receiving end
// keeps for frames from this link pauses the sender's class from `xoff_bytes` until it drains
// to `xon_bytes`. xoff_bytes 0: off. xoff_bytes kPfcXoffDynamic (`xoff: dynamic`): Xoff is
// the receiving switch's dynamic threshold, alpha x its shared buffer still free (switches:
// {buffer, alpha}), and the pause ends `xon_bytes` below it (xon_offset); a receiving node
// without a shared buffer (a host) never pauses the link.
constexpr uint64_t kPfcXoffDynamic = 1ULL << 40;
struct PfcShape {
  uint64_t xoff_bytes = 0;
  uint64_t xon_bytes = 0;
  uint64_t watchdog_ns = 0;  // a pause longer than this drops the class instead; 0: no watchdog
  bool dynamic() const { return xoff_bytes == kPfcXoffDynamic; }
  bool operator==(const PfcShape&) const = default;
};

// ECN marking like a switch's RED/WRED profile (as DCQCN deployments configure it): a frame that
// finds a backlog of at most `kmin_bytes` is not marked, one between kmin and kmax with a
// probability rising linearly to `pmax`, one above kmax always. kmax_bytes 0: off.
struct RedEcn {
  uint64_t kmin_bytes = 0;
  uint64_t kmax_bytes = 0;
  double pmax = 0;  // 0 < pmax <= 1
  bool operator==(const RedEcn&) const = default;
};

struct LinkShape {
  std::optional<uint64_t> rate_bps;
  std::optional<uint64_t> delay_ns;
  std::optional<uint64_t> jitter_ns;
  std::optional<bool> reorder;          // jitter may reorder packets (default true)
  std::optional<double> loss;           // fraction 0..1
  std::optional<BurstLoss> loss_burst;  // instead of `loss`
  std::optional<uint64_t> queue_ns;
  std::optional<uint64_t> queue_bytes;
  std::optional<uint64_t> ecn_threshold_ns;
  std::optional<uint64_t> ecn_threshold_bytes;  // the same as a backlog, like a switch's K
  std::optional<RedEcn> ecn;                    // RED: probability from kmin to kmax
  std::optional<bool> down;
  std::optional<PfcShape> pfc;
  // Damage on the wire (fractions 0..1, seeded like loss): a frame corrupted (the next hop
  // discards it, as a port discards a frame whose FCS fails) or sent twice.
  std::optional<double> corrupt;
  std::optional<double> duplicate;

  // Fields set in `over` replace ours.
  void merge(const LinkShape& over);
  // "rate 25gbit, delay 2us, loss 0.5%" in the scenario's own spelling; "" when empty.
  std::string str() const;
  bool empty() const;
  bool operator==(const LinkShape&) const = default;
};

// A rate-limited link with neither queue limit gets this one. Deep enough for TCP at the rates
// emulated here, and it keeps an unresponsive flood from pushing departures seconds ahead (which
// `fq` would drop past its horizon) or from making a policer let through an unbounded burst.
inline constexpr uint64_t kDefaultQueueNs = 10'000'000;

// The bytes a rate-limited direction queues before it tail-drops: its byte limit, or its time
// limit (kDefaultQueueNs with neither) at its rate, whichever is less. Unset without a rate.
std::optional<uint64_t> queue_capacity_bytes(const LinkShape& s);

// The first setting of `s` drawn per frame (loss, loss_burst, corrupt, duplicate), by its key;
// nullptr when none is. fabric.gso refuses them: a super-frame would meet the draw whole.
const char* per_frame_draw(const LinkShape& s);

enum class TopologyKind { LeafSpine, FatTree, RailOptimized, Explicit };

struct LeafSpineSpec {
  int leaves = 0;
  int spines = 0;
  int hosts_per_leaf = 0;
};

struct FatTreeSpec {
  int k = 0;
};

struct RailOptimizedSpec {
  int nodes = 0;
  int gpus_per_node = 0;
  int spines = 0;
  LinkShape scale_up;  // the node-local scale-up domain (NVLink-like switch)
};

enum class Role { Host, Switch };

struct ExplicitNode {
  std::string name;
  Role role = Role::Host;
  SourceLoc loc;
};

struct ExplicitLink {
  std::string a, b;
  LinkShape shape;
  SourceLoc loc;
};

struct ExplicitSpec {
  std::vector<ExplicitNode> nodes;
  std::vector<ExplicitLink> links;
};

struct TopologySpec {
  TopologyKind kind = TopologyKind::LeafSpine;
  LeafSpineSpec leaf_spine;
  FatTreeSpec fat_tree;
  RailOptimizedSpec rail;
  ExplicitSpec explicit_;
  SourceLoc loc;
};

enum class SwitchKind { Router, Bridge, Ovs };
// How router switches learn their routes: planned and installed by `up` (static), or by eBGP
// between FRR daemons on every switch (RFC 7938), with BFD on every session.
enum class Routing { Static, Bgp };
// The fields ECMP hashes: addresses and protocol (l3), with the ports (l4), and with a RoCEv2
// frame's destination QP too (qp: Meta's E-ECMP; hashed by fabemu's eBPF balancer, the kernel's
// FIB has no such field).
enum class EcmpHash { L3, L4, Qp };
// fabric.load_balance (docs/load-balancing.md): how a switch spreads frames over a route's ECMP
// members. ecmp: per flow by hash, for life; flowlet: a flow idle for `gap` draws a member
// afresh; spray: each frame its own member; adaptive: the member whose egress backlog (the link
// model's queue) is least, per frame or per flowlet, ties by hash.
enum class LoadBalanceMode { Ecmp, Flowlet, Spray, Adaptive };
struct LoadBalance {
  LoadBalanceMode mode = LoadBalanceMode::Ecmp;
  uint64_t gap_ns = 50'000;  // flowlet, and adaptive per flowlet: real-fabric time
  bool random = false;       // spray: a random member, else round robin
  bool per_flowlet = false;  // adaptive: granularity flowlet, else packet
  // fabemu's eBPF balancer does it (the kernel's FIB: ecmp hashing l3 or l4).
  bool in_ebpf(EcmpHash hash) const {
    return mode != LoadBalanceMode::Ecmp || hash == EcmpHash::Qp;
  }
  bool operator==(const LoadBalance&) const = default;
};
// fabric.load_balance's overrides: a tier ("leaf", "spine", "core", and fat-tree's "edge",
// "agg") or a switch by name, checked against the topology when it is built.
// The tier a load_balance override names (leaf and edge 1, spine and agg 2, core 3), if any.
std::optional<int> switch_tier_named(std::string_view name);
struct LoadBalanceOverride {
  std::string target;
  LoadBalance lb;
  SourceLoc loc;
};
// Open vSwitch's datapath: the kernel module where it exists (auto), else userspace (netdev).
enum class OvsDatapath { Auto, Kernel, Userspace };

struct FabricSpec {
  SwitchKind switch_kind = SwitchKind::Router;
  OvsDatapath ovs_datapath = OvsDatapath::Auto;  // with switch_kind Ovs only
  EcmpHash ecmp_hash = EcmpHash::L4;
  LoadBalance load_balance;
  std::vector<LoadBalanceOverride> load_balance_overrides;
  // The mode a switch (by name and tier) balances with: its own override, its tier's, the
  // fabric's.
  LoadBalance load_balance_of(const std::string& node, int tier) const;
  // fabemu's eBPF balancer runs on some switch: a mode other than ecmp, or ecmp_hash: qp (a
  // workload's load_balance step has it on every router switch: Scenario::has_load_balance_step).
  bool ebpf_balancing() const;
  uint32_t mtu = 1500;
  // fabric.gso: the largest GSO super-frame TCP may hand a shaped port (bytes; 0: off, every skb
  // one wire frame). The link model counts and times a super-frame as its frames, but drops,
  // marks and delays them together (docs/scenario.md, "Segmentation offload").
  uint32_t gso_bytes = 0;
  SourceLoc gso_loc;
  Routing routing = Routing::Static;
  // BFD on every BGP session (routing: bgp), in the real fabric's time; unset: bfd: off (BGP's
  // own hold timer detects failures).
  struct Bfd {
    uint64_t interval_ns = 100'000'000;
    uint32_t multiplier = 3;
    bool operator==(const Bfd&) const = default;
  };
  std::optional<Bfd> bfd = Bfd{};
  static constexpr uint16_t kRoceV2UdpPort = 4791;  // IANA's, RoCEv2's only
  // The lossless class PFC protects: frames to UDP port `udp_port` (RoCEv2: 4791) or with a
  // DSCP in `dscp`. Unset: RoCEv2 when a link has PFC.
  struct Lossless {
    uint16_t udp_port = 0;
    std::vector<int> dscp;
    // Where PFC holds the class back: false ("departure"), the link model gives a held frame a
    // later departure time (fq; Linux 5.x+); true ("queue"), a BPF qdisc keeps it in the
    // port's queue until the far end's Xon (Linux 6.16+): buffers are real, and a cyclic
    // buffer dependency deadlocks as in a real fabric.
    bool hold_queue = false;
    bool operator==(const Lossless&) const = default;
  };
  std::optional<Lossless> lossless;
  // The class in force: RoCEv2 unless the scenario says otherwise, so that PFC set on a live
  // link has a class to protect.
  Lossless lossless_class() const { return lossless.value_or(Lossless{kRoceV2UdpPort, {}}); }
};

// Container limits of a host (cgroup). Unset = unlimited.
struct HostLimits {
  std::optional<double> cpu;             // CPUs, e.g. 0.5
  std::optional<uint64_t> memory_bytes;  // bytes
  void merge(const HostLimits& over);
  bool empty() const { return !cpu && !memory_bytes; }
};

// The clocks programs started in hosts read: the machine's (wall), or the real fabric's (time
// passing N times slower in a lab dilated N times, sleeps and timeouts N times longer).
enum class HostClock { Wall, Fabric };
// The hosts' /tmp: one of their own each, or the machine's.
enum class HostTmp { Private, Shared };

struct HostsSpec {
  HostLimits defaults;
  HostClock clock = HostClock::Wall;
  HostTmp tmp = HostTmp::Private;
  // TCP's minimum retransmission timeout on the hosts' routes, in the real fabric's time (Linux
  // defaults to 200ms; data-centre hosts often set a few ms). Unset: the kernel's own.
  std::optional<uint64_t> tcp_rto_min_ns;
  // The hosts' TCP congestion control ("cubic", "dctcp", ...); empty: the machine's default,
  // which differs between machines (bbr here, cubic in Debian's kernels).
  std::string tcp_congestion;
  // The hosts ask for ECN on their TCP connections (net.ipv4.tcp_ecn = 1), so that the links'
  // CE marks reach the senders; unset: the kernel's default (ECN only when the peer asks).
  std::optional<bool> tcp_ecn;
  struct Override {
    std::string host;
    HostLimits limits;
    SourceLoc loc;
  };
  std::vector<Override> overrides;
};

struct LinkOverride {
  std::string link;  // "a:b" (both directions) or "a>b" (one direction)
  LinkShape shape;
  SourceLoc loc;
};

struct LinksSpec {
  LinkShape defaults;
  std::map<std::string, LinkShape> classes;  // "host-leaf", "leaf-spine", ...
  std::map<std::string, SourceLoc> class_locs;
  std::vector<LinkOverride> overrides;
};

enum class RdmaMode { Auto, On, Off };

// rdma.dcqcn: DCQCN's parameters for soft-RoCE (ebpf/dcqcn.h), in the real fabric's units
// (dilated like every other time and rate). The defaults are HPCC's ns-3 DCQCN
// (alibaba-edu/High-Precision-Congestion-Control, simulation/run.py).
struct DcqcnSpec {
  uint64_t alpha_interval_ns = 1'000;     // alpha's update
  uint64_t decrease_interval_ns = 4'000;  // the rate decrease check
  uint64_t rp_timer_ns = 300'000;         // the rate increase timer
  uint64_t cnp_interval_ns = 50'000;      // notification point: one CNP per QP per this
  double g = 1.0 / 256;                   // alpha's gain
  std::optional<uint64_t> ai_bps;         // default 5 Mbit/s x (line rate / 25 Gbit/s)
  std::optional<uint64_t> hai_bps;        // default 50 Mbit/s x (line rate / 25 Gbit/s)
  uint64_t min_rate_bps = 1'000'000'000;
  uint32_t fast_recovery = 1;  // F: rounds of fast recovery before additive increase
  bool clamp_target = false;   // every decrease sets Rt = Rc (HPCC: only after the first stage)
  uint64_t byte_counter = 0;   // an increase event per this many bytes sent (HPCC: none)
  double initial_alpha = 1;    // alpha at a QP's first CNP (ConnectX's initial_alpha_value)
};

// switches: {buffer: 32M, alpha: 1, spine: {buffer: 64M}, leaf2: {alpha: 2}}: each switch's
// shared buffer (docs/congestion-control.md). Its egress ports share `bytes`, each holding at
// most alpha x the buffer still free (the dynamic threshold) instead of a queue of its own; a
// link's own `queue` still caps its port. Overrides name a tier or a switch (checked against
// the topology when it is built); a switch's own override wins over its tier's, which wins over
// the default.
struct SwitchBuffer {
  uint64_t bytes = 0;  // 0: no shared buffer (every port its own queue)
  double alpha = 1;
  bool operator==(const SwitchBuffer&) const = default;
};
struct SwitchBufferOverride {
  std::string target;
  std::optional<uint64_t> bytes;
  std::optional<double> alpha;
  SourceLoc loc;
};
struct SwitchBuffersSpec {
  SwitchBuffer defaults;
  std::vector<SwitchBufferOverride> overrides;
  SourceLoc loc;  // of switches
  // The buffer of a switch (by name and tier); bytes 0: none.
  SwitchBuffer of(const std::string& node, int tier) const;
  bool any() const;
};

// rdma.cc: what RoCE senders do about congestion. none: nothing (rxe's own), PFC alone holds
// the fabric lossless; dcqcn: fabemu's DCQCN at every host's NIC.
enum class RoceCc { None, Dcqcn };

struct RdmaCcSpec {
  RoceCc cc = RoceCc::None;
  DcqcnSpec dcqcn;
  SourceLoc loc;  // of rdma.cc
};

struct CollectiveStep {
  std::string collective;  // allreduce | allgather | reducescatter | alltoall | broadcast
  std::string library;     // gloo | mpi | ucx
  std::string transport;   // tcp | ibverbs | auto
  std::vector<uint64_t> sizes;
  int iterations = 20;
  // Gloo: connections (tcp) or queue pairs (ibverbs) per peer, the buffer split across them
  // (allreduce, alltoall, broadcast): more flows for the fabric's ECMP to spread.
  int qps_per_peer = 1;
};

struct ExecStep {
  std::string hosts = "all";  // "all" or a comma list of host names
  std::vector<std::string> command;
};

// N senders to one receiver at once (iperf3 TCP or UDP, or RDMA writes with ib_write_bw), and
// optionally a victim flow elsewhere that shares a link with them: what incast does to the
// receiver's goodput, to the fabric (drops, or PFC pauses spreading upstream) and to flows
// that never touched the hot spot.
struct IncastStep {
  std::vector<std::string> senders;
  std::string receiver;
  std::string transport = "tcp";     // tcp | udp | rdma
  uint64_t duration_ns = 0;          // of the real fabric
  std::optional<uint64_t> rate_bps;  // udp: each sender's offered rate (unset: the receiver's
                                     // link rate, so N senders offer N times what it takes)
  std::optional<int> dscp;           // of the flows (unset: the lossless class's first DSCP)
  struct Victim {
    std::string from, to;
  };
  std::optional<Victim> victim;  // TCP, in the same class as the incast
  // The `traffic` step: these flows (from, to) at once instead of senders -> receiver.
  std::vector<std::pair<std::string, std::string>> flows;
  bool is_traffic() const { return !flows.empty(); }
};

// Changes live links between steps, as `fabemu link set` would: every link (`all`), a class
// ("leaf-spine") or one link ("leaf1:spine1", "leaf1>spine1").
struct LinksStep {
  std::string select = "all";
  LinkShape set;
};

// Changes the switches' load balancing between steps (`load_balance: spray`, or `default` with
// tiers and switches, as fabric.load_balance): the same traffic under several modes in one run.
// A lab with such a step has fabemu's balancer on every router switch from `up` (ecmp then
// hashes in eBPF, as statically as the kernel's FIB).
struct LoadBalanceStep {
  LoadBalance lb;
  std::vector<LoadBalanceOverride> overrides;
};

// A training step replayed from a workload file (SimAI's text or Chakra's traces): each rank's
// compute as a wait of the recorded time and its collectives and sends for real, with the
// recorded sizes, on the recorded groups (docs/replay.md).
struct ReplayStep {
  std::string file;         // as the scenario wrote it
  std::string path;         // resolved against the scenario file's folder
  std::string format;       // simai | chakra
  std::string comm_groups;  // chakra: the process groups' JSON (resolved), or ""
  int iterations = 1;
  std::string transport = "auto";      // tcp | ibverbs | auto
  std::vector<std::string> placement;  // rank r on host placement[r]; empty: the default
  std::shared_ptr<const replay::Program> program;  // read and checked by the loader
};

struct WorkloadStep {
  std::variant<CollectiveStep, ExecStep, IncastStep, LinksStep, LoadBalanceStep, ReplayStep> step;
  std::optional<uint64_t> timeout_ns;  // unset: the runner's default
  SourceLoc loc;
};

// One entry of the fault timeline, at a time relative to the start of the workload. A link
// fault names `link` ("a:b" or "a>b" for set); a host fault names `host`.
struct FaultEvent {
  uint64_t at_ns = 0;
  std::string link;
  std::string host;
  std::optional<LinkShape> set;
  bool down = false;
  bool up = false;
  // With down (and flap): the fabric's routes move off the link, as a routing protocol would
  // make them once it saw the failure; false leaves them, and the link silently blackholes.
  bool reroute = true;
  struct Flap {
    int count = 1;
    uint64_t down_ns = 0, up_ns = 0;
    uint64_t jitter_ns = 0;  // each down and up period longer by up to this, drawn from the seed
  };
  std::optional<Flap> flap;
  // A straggler: the host's CPU quota (CPUs), for `for_ns` (0: until the run ends).
  std::optional<double> slow_cpu;
  uint64_t for_ns = 0;
  // Host faults: a crash (every process in it killed, its links down), a restart (its links
  // back, for the job's own restart logic), a freeze of freeze_ns (the cgroup freezer: a hung
  // host, a long GC pause), one NIC down or up.
  bool crash = false, restart = false;
  uint64_t freeze_ns = 0;
  std::string nic_down, nic_up;
  // A partition: every path between hosts of different groups cut inside the fabric (at their
  // switches), for `for_ns` (0: until the run ends).
  std::vector<std::vector<std::string>> partition;
  SourceLoc loc;
};

// Checks of a run's outcome for CI (`expect:`); `fabemu run` exits 1 when one fails.
struct Expectations {
  std::optional<bool> completes;          // every workload step succeeded
  std::optional<uint64_t> busbw_min_bps;  // each collective step's busbw at its largest size
  std::optional<uint64_t> max_drops;      // frames the link model dropped, all links, whole run
  // How much of the fault timeline must have been played: `all` (what a run with faults checks
  // unless told otherwise: a step the workload ended before, or that failed, fails the run) or
  // `any` (played or not: a timeline longer than the workload on purpose).
  enum class FaultsPlayed { All, Any };
  std::optional<FaultsPlayed> faults_played;
  SourceLoc loc;
  bool empty() const { return !completes && !busbw_min_bps && !max_drops && !faults_played; }
};

// `time_scale`: the lab runs N times slower than the real fabric the scenario describes (see
// model/time_scale.h); `auto` picks N from this machine's calibrated capacity.
struct TimeScaleSpec {
  bool automatic = false;
  double factor = 1;  // unless automatic
  SourceLoc loc;
};

// How `fabemu run` samples the links, in the real fabric's time.
struct TelemetrySpec {
  std::optional<uint64_t> interval_ns;  // unset: every 250 ms of wall clock
};

// `placement:` for a lab across machines: the nodes machine i builds (index from 0, in the
// allocation's order). Nodes not named are placed by the planner (plan/partition.h).
struct PlacementSpec {
  std::vector<std::vector<std::string>> machines;
  std::vector<std::vector<SourceLoc>> locs;  // of each name
  bool empty() const { return machines.empty(); }
};

struct Scenario {
  std::string file;  // path it was read from ("<string>" for tests)
  std::string name;
  uint64_t seed = 1;
  TimeScaleSpec time_scale;
  TopologySpec topology;
  FabricSpec fabric;
  HostsSpec hosts;
  LinksSpec links;
  RdmaMode rdma = RdmaMode::Auto;
  RdmaCcSpec rdma_cc;
  SwitchBuffersSpec switch_buffers;
  std::vector<WorkloadStep> workload;
  std::vector<FaultEvent> faults;
  TelemetrySpec telemetry;
  PlacementSpec placement;
  Expectations expect;
  // A workload step changes the load balancing: every router switch gets the balancer at `up`.
  bool has_load_balance_step() const;
};

}  // namespace fabemu
