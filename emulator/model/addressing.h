// Address plan: IPv4 point-to-point /31 subnets, per-edge-switch aggregate blocks, loopbacks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/topology.h"

namespace fabemu {

struct Ipv4 {
  uint32_t v = 0;  // host byte order
  std::string str() const;
  bool operator==(const Ipv4&) const = default;
  auto operator<=>(const Ipv4&) const = default;
};

struct Prefix {
  Ipv4 addr;
  int len = 32;
  std::string str() const;  // "10.64.0.0/28"
  bool contains(Ipv4 ip) const;
  uint64_t size() const { return uint64_t{1} << (32 - len); }
  bool operator==(const Prefix&) const = default;
};

std::optional<Ipv4> parse_ipv4(std::string_view s);

// Each lab gets its own /16 out of 10.64.0.0/10 (pool index 0..63), so two labs never share
// addresses even though their namespaces are disjoint: a user comparing captures can tell them
// apart, and nothing here ever routes outside the lab.
constexpr int kMaxLabPools = 64;
Prefix lab_pool(int index);

struct LinkAddresses {
  Ipv4 a, b;  // a-side and b-side addresses of the /31
};

struct AddressPlan {
  Prefix pool;
  std::vector<LinkAddresses> links;               // per link
  std::vector<std::optional<Ipv4>> loopback;      // per node: switches' router id (/32 on lo)
  std::vector<std::optional<Prefix>> edge_block;  // per node: switch's block of host links

  Ipv4 address_of(const Topology& t, int link, int node) const {
    return t.links[link].a.node == node ? links[link].a : links[link].b;
  }
  // A host's primary address (its eth0), the one its name resolves to.
  Ipv4 host_address(const Topology& t, int host) const {
    return address_of(t, t.links_of(host).front(), host);
  }
};

// Host-facing links of a switch are numbered inside one aligned block so that the rest of the
// fabric routes the whole block with one route; the switch takes the even address of each /31.
Result<AddressPlan> plan_addresses(const Topology& topo, Prefix pool);

// "h1 10.64.0.1" lines for /etc/hosts inside every namespace of the lab.
std::string hosts_file(const Topology& topo, const AddressPlan& plan, const std::string& lab);

}  // namespace fabemu
