// Plan: the ordered list of kernel and file-system actions that brings a lab up.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/lab_model.h"
#include "plan/lab_paths.h"
#include "plan/ovs_switch.h"
#include "plan/port_params.h"

namespace fabemu {

// A network namespace pinned at `pin` (named for `ip netns` by a MakeSymlink at
// /run/netns/NAME); hosts also get a UTS namespace whose hostname is the node name, pinned at
// uts_path.
struct CreateNamespace {
  std::string ns;        // namespace name
  std::string pin;       // bind mount inside the lab's run dir
  std::string uts_path;  // empty for switches
  std::string hostname;
};

struct SetSysctl {
  std::string ns;
  std::string key;  // "net/ipv4/ip_forward" (path under /proc/sys)
  std::string value;
  bool optional = false;  // absent on some kernels (IPv6 compiled out): skip quietly
};

struct SetLinkUp {
  std::string ns;
  std::string ifname;
};

// A veth pair created with each end directly in its namespace, with the fabric MTU. End a
// comes up with it; end b is brought up by a SetLinkUp in its namespace (the kernel cannot
// open a veth whose peer is not joined yet).
struct CreateVeth {
  std::string ns_a, if_a, ns_b, if_b;
  uint32_t mtu = 1500;
  // Lab-unique (see port_ifindex): the link model's maps are keyed by ifindex. 0: the kernel's
  // choice.
  uint32_t ifindex_a = 0, ifindex_b = 0;
  // On shaped ports gso_max_segs_for (plan/port_params.h): 1 unless fabric.gso is on. 0: the
  // kernel's default.
  uint32_t gso_max_segs = 0;
  // Fixed MACs where OVS switches rewrite Ethernet headers from the plan; unset: random.
  std::optional<Mac> mac_a, mac_b;
};

// One end of a link that crosses machines (plan/partition.h): a VXLAN device named like the
// port, made from the machine's own namespace (whose underlay carries it) straight into the
// node's namespace, where it is the port: the same ifindex, MTU and (with OVS) MAC a veth end
// would have had, and the link model on it. Unicast to the other machine, no learning; the VNI
// is the link's, unique in the lab (see vxlan_id).
struct CreateVxlan {
  std::string ns, ifname;
  uint32_t ifindex = 0;
  uint32_t vni = 0;
  Ipv4 local, remote;        // underlay addresses of this machine and the other end's
  std::string underlay_dev;  // this machine's lower device
  uint32_t mtu = 1500;
  uint32_t gso_max_segs = 0;  // as CreateVeth
  std::optional<Mac> mac;
};

// The VXLAN network identifier of a cut link: the lab's address pool and the link, so that two
// labs across the same machines never share one.
inline uint32_t vxlan_id(int pool, int link) {
  return 0x10000u * static_cast<uint32_t>(pool + 1) + static_cast<uint32_t>(link);
}
inline constexpr uint16_t kVxlanPort = 4789;
// What VXLAN adds to a frame on the underlay: outer Ethernet, IPv4, UDP and VXLAN headers.
inline constexpr uint32_t kVxlanOverhead = 50;

// Transmit checksumming, TSO, GSO and GRO off on a port: OVS's userspace datapath reads and
// writes whole frames on packet sockets, so a frame must leave its sender complete (TCP stalls
// on the checksums a veth would otherwise leave to "hardware").
struct DisableOffloads {
  std::string ns, ifname;
};

// The lab's own ovsdb-server and ovs-vswitchd, started in the OVS namespace with their
// database, sockets and logs in `dir` (OVS_RUNDIR): nothing shared with an OVS the machine runs.
struct StartOvs {
  std::string ns;
  std::string dir;
};

// Every switch as a bridge of `datapath` ("system": the kernel module; "netdev": userspace),
// with its ports, then each bridge's groups and flows (kept in dir/NAME.bundle, as ovs-ofctl bundle
// loads them).
struct ConfigureOvs {
  std::string ns;
  std::string dir;
  std::string datapath;
  std::vector<OvsBridge> bridges;
};

// Loads the link model and pins its maps for the lab (once, before any ShapePort).
struct LoadShaper {
  std::string bpffs_root;  // mounted first when the system has no bpffs there
  std::string pin_dir;
  // An unshaped lab comes up on a kernel without BPF too: it loads the model only so that
  // `link set` can use it later, and goes on without it (`status` says it is unavailable).
  bool required = true;
  // PFC's queue mode: the lab's BPF qdisc registered under this kind (pfc_qdisc_kind), with
  // the link model's maps; empty: none.
  std::string pfc_qdisc;
};

// The kind (tc's name, global to the kernel, at most 15 characters) of lab `lab`'s PFC qdisc
// in queue mode: "fp" and 13 hex digits of a hash of the name.
std::string pfc_qdisc_kind(const std::string& lab);

// DCQCN at a host's own port (rdma: {cc: dcqcn}, ebpf/dcqcn.h): its NIC's parameters, in the
// lab's wall units (rates / N, times x N).
struct DcqcnParams {
  uint64_t line_bps = 0, min_bps = 0, ai_bps = 0, hai_bps = 0;
  uint64_t alpha_ns = 0, decrease_ns = 0, rp_timer_ns = 0, cnp_interval_ns = 0;
  double g = 0;
  uint32_t fast_recovery = 0;
  bool clamp_target = false;
  uint64_t byte_counter = 0;  // bytes: not dilated
  double initial_alpha = 1;
};

// The parameters of `d` at a NIC whose link runs at `wall_line_bps` under `t`: ai and hai by
// default 5 and 50 Mbit/s per 25 Gbit/s of the real line rate, as HPCC scales them.
DcqcnParams dcqcn_params(const DcqcnSpec& d, uint64_t wall_line_bps, const TimeScale& t);

// A switch's shared buffer (switches: {buffer, alpha}) at one of its egress ports: `id` names
// the switch's buffer in the datapath (its node + 1), which counts occupancy in slots of
// `slot_ns` (an eighth of the buffer's drain time at the switch's slowest shaped port).
struct SharedBufferParams {
  uint32_t id = 0;
  uint64_t bytes = 0;
  double alpha = 1;
  uint64_t slot_ns = 0;
  bool operator==(const SharedBufferParams&) const = default;
};

// The shared buffer of `node` (a switch with switches.buffer and a shaped port), if any.
std::optional<SharedBufferParams> shared_buffer_of(const LabModel& m, int node);

// The link model on one port, i.e. one direction of one link: attach the program at its
// egress, write the shape, turn segmentation and receive offloads off, and (with fq) make fq
// the root qdisc that releases packets at the departure times the program sets.
struct ShapePort {
  std::string ns, ifname;
  uint32_t ifindex = 0;
  std::string direction;  // "leaf1>spine2"
  LinkShape shape;
  uint64_t seed = 0;
  bool policer = false;          // no fq: police a virtual queue, add no delay
  std::optional<FqParams> fq;    // unset with the policer
  std::optional<HtbParams> htb;  // policer with htb holding the rate (when the shape has one)
  // PFC's queue mode: the lab's BPF qdisc (this kind) is the root qdisc instead of fq; it
  // honours the departure times as fq does and pauses the lossless class in the queue.
  std::string pfc_qdisc;
  // PFC (shape.pfc): the far end's port, whose node keeps the buffer for this link; 0 when the
  // direction has no PFC. `lossless` is the lab's class (the same on every port).
  uint32_t pfc_peer = 0;
  FabricSpec::Lossless lossless;
  // The most frames in one skb TCP may hand the port (gso_max_segs_for): 1, or with fabric.gso
  // more, and the port's segmentation offloads stay on.
  uint32_t gso_max_segs = 1;
  // The switches seed their own ECMP hashes (PlanOptions::ecmp_seeds): the program leaves the
  // flow's hash as it is.
  bool keep_hash = false;
  // A host's own port in a lab that runs DCQCN: its reaction point paces the host's QPs at its
  // egress, its notification point answers CE at its ingress.
  std::optional<DcqcnParams> dcqcn;
  // A switch's port, where the switch has a shared buffer.
  std::optional<SharedBufferParams> buffer;
  // PFC with xoff: dynamic: the far end's shared buffer, whose free bytes set Xoff (unset: the
  // far end has none, and never pauses the link).
  std::optional<SharedBufferParams> pfc_buffer;
};

// A permanent ARP entry: the peer of a /31 port, at the MAC the plan gave it.
struct AddNeighbour {
  std::string ns, ifname;
  Ipv4 addr;
  Mac mac;
};

struct AddAddress {
  std::string ns, ifname;
  Prefix addr;  // address with its prefix length
};

struct AddRoute {
  std::string ns;
  Prefix dst;
  struct Hop {
    Ipv4 gateway;
    std::string ifname;
  };
  std::vector<Hop> hops;
  std::optional<Ipv4> src;  // preferred source address
  // TCP's minimum RTO for connections over this route (a locked RTAX_RTO_MIN metric), in ms.
  std::optional<uint32_t> rto_min_ms;
};

struct WriteFile {
  std::string path;
  std::string content;
};

struct MakeDir {
  std::string path;
};

// Symlinks may be made in the background (finish() waits for them): nothing in the plan
// depends on them, and on a disk-backed /run or /etc each costs a journal write.
struct MakeSymlink {
  std::string target;  // what the link points to
  std::string path;
};

// A cgroup per limited host, `fabemu/LAB/NODE` under each controller's hierarchy.
struct CreateCgroup {
  std::string path;  // relative to the controller's mount point
  HostLimits limits;
};

// A soft-RoCE device on a host's fabric NIC, created inside the host's namespace (rxe looks
// the netdev up and opens its UDP socket there). Its name is global: LabPaths::rxe_name.
struct CreateRxe {
  std::string ns;
  std::string netdev;
  std::string name;
};

// routing: bgp: FRR's daemons for one router switch, started in its namespace with its own
// /etc/frr (etc_dir, the configuration) and /run/frr (run_dir: sockets, pid files, logs)
// bind-mounted in a mount namespace of their own. They detach; `down` kills them with every
// other process in the lab's namespaces.
struct StartRouter {
  std::string ns, node;
  std::string etc_dir, run_dir;
  std::vector<std::string> daemons;  // zebra, bfdd, bgpd
};

// Waits until the kernel FIB of a router holds `routes` (each destination with exactly these
// next hops), i.e. until BGP has converged to the routing plan; fails at the deadline naming
// what is missing.
struct AwaitRoutes {
  std::string ns, node;
  struct Expected {
    Prefix dst;
    std::vector<Ipv4> gateways;  // sorted
  };
  std::vector<Expected> routes;
  std::chrono::milliseconds timeout{60000};
};

// fabric.load_balance on one router switch (docs/load-balancing.md): fabemu's balancer (the
// link model's object, ebpf/load_balance.h) at the ingress of each of its ports, and its ECMP
// routes as groups of members, after the link model is loaded. Frames to destinations without a
// group go on to the kernel's FIB.
struct BalanceSwitch {
  std::string ns, node;
  uint32_t switch_id = 0;  // lab-unique: the node's index + 1
  struct Port {
    std::string ifname;
    uint32_t ifindex = 0;
  };
  std::vector<Port> ports;
  struct Member {
    uint32_t ifindex = 0;  // the switch's port
    Ipv4 nexthop;
  };
  struct Group {
    uint32_t id = 0;  // lab-unique
    LoadBalance lb;
    EcmpHash hash = EcmpHash::L4;
    uint32_t seed = 0;
    uint64_t gap_wall_ns = 0;  // lb.gap_ns in wall-clock time (dilated)
    std::vector<Member> members;
  };
  std::vector<Group> groups;
  struct Route {
    Prefix dst;
    // kNoGroup: the kernel's FIB (a more specific route than a group's); kLastHop: the FIB
    // too, to a host of this switch, where the order of each flow's frames is counted.
    uint32_t group = 0;
  };
  static constexpr uint32_t kNoGroup = 0xffffffffu;
  static constexpr uint32_t kLastHop = 0xfffffffeu;
  std::vector<Route> routes;
};

// This machine's switches that balance in eBPF (plan/balance.cpp), each with its groups, from
// the model's routes (switches with groups) or (after a reroute, from a FIB) `routes` (every
// balancing switch, groups or none), with the scenario's modes or (a workload step's) `modes`.
std::vector<BalanceSwitch> balance_switches(const LabModel& m, const LabPaths& paths,
                                            const std::vector<std::vector<Route>>* routes = nullptr,
                                            const FabricSpec* modes = nullptr);
// "flowlet (gap 50us)", for plans, `up` and reports.
std::string load_balance_name(const LoadBalance& lb);

using Action = std::variant<CreateNamespace, SetSysctl, SetLinkUp, CreateVeth, CreateVxlan,
                            AddAddress, AddRoute, WriteFile, MakeDir, MakeSymlink, CreateCgroup,
                            LoadShaper, ShapePort, CreateRxe, DisableOffloads, StartOvs,
                            ConfigureOvs, StartRouter, AwaitRoutes, AddNeighbour, BalanceSwitch>;

std::string describe(const Action& a);  // one line, for errors and `--dry-run`

// The namespace an action works in, for applying a ParallelRange; nullptr for an action that
// depends on no other action of its range (a veth between namespaces made before it, a file).
const std::string* namespace_of(const Action& a);

// Actions [begin, end) that several threads may apply at once: those of one namespace in plan
// order, those of different namespaces (and those of none) in any order.
struct ParallelRange {
  size_t begin = 0, end = 0;
};

// What a lab leaves on the system, in creation order; `down` removes it in reverse.
// Objects inside a namespace (veths, addresses, routes) go with the namespace and are not listed.
struct JournalEntry {
  // Mount: the lab's run dir tmpfs; Path: a file, symlink or directory tree;
  // Netns/Uts: a pinned namespace (inside the run dir: it goes with its unmount);
  // Pins: a bpffs directory of pinned maps; Rdma: an RDMA device by name (global, so it is
  // deleted before the namespaces go).
  enum class Kind { Mount, Path, Netns, Uts, Cgroup, Pins, Rdma } kind;
  std::string path;
  bool operator==(const JournalEntry&) const = default;
};

struct Plan {
  std::string lab;
  int pool = 0;
  std::vector<JournalEntry> journal;  // written before the first action runs
  std::vector<Action> actions;
  std::vector<ParallelRange> parallel;        // in order, disjoint
  int namespaces = 0, veths = 0, routes = 0;  // for progress and reports
  int tunnels = 0;                            // VXLAN ends of links to other machines
  int shaped_ports = 0;
  int rxe_devices = 0;
  int ovs_bridges = 0;
  int bgp_routers = 0;
  int balanced_switches = 0;
};

// RdmaChoice and OvsChoice (model/lab_model.h) as the run dir keeps them
// (LabPaths::rdma_file, LabPaths::ovs_file).
std::string format_rdma_choice(const RdmaChoice& choice);
Result<RdmaChoice> parse_rdma_choice(const std::string& text, const std::string& path);

std::string format_ovs_choice(const OvsChoice& choice);
Result<OvsChoice> parse_ovs_choice(const std::string& text, const std::string& path);

// The lab's time scale as the run dir keeps it (LabPaths::time_scale_file): "FACTOR why".
std::string format_time_scale(const LabModel& m);
Result<void> parse_time_scale(const std::string& text, const std::string& path, LabModel& m);

// What the running kernel lets the link model do (probed by the caller: plans are pure).
struct PlanOptions {
  bool fq = true;  // sch_fq exists: departure times (delay, jitter, exact rate); else policer
  std::string no_fq_reason;  // what the probe saw, for `status`
  bool htb = false;          // without fq: sch_htb exists and holds each port's rate
  // Every CPU as a hex cpumask ("3", "ff,ffffffff"): receive steering for the lab's ports, so
  // that a flow is never reordered between CPUs. Empty: leave RPS off.
  std::string rps_mask;
  // Each switch namespace seeds its own ECMP hash (net.ipv4.fib_multipath_hash_seed): switches
  // choose next hops apart while a flow keeps one hash, and so one CPU, along its path. Else the
  // link model gives the flow a new hash at every port (a new CPU at every hop).
  bool ecmp_seeds = false;
  RdmaChoice rdma;  // soft-RoCE on the hosts, as `up` decided
  OvsChoice ovs;    // with fabric.switch: ovs
  // The kernel's ARP table is one for every namespace, and holds at most this many entries it
  // may collect (net.ipv4.neigh.default.gc_thresh3; permanent ones do not count). A lab whose
  // ports could need more than half of it gets fixed MACs and a permanent entry for each
  // port's peer. 0: unknown, never.
  int neighbour_limit = 0;
  // /run/netns/NS and /etc/netns/NS for `ip netns` (fabemu itself uses the pins in the lab's
  // tmpfs). Off by default above kNetnsNamesUpTo namespaces: on a disk-backed /run or /etc
  // each costs an inode (0.3-0.45 ms here, more while the last lab's are recently deleted).
  bool netns_names = true;
};
inline constexpr int kNetnsNamesUpTo = 128;

// Whether a lab of `ports` routed ports gets permanent neighbours under `limit` (above).
bool static_neighbours(size_t ports, int limit);

// Linux's TCP_RTO_MIN, and the longest RTO it ever waits (TCP_RTO_MAX), in ms.
inline constexpr uint64_t kLinuxRtoMinNs = 200'000'000;
inline constexpr uint64_t kMaxRtoMs = 120'000;
// The hosts' TCP RTO floor on their routes, in wall ms: the scenario's hosts.tcp_rto_min
// dilated (Linux's 200ms when a dilated lab names none); unset: the kernel's own.
std::optional<uint32_t> host_rto_min_ms(const LabModel& m);

// The hex cpumask of CPUs 0..n-1 in the kernel's format (32-bit groups joined by commas).
std::string cpu_mask(int cpus);

// The mode a lab was built with, kept in its run dir (LabPaths::shaping_file): "fq",
// "htb <why no fq>" or "policer <why no fq>", then "ecmp seeded" on a line of its own where
// the switches seed their ECMP hashes (PlanOptions::ecmp_seeds; ports attached later by `link
// set` must then leave the flow's hash alone too).
std::string format_shaping_mode(const PlanOptions& options);
std::string_view shaping_mode_name(const PlanOptions& options);  // "fq", "htb" or "policer"
Result<PlanOptions> parse_shaping_mode(const std::string& text, const std::string& path);
// What the link model does on `shaped_ports` ports in this mode, as `up` says it and the run's
// report repeats it: "link model on 24 ports: this kernel has no fq (...), so htb holds ...
// but no delay or jitter is added". `pfc_queue`: PFC holds the lossless class in a queue.
std::string link_model_text(const PlanOptions& mode, int shaped_ports, bool pfc_queue);

// The first port's ifindex. Every port of a lab gets its own, so one set of maps (keyed by
// ifindex) serves all its namespaces; far above what a fresh namespace's own devices use.
inline constexpr uint32_t kFirstPortIfindex = 1000;
// Link `link`'s port on side a (b_side false) or b.
inline uint32_t port_ifindex(int link, bool b_side) {
  return kFirstPortIfindex + 2 * static_cast<uint32_t>(link) + (b_side ? 1 : 0);
}

// The namespace that holds a node's ports: its own, or for an OVS switch the lab's OVS
// namespace; its name and its pin's path for `ip netns`.
std::string node_ns(const LabModel& m, const LabPaths& paths, int node);
std::string node_netns_path(const LabModel& m, const LabPaths& paths, int node);

// A limited host's cgroup, relative to each controller's mount point: `fabemu/LAB/HOST`.
std::string host_cgroup(const LabPaths& paths, const std::string& host);

// This machine's part of a lab across machines as the run dir keeps it (LabPaths::part_file),
// one JSON object; parse fills m.part (the placement is computed again from the model).
std::string format_part(const MachinePart& part);
Result<void> parse_part(const std::string& text, const std::string& path, LabModel& m);

// Every port is shaped when any link direction has a shape; otherwise none is (and `fabemu link
// set` attaches the model when it is first needed).
Plan make_plan(const LabModel& model, const LabPaths& paths, int pool,
               const PlanOptions& options = {});

// Link directions whose shape the kernel cannot enforce without fq (delay or jitter), as
// "a>b: delay 2us" lines; empty when fq is there or nothing needs it.
std::vector<std::string> needs_fq(const LabModel& model);

// The ShapePort of one direction of a link shaped like `shape` in the real fabric: the port gets
// it dilated by the lab's time scale, with fq (or htb) limits for that.
ShapePort port_of(const LabModel& m, const LabPaths& paths, int link, bool b_to_a,
                  const PlanOptions& options, const LinkShape& shape);

}  // namespace fabemu
