// Address planning: unique, aligned, aggregated per edge switch, and per-lab pools.
#include <gtest/gtest.h>

#include <set>

#include "model/addressing.h"
#include "model/generators.h"

namespace fabemu {
namespace {

void expect_sound(const Topology& t, const AddressPlan& p) {
  std::set<uint32_t> seen;
  for (size_t l = 0; l < t.links.size(); ++l) {
    const auto& a = p.links[l];
    EXPECT_EQ(a.a.v ^ a.b.v, 1u) << "a /31 pair";
    EXPECT_EQ(a.a.v & ~1u, a.b.v & ~1u);
    EXPECT_TRUE(seen.insert(a.a.v).second) << a.a.str();
    EXPECT_TRUE(seen.insert(a.b.v).second) << a.b.str();
    EXPECT_TRUE(p.pool.contains(a.a));
  }
  for (int sw : t.switches()) {
    ASSERT_TRUE(p.loopback[sw]);
    EXPECT_TRUE(seen.insert(p.loopback[sw]->v).second);
    EXPECT_TRUE(p.pool.contains(*p.loopback[sw]));
  }
  // Each edge block is aligned and holds exactly its switch's host links.
  for (int sw : t.switches()) {
    if (!p.edge_block[sw]) continue;
    const Prefix& b = *p.edge_block[sw];
    EXPECT_EQ(b.addr.v % b.size(), 0u) << b.str();
    for (size_t l = 0; l < t.links.size(); ++l) {
      const Link& link = t.links[l];
      bool host_link_of_sw = (link.a.node == sw || link.b.node == sw) &&
                             t.nodes[link.peer(sw).node].role == Role::Host;
      EXPECT_EQ(b.contains(p.links[l].a), host_link_of_sw) << b.str() << " link " << l;
    }
  }
}

TEST(Addressing, FatTreeK8IsSound) {
  Topology t = generate_fat_tree(FatTreeSpec{8});
  auto p = plan_addresses(t, lab_pool(0));
  ASSERT_TRUE(p.ok()) << p.error().what();
  expect_sound(t, *p);
}

TEST(Addressing, LeafSpine512IsSoundAndSwitchTakesTheEvenAddress) {
  Topology t = generate_leaf_spine(LeafSpineSpec{64, 8, 8});
  auto p = plan_addresses(t, lab_pool(3));
  ASSERT_TRUE(p.ok()) << p.error().what();
  expect_sound(t, *p);
  int h1 = t.find("h1");
  int link = t.links_of(h1)[0];
  EXPECT_EQ(p->host_address(t, h1).v & 1u, 1u);
  EXPECT_EQ(p->address_of(t, link, t.links[link].peer(h1).node).v & 1u, 0u);
  EXPECT_EQ(p->pool.str(), "10.67.0.0/16");
  EXPECT_EQ(p->edge_block[t.find("leaf1")]->len, 28);  // 8 hosts: 16 addresses
}

TEST(Addressing, RailOptimizedIsSound) {
  Topology t = generate_rail_optimized(RailOptimizedSpec{4, 8, 4, {}});
  auto p = plan_addresses(t, lab_pool(1));
  ASSERT_TRUE(p.ok()) << p.error().what();
  expect_sound(t, *p);
}

TEST(Addressing, PoolsOfTwoLabsAreDisjoint) {
  EXPECT_FALSE(lab_pool(0).contains(lab_pool(1).addr));
  EXPECT_EQ(lab_pool(kMaxLabPools - 1).str(), "10.127.0.0/16");
}

TEST(Addressing, TooBigForThePoolIsAClearError) {
  Topology t = generate_fat_tree(FatTreeSpec{4});
  auto p = plan_addresses(t, Prefix{Ipv4{10u << 24}, 28});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().what().find("needs more than the lab's 10.0.0.0/28"), std::string::npos);
}

TEST(Addressing, HostsFileNamesEveryNode) {
  Topology t = generate_leaf_spine(LeafSpineSpec{2, 1, 2});
  auto p = plan_addresses(t, lab_pool(0));
  ASSERT_TRUE(p.ok());
  std::string hosts = hosts_file(t, *p, "demo");
  for (const auto& n : t.nodes) EXPECT_NE(hosts.find("\t" + n.name + "\n"), std::string::npos);
  EXPECT_NE(hosts.find(p->host_address(t, t.find("h3")).str() + "\th3\n"), std::string::npos);
}

TEST(Ipv4, ParseAndPrintRoundTrip) {
  auto ip = parse_ipv4("10.64.1.255");
  ASSERT_TRUE(ip);
  EXPECT_EQ(ip->str(), "10.64.1.255");
  EXPECT_FALSE(parse_ipv4("10.64.1"));
  EXPECT_FALSE(parse_ipv4("10.64.1.256"));
  EXPECT_FALSE(parse_ipv4("10.64.1.2x"));
}

}  // namespace
}  // namespace fabemu
