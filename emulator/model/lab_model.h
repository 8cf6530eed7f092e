// LabModel: everything a lab is, as pure data — the scenario, its topology, addresses and
// routes, and the choices `up` made for this kernel (soft-RoCE, the OVS datapath).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/addressing.h"
#include "model/bgp.h"
#include "model/routing.h"
#include "model/time_scale.h"
#include "model/topology.h"
#include "scenario/scenario.h"
#include "util/result.h"

namespace fabemu {

// Whether the hosts get soft-RoCE (rxe) devices: the scenario's rdma.enabled against what the
// kernel can do (probed by the caller). Kept in the lab's run dir as "rxe" or "off <why>".
struct RdmaChoice {
  bool rxe = false;
  std::string why_not;  // "rdma.enabled: off", "auto: this kernel has no rdma_rxe (...)"
};

// Which datapath OVS switches use: the kernel's where the scenario allows it and the module is
// there, else userspace. Kept in the lab's run dir as "kernel" or "userspace <why>".
struct OvsChoice {
  bool kernel = false;
  std::string why_userspace;  // "fabric.ovs_datapath: userspace", "no openvswitch module (...)"
};

// Which machine builds each node of a lab spread over several (plan/partition.h decides).
struct Placement {
  int machines = 1;
  std::vector<int> machine_of;  // per node, 0 .. machines-1
  std::vector<int> cut_links;   // links whose two ends are on different machines, ascending

  bool cut(int link) const;
  // Nodes of machine m, in node order.
  std::vector<int> nodes_of(int m) const;
};

// This machine's part of a lab spread over several: which machine it is, where every node is,
// and the underlay that joins the machines (cut links are VXLAN tunnels over it).
struct MachinePart {
  int index = 0;
  std::vector<std::string> machines;  // names, in the allocation's order
  std::vector<Ipv4> underlay;         // each machine's underlay address
  std::string underlay_dev;           // this machine's lower device for the tunnels
  // A directory every machine sees at this path (a shared filesystem): where the ranks of a
  // collective meet and rank 0 writes the results.
  std::string shared_dir;
  Placement placement;

  bool local(int node) const { return placement.machine_of[node] == index; }
};

struct LabModel {
  Scenario scenario;
  Topology topo;
  AddressPlan addresses;
  std::vector<std::vector<Route>> routes;
  // routing: bgp: the switches that run FRR, their sessions and the FIB they must converge to
  // (switches then get from the plan only their routes to hosts, `routes` stays the static
  // plan: what the OVS flows and the fault player's static reroute use).
  std::vector<BgpRouter> bgp;
  // Not part of the pure model: what `up` decided, read back from the run dir by lab_model()
  // (build_model leaves it off), so that `exec` and workloads see the hosts' rxe devices.
  RdmaChoice rdma;
  OvsChoice ovs;  // the same for the OVS datapath
  // How much slower than the real fabric the lab runs, and why that factor: the scenario's,
  // --time-scale, or `auto` (build_model takes the scenario's number; `up` decides `auto`).
  TimeScale time_scale;
  std::string time_scale_why;
  // Set when the lab spans machines: this machine builds, shapes and runs only its part.
  std::optional<MachinePart> part;
};

// Whether this machine builds `node` (always, unless the lab spans machines).
bool local_node(const LabModel& m, int node);

// Scenario -> topology -> addresses (out of pool `pool`) -> routes, all pure.
Result<LabModel> build_model(const Scenario& scenario, int pool);

// The BGP router on `node`, or null (static routing, or a switch without switch links).
const BgpRouter* bgp_router(const LabModel& m, int node);

// Whether the lab's switches are OVS bridges (all in one namespace) rather than routers.
bool ovs_switches(const LabModel& m);

// Whether a host gets a cgroup (`fabemu/LAB/HOST`): it has limits, or a fault slows it.
bool host_has_cgroup(const LabModel& m, int host);

// The NIC a host reaches the fabric through (its first link): where its rxe device sits and
// what *_SOCKET_IFNAME name.
std::string host_nic(const Topology& t, int host);

// "a:b": the name of a link (both directions), as scenarios, `link set` and reports spell it.
std::string link_name(const Topology& t, const Link& l);

// "a>b": the name of one direction of a link, used for seeds and in reports.
std::string direction_name(const Topology& t, int link, bool b_to_a);

}  // namespace fabemu
