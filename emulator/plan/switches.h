// The switches of a lab, by kind (fabric.switch: router or ovs; routing: bgp): where they live,
// what the plan gives their ports and routes, what it adds for them, and how forwarding moves
// off a failed link. The plan, the reroute and the fault timeline ask this one object instead
// of each branching on the scenario.
#pragma once

#include <string_view>

#include "model/lab_model.h"

namespace fabemu {

struct Plan;
struct PlanContext;

class Switches {
 public:
  virtual ~Switches() = default;
  virtual std::string_view name() const = 0;  // "router", "ovs" or "bgp"
  // Each switch in a namespace of its own that forwards (routers), or every switch a bridge in
  // the lab's one OVS namespace, which does not forward itself.
  virtual bool own_namespaces() const { return true; }
  // The switches' ports get addresses, neighbours and the kernel's routes (routers); OVS
  // bridges' ports get none (OpenFlow routes them, flows answer ARP) and fixed MACs.
  virtual bool kernel_ports() const { return true; }
  // Whether `node` gets the plan's route `r` in its kernel (a BGP router learns the routes via
  // other switches from its peers).
  virtual bool planned_route(const LabModel&, int /*node*/, const Route&) const { return true; }
  // What the plan adds for them: the switches themselves once ports are addressed (OVS daemons
  // and bridges with their flows), their control plane once /etc and /tmp exist (FRR).
  virtual void add_switches(Plan&, const PlanContext&) const {}
  virtual void add_control_plane(Plan&, const PlanContext&) const {}
  // How forwarding moves off a failed link: the plan's routes for the fabric without it
  // replace the switches' (router), the bridges' flows are replaced (ovs), or the routers'
  // own protocol moves them and the fault timeline watches their FIBs (bgp).
  enum class Reroute { Routes, Flows, Protocol };
  virtual Reroute reroute() const = 0;
};

const Switches& switches_of(const LabModel& m);

}  // namespace fabemu
