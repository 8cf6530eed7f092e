// Open vSwitch switches: each switch of the model as an OVS bridge whose OpenFlow table routes
// the way a router switch does (longest prefix, TTL decrement, MAC rewrite, ECMP by hash).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "model/addressing.h"
#include "model/routing.h"
#include "model/topology.h"
#include "scenario/scenario.h"

namespace fabemu {

// A locally administered unicast MAC.
struct Mac {
  std::array<uint8_t, 6> bytes{};
  std::string str() const;  // "02:fe:00:00:05:01"
  bool operator==(const Mac&) const = default;
  auto operator<=>(const Mac&) const = default;
};

// Every port's MAC is fixed by the plan, so switches know their neighbours' MACs without ARP:
// 02:fe:POOL:LINK(16 bits):SIDE.
Mac port_mac(int pool, int link, bool b_side);

// One way out of a switch: the port, and the Ethernet header a router would write.
struct OvsHop {
  int ofport = 0;
  Mac src, dst;
  bool operator==(const OvsHop&) const = default;
  auto operator<=>(const OvsHop&) const = default;
};

struct OvsRoute {
  Prefix dst;
  int ecmp = -1;             // index into OvsBridge::ecmp_sets, or -1: one hop
  std::vector<OvsHop> hops;  // one hop, or the set's hops (kept for tracing)
};

// The switch answers ARP for its own address on a port (hosts' gateways).
struct OvsArpReply {
  int ofport = 0;
  Ipv4 ip;
  Mac mac;
};

struct OvsPort {
  std::string ifname;
  int ofport = 0;  // requested at creation, so flows can name it
};

struct OvsBridge {
  std::string name;  // the switch's name
  std::vector<OvsPort> ports;
  std::vector<OvsArpReply> arp;
  std::vector<OvsRoute> routes;  // longest prefix first
  std::vector<std::vector<OvsHop>> ecmp_sets;
  EcmpHash hash = EcmpHash::L4;
  // The select groups' hash basis, different on every switch (from the scenario seed): with one
  // basis everywhere, two tiers would make the same choice for a flow and use half the paths.
  uint64_t hash_basis = 0;
};

// Switch `sw` of the model as a bridge: a port per link (ofport = position + 1), ARP replies
// for its addresses, a route per connected neighbour and per route of the routing plan.
OvsBridge ovs_bridge(const Topology& t, const AddressPlan& addresses,
                     const std::vector<Route>& routes, int sw, const FabricSpec& fabric,
                     uint64_t seed, int pool);

// The bridge's flows in `ovs-ofctl add-flows` syntax and its select groups in `ovs-ofctl -O
// OpenFlow15 add-groups` syntax, one per line. With the L4 hash, TCP and UDP go to groups that
// hash their ports (a group's hash fields need the protocol in the flow's match), other IP to
// one that hashes addresses and protocol.
std::vector<std::string> ovs_flow_lines(const OvsBridge& b);
std::vector<std::string> ovs_group_lines(const OvsBridge& b);

}  // namespace fabemu
