// Open vSwitch bridges from the routing plan, and their OpenFlow flows and groups as text.
#include "plan/ovs_switch.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "util/prng.h"

namespace fabemu {

std::string Mac::str() const {
  char buf[18];
  std::snprintf(buf, sizeof buf, "%02x:%02x:%02x:%02x:%02x:%02x", bytes[0], bytes[1], bytes[2],
                bytes[3], bytes[4], bytes[5]);
  return buf;
}

Mac port_mac(int pool, int link, bool b_side) {
  return Mac{{0x02, 0xfe, static_cast<uint8_t>(pool), static_cast<uint8_t>(link >> 8),
              static_cast<uint8_t>(link), static_cast<uint8_t>(b_side ? 1 : 0)}};
}

OvsBridge ovs_bridge(const Topology& t, const AddressPlan& addresses,
                     const std::vector<Route>& routes, int sw, const FabricSpec& fabric,
                     uint64_t seed, int pool) {
  OvsBridge b;
  b.name = t.nodes[sw].name;
  b.hash = fabric.ecmp_hash;
  b.hash_basis = link_seed(seed, "ecmp " + b.name);
  const std::vector<int>& links = t.links_of(sw);
  std::map<int, int> ofport_of;  // link -> ofport
  auto hop_over = [&](int link) {
    const Link& l = t.links[link];
    const bool b_side = l.b.node == sw;
    return OvsHop{ofport_of.at(link), port_mac(pool, link, b_side), port_mac(pool, link, !b_side)};
  };
  for (size_t i = 0; i < links.size(); ++i) {
    const int link = links[i];
    const int ofport = static_cast<int>(i) + 1;
    ofport_of[link] = ofport;
    b.ports.push_back({t.links[link].end(sw).ifname, ofport});
    b.arp.push_back({ofport, addresses.address_of(t, link, sw),
                     port_mac(pool, link, t.links[link].b.node == sw)});
  }
  // What a router gets from its addresses: the neighbour at the other end of each /31.
  for (int link : links)
    b.routes.push_back({Prefix{addresses.address_of(t, link, t.links[link].peer(sw).node), 32},
                        -1,
                        {hop_over(link)}});
  std::map<std::vector<OvsHop>, int> set_index;
  for (const Route& r : routes) {
    OvsRoute out{r.dst, -1, {}};
    for (const Nexthop& h : r.nexthops) out.hops.push_back(hop_over(h.link));
    if (out.hops.size() > 1) {
      auto [it, fresh] = set_index.emplace(out.hops, static_cast<int>(b.ecmp_sets.size()));
      if (fresh) b.ecmp_sets.push_back(out.hops);
      out.ecmp = it->second;
    }
    b.routes.push_back(std::move(out));
  }
  std::stable_sort(b.routes.begin(), b.routes.end(),
                   [](const OvsRoute& x, const OvsRoute& y) { return x.dst.len > y.dst.len; });
  return b;
}

namespace {

// Every route's flow sits above those of all shorter prefixes; the protocol-specific flows of
// one prefix above its catch-all.
constexpr int kRoutePriority = 1000;
constexpr int kArpPriority = 60000;

std::string hop_actions(const OvsHop& h) {
  return "set_field:" + h.src.str() + "->eth_src,set_field:" + h.dst.str() +
         "->eth_dst,output:" + std::to_string(h.ofport);
}

struct GroupKind {
  const char* match;   // the flow's protocol match
  const char* fields;  // what the group hashes
};

// L4: one group per protocol whose ports it hashes; the last one catches all other IP.
const std::vector<GroupKind>& group_kinds(EcmpHash hash) {
  static const std::vector<GroupKind> l4 = {
      {"tcp", "ip_src,ip_dst,nw_proto,tcp_src,tcp_dst"},
      {"udp", "ip_src,ip_dst,nw_proto,udp_src,udp_dst"},
      {"ip", "ip_src,ip_dst,nw_proto"},
  };
  static const std::vector<GroupKind> l3 = {{"ip", "ip_src,ip_dst"}};
  return hash == EcmpHash::L4 ? l4 : l3;
}

int group_id(const OvsBridge& b, int set, size_t kind) {
  return set * static_cast<int>(group_kinds(b.hash).size()) + static_cast<int>(kind) + 1;
}

}  // namespace

std::vector<std::string> ovs_flow_lines(const OvsBridge& b) {
  std::vector<std::string> out;
  for (const OvsArpReply& a : b.arp) {
    // The request turned into its reply in place, sent back where it came from.
    out.push_back("priority=" + std::to_string(kArpPriority) +
                  ",arp,in_port=" + std::to_string(a.ofport) + ",arp_op=1,arp_tpa=" + a.ip.str() +
                  ",actions=move:eth_src->eth_dst,set_field:" + a.mac.str() +
                  "->eth_src,set_field:2->arp_op,move:arp_sha->arp_tha,move:arp_spa->arp_tpa,"
                  "set_field:" +
                  a.mac.str() + "->arp_sha,set_field:" + a.ip.str() + "->arp_spa,IN_PORT");
  }
  for (const OvsRoute& r : b.routes) {
    const int base = kRoutePriority + 4 * r.dst.len;
    const std::string dst = ",nw_dst=" + r.dst.str();
    if (r.ecmp < 0) {
      out.push_back("priority=" + std::to_string(base) + ",ip" + dst + ",actions=dec_ttl," +
                    hop_actions(r.hops.front()));
      continue;
    }
    const auto& kinds = group_kinds(b.hash);
    for (size_t k = 0; k < kinds.size(); ++k) {
      const bool catch_all = std::string(kinds[k].match) == "ip";
      out.push_back("priority=" + std::to_string(base + (catch_all ? 0 : 1)) + "," +
                    kinds[k].match + dst +
                    ",actions=dec_ttl,group:" + std::to_string(group_id(b, r.ecmp, k)));
    }
  }
  out.push_back("priority=0,actions=drop");  // nothing floods: a Clos has loops
  return out;
}

std::vector<std::string> ovs_group_lines(const OvsBridge& b) {
  std::vector<std::string> out;
  const auto& kinds = group_kinds(b.hash);
  for (size_t set = 0; set < b.ecmp_sets.size(); ++set)
    for (size_t k = 0; k < kinds.size(); ++k) {
      std::string line = "group_id=" + std::to_string(group_id(b, static_cast<int>(set), k)) +
                         ",type=select,selection_method=hash,selection_method_param=" +
                         std::to_string(b.hash_basis) + ",fields(" + kinds[k].fields + ")";
      const auto& hops = b.ecmp_sets[set];
      for (size_t i = 0; i < hops.size(); ++i)
        line += ",bucket=bucket_id:" + std::to_string(i) + ",actions=" + hop_actions(hops[i]);
      out.push_back(std::move(line));
    }
  return out;
}

}  // namespace fabemu
