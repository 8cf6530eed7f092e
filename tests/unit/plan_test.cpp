// The planner against the fake backend: every action is accepted the way the kernel would
// accept it, every host reaches every other host through the FIBs, ECMP groups have the
// expected width, and up/down through the journal leave nothing behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "apply/journal.h"
#include "apply/lab.h"
#include "fake_backend.h"
#include "fake_lab.h"
#include "runtime/host_env.h"
#include "scenario/loader.h"
#include "shaping/link_cfg.h"
#include "util/files.h"
#include "util/prng.h"

namespace fabemu {
namespace {

namespace fs = std::filesystem;

using unit::apply_fake;
using unit::load;

const char* kLeafSpine =
    "name: ls\ntopology: {kind: leaf-spine, leaves: 4, spines: 3, hosts_per_leaf: 2}\n";
const char* kFatTree4 = "name: ft\ntopology: {kind: fat-tree, k: 4}\n";
const char* kFatTree6 = "name: ft6\ntopology: {kind: fat-tree, k: 6}\n";
const char* kRail =
    "name: rail\ntopology: {kind: rail-optimized, nodes: 3, gpus_per_node: 4, spines: 2}\n";
const char* kExplicit = R"(name: ring
topology:
  kind: explicit
  nodes: [{name: s1, role: switch}, {name: s2, role: switch}, {name: s3, role: switch},
          {name: a, role: host}, {name: b, role: host}, {name: c, role: host}]
  links: [{a: s1, b: s2}, {a: s2, b: s3}, {a: s3, b: s1}, {a: a, b: s1}, {a: b, b: s2}, {a: c, b: s3}]
)";

class AllPairs : public ::testing::TestWithParam<const char*> {};

TEST_P(AllPairs, EveryHostReachesEveryOtherHostOverEveryEcmpChoice) {
  auto a = apply_fake(GetParam());
  ASSERT_TRUE(a);
  unit::expect_all_pairs_reach(*a);
}

INSTANTIATE_TEST_SUITE_P(Topologies, AllPairs,
                         ::testing::Values(kLeafSpine, kFatTree4, kFatTree6, kRail, kExplicit));

TEST(Plan, LeafToLeafRoutesUseEverySpine) {
  auto a = apply_fake(kLeafSpine);
  ASSERT_TRUE(a);
  const Topology& t = a->model.topo;
  const std::string leaf1 = a->paths.ns_name("leaf1");
  for (const char* h : {"h3", "h5", "h8"}) {
    const AddRoute* r = a->fake.route_for(leaf1, a->model.addresses.host_address(t, t.find(h)));
    ASSERT_TRUE(r) << h;
    EXPECT_EQ(r->hops.size(), 3u) << h;
  }
  // Like a real leaf: one default route over all spines, plus one route per spine loopback.
  const auto& routes = a->fake.namespaces.at(leaf1).routes;
  EXPECT_EQ(routes.size(), 4u);
  // A spine has no default route: an unknown address is dropped there, never looped.
  EXPECT_FALSE(a->fake.route_for(a->paths.ns_name("spine1"), Ipv4{0x0a0a0a0a}));
}

TEST(Plan, FatTreeEdgeHasHalfKUplinksToOtherPodsAndCoreHasOnePath) {
  auto a = apply_fake(kFatTree6);
  ASSERT_TRUE(a);
  const Topology& t = a->model.topo;
  const auto& edge = a->fake.namespaces.at(a->paths.ns_name("edge1"));
  const auto& core = a->fake.namespaces.at(a->paths.ns_name("core1"));
  const Ipv4 far = a->model.addresses.host_address(t, t.find("h54"));  // last pod
  const AddRoute* up = a->fake.route_for(a->paths.ns_name("edge1"), far);
  ASSERT_TRUE(up);
  EXPECT_EQ(up->hops.size(), 3u);  // k/2 aggregation switches
  const AddRoute* down = a->fake.route_for(a->paths.ns_name("core1"), far);
  ASSERT_TRUE(down);
  EXPECT_EQ(down->hops.size(), 1u);    // one aggregation switch per pod
  EXPECT_LT(edge.routes.size(), 30u);  // 61 without the default route
  EXPECT_GE(core.routes.size(), 6u);   // a core routes each pod separately
}

TEST(Plan, SwitchesForwardWithTheScenarioHashPolicyAndHostsDoNot) {
  auto a = apply_fake(
      "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}\n"
      "fabric: {ecmp_hash: l3}\n");
  ASSERT_TRUE(a);
  const auto& leaf = a->fake.namespaces.at(a->paths.ns_name("leaf1")).sysctls;
  EXPECT_EQ(leaf.at("net/ipv4/ip_forward"), "1");
  EXPECT_EQ(leaf.at("net/ipv4/fib_multipath_hash_policy"), "0");
  const auto& host = a->fake.namespaces.at(a->paths.ns_name("h1"));
  EXPECT_EQ(host.sysctls.count("net/ipv4/ip_forward"), 0u);
  EXPECT_EQ(host.hostname, "h1");
  EXPECT_EQ(a->fake.namespaces.at(a->paths.ns_name("leaf1")).hostname, "");
}

TEST(Plan, RailGpusOfOneNodeTalkOverScaleUp) {
  auto a = apply_fake(kRail);
  ASSERT_TRUE(a);
  const Topology& t = a->model.topo;
  auto path =
      a->fake.trace(a->paths.ns_name("n1-g1"), a->model.addresses.host_address(t, t.find("n1-g3")));
  ASSERT_EQ(path.size(), 3u);
  EXPECT_EQ(path[1], a->paths.ns_name("n1-su"));
  auto far =
      a->fake.trace(a->paths.ns_name("n1-g1"), a->model.addresses.host_address(t, t.find("n2-g3")));
  ASSERT_EQ(far.size(), 5u);  // rail leaf, spine, rail leaf, host
  EXPECT_EQ(far[1], a->paths.ns_name("leaf1"));
}

TEST(Plan, DisconnectedSwitchesAreRefused) {
  auto m = build_model(load(R"(name: t
topology:
  kind: explicit
  nodes: [{name: s1, role: switch}, {name: s2, role: switch}, {name: a, role: host}, {name: b, role: host}]
  links: [{a: a, b: s1}, {a: b, b: s2}]
)"),
                       0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().what().find("not connected"), std::string::npos);
}

class LabLifecycle : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fabemu-unit-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    paths_.run_root = (dir_ / "run").string();
    paths_.netns_dir = (dir_ / "netns").string();
    paths_.etc_netns_dir = (dir_ / "etc-netns").string();
    paths_.lab = "t";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  LabPaths paths_;
};

TEST_F(LabLifecycle, UpWritesTheJournalFirstAndDownRemovesExactlyIt) {
  FakeBackend fake;
  auto up = lab_up(load(kFatTree4), paths_, fake, UpOptions{"name: ft\n", "ft.yaml", nullptr});
  ASSERT_TRUE(up.ok()) << up.error().what();
  auto j = read_journal(paths_.journal());
  ASSERT_TRUE(j.ok()) << j.error().what();
  EXPECT_TRUE(j->complete);
  EXPECT_EQ(j->pool, 0);
  EXPECT_EQ(j->entries, up->plan.journal);
  EXPECT_EQ(fake.namespaces.size(), up->model.topo.nodes.size());

  // A second lab of the same name is refused; another name gets the next pool.
  FakeBackend other;
  EXPECT_FALSE(lab_up(load(kFatTree4), paths_, other).ok());
  LabPaths second = paths_;
  second.lab = "u";
  auto up2 = lab_up(load(kFatTree4), second, other);
  ASSERT_TRUE(up2.ok()) << up2.error().what();
  EXPECT_EQ(up2->plan.pool, 1);

  ASSERT_TRUE(lab_down(paths_, fake).ok());
  EXPECT_TRUE(fake.namespaces.empty());
  EXPECT_TRUE(fake.mounts.empty());
  EXPECT_FALSE(fs::exists(paths_.run_dir()));
  ASSERT_TRUE(lab_down(second, other).ok());
  // Down of a lab that is gone is a no-op.
  EXPECT_TRUE(lab_down(paths_, fake).ok());
}

TEST_F(LabLifecycle, AFailureHalfwayRollsBackEverything) {
  FakeBackend fake;
  fake.fail_at = 200;
  auto up = lab_up(load(kFatTree4), paths_, fake);
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.error().what().find("injected failure"), std::string::npos);
  EXPECT_NE(up.error().what().find("bringing up lab t"), std::string::npos);
  EXPECT_TRUE(fake.namespaces.empty());
  EXPECT_TRUE(fake.mounts.empty());
  EXPECT_FALSE(fs::exists(paths_.run_dir()));
}

TEST(Journal, RoundTripsAndToleratesATornLastLine) {
  JournalFile j{"demo",
                3,
                "s.yaml",
                {{JournalEntry::Kind::Mount, "/run/fabemu/demo"},
                 {JournalEntry::Kind::Netns, "/run/fabemu/demo/ns/h1"},
                 {JournalEntry::Kind::Uts, "/run/fabemu/demo/uts/h1"},
                 {JournalEntry::Kind::Path, "/run/netns/fabemu-demo-h1"},
                 {JournalEntry::Kind::Cgroup, "fabemu/demo/h1"}},
                true,
                false};
  auto back = parse_journal(format_journal(j), "j");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->entries, j.entries);
  EXPECT_EQ(back->pool, 3);
  EXPECT_FALSE(back->complete);
  auto torn = parse_journal(format_journal(j) + "net", "j");
  ASSERT_TRUE(torn.ok());
  EXPECT_EQ(torn->entries.size(), 5u);
  EXPECT_FALSE(torn->complete);
  EXPECT_FALSE(parse_journal("something else\n", "j").ok());
}

TEST(Journal, AJournalKilledWhileBeingWrittenPlannedNothing) {
  JournalFile j{"demo", 0, "", {{JournalEntry::Kind::Mount, "/run/fabemu/demo"}}, true, false};
  const std::string full = format_journal(j);
  // Every cut before the "planned" marker: nothing was made, so nothing is listed.
  for (size_t cut = 0; cut + std::string("planned\n").size() <= full.size(); ++cut) {
    auto p = parse_journal(full.substr(0, cut), "j");
    ASSERT_TRUE(p.ok()) << "cut at " << cut << ": " << p.error().what();
    EXPECT_FALSE(p->planned) << cut;
    EXPECT_TRUE(p->entries.empty()) << cut;
  }
  auto whole = parse_journal(full, "j");
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->planned);
  EXPECT_EQ(whole->entries.size(), 1u);
}

const char* kShaped = R"(name: sh
seed: 7
topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}
links:
  default: {rate: 10gbit}
  leaf-spine: {delay: 20ms}
  overrides:
    - {link: "leaf1>spine2", loss: 1%}
)";

std::vector<ShapePort> shape_ports(const Plan& plan) {
  std::vector<ShapePort> out;
  for (const Action& a : plan.actions)
    if (const auto* p = std::get_if<ShapePort>(&a)) out.push_back(*p);
  return out;
}

// Where the kernel seeds ECMP per namespace, each switch hashes the headers with a seed of its
// own, drawn from the scenario's, and the link model leaves the flow's hash alone.
TEST(Plan, SwitchesSeedTheirOwnEcmpHashWhereTheKernelCan) {
  const std::string yaml =
      "name: t\nseed: 7\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 1}\n"
      "fabric: {ecmp_hash: l4}\nlinks: {default: {rate: 1gbit}}\n";
  PlanOptions seeded;
  seeded.ecmp_seeds = true;
  auto a = apply_fake(yaml, seeded);
  auto again = apply_fake(yaml, seeded);
  ASSERT_TRUE(a && again);
  auto sysctls = [&](const unit::Applied& x, const char* node) {
    return x.fake.namespaces.at(x.paths.ns_name(node)).sysctls;
  };
  const auto leaf = sysctls(*a, "leaf1");
  EXPECT_EQ(leaf.at("net/ipv4/fib_multipath_hash_policy"), "3");
  EXPECT_EQ(leaf.at("net/ipv4/fib_multipath_hash_fields"), "55");  // addresses, protocol, ports
  const std::string seed = leaf.at("net/ipv4/fib_multipath_hash_seed");
  EXPECT_NE(seed, "0");
  EXPECT_NE(seed, sysctls(*a, "leaf2").at("net/ipv4/fib_multipath_hash_seed"));
  EXPECT_EQ(seed, sysctls(*again, "leaf1").at("net/ipv4/fib_multipath_hash_seed"));
  EXPECT_EQ(sysctls(*a, "h1").count("net/ipv4/fib_multipath_hash_seed"), 0u);
  for (const auto& p : shape_ports(a->plan)) EXPECT_TRUE(p.keep_hash) << p.direction;
  EXPECT_TRUE(parse_shaping_mode(format_shaping_mode(seeded), "f")->ecmp_seeds);
  EXPECT_FALSE(parse_shaping_mode(format_shaping_mode({}), "f")->ecmp_seeds);
  // Without the sysctl: policy 1 (the skb's flow hash), which the link model re-mixes per port.
  auto mixed = apply_fake(yaml);
  ASSERT_TRUE(mixed);
  EXPECT_EQ(sysctls(*mixed, "leaf1").at("net/ipv4/fib_multipath_hash_policy"), "1");
  EXPECT_EQ(sysctls(*mixed, "leaf1").count("net/ipv4/fib_multipath_hash_seed"), 0u);
  for (const auto& p : shape_ports(mixed->plan)) EXPECT_FALSE(p.keep_hash) << p.direction;
}

// A dilated lab's ports have fixed MACs and their peers as permanent neighbours: ARP's wall-clock
// timers would fail a neighbour whose reply waits behind a congested port's dilated backlog.
TEST(Plan, ADilatedLabsPeersArePermanentNeighbours) {
  const std::string base =
      "name: t\nseed: 7\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}\n";
  auto neighbours = [](const Plan& plan) {
    return std::count_if(plan.actions.begin(), plan.actions.end(),
                         [](const Action& a) { return std::holds_alternative<AddNeighbour>(a); });
  };
  auto plain = apply_fake(base);
  auto dilated = apply_fake(base + "time_scale: 100\n");
  ASSERT_TRUE(plain && dilated);
  EXPECT_EQ(neighbours(plain->plan), 0);
  EXPECT_EQ(neighbours(dilated->plan), 2 * 6);  // both ends of 6 links
}

// fabric.load_balance: the balancing switches come after the link model, each with its ports,
// one group per member set (a leaf's uplinks; a spine's two leaves toward the other spine's
// loopback) with the mode in force there and
// its gap dilated, and the routes the FIB holds more specifically marked for the FIB.
TEST(Plan, BalancedSwitchesGetTheirGroupsAfterTheLinkModel) {
  const std::string yaml =
      "name: t\nseed: 7\ntime_scale: 10\n"
      "topology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\n"
      "fabric: {load_balance: {default: {flowlet: {gap: 20us}}, leaf2: spray}}\n";
  auto a = apply_fake(yaml);
  ASSERT_TRUE(a);
  std::vector<BalanceSwitch> balanced;
  size_t loaded = 0, first_balance = 0;
  for (size_t i = 0; i < a->plan.actions.size(); ++i) {
    const Action& act = a->plan.actions[i];
    if (std::holds_alternative<LoadShaper>(act)) loaded = i + 1;
    if (const auto* b = std::get_if<BalanceSwitch>(&act)) {
      if (!first_balance) first_balance = i + 1;
      balanced.push_back(*b);
    }
  }
  ASSERT_GT(loaded, 0u) << "an unshaped lab that balances loads the link model";
  EXPECT_GT(first_balance, loaded);
  ASSERT_EQ(balanced.size(), 4u);
  EXPECT_EQ(a->plan.balanced_switches, 4);
  auto named = [&](const char* node) {
    for (const auto& b : balanced)
      if (b.node == node) return b;
    ADD_FAILURE() << node << " does not balance";
    return BalanceSwitch{};
  };
  const BalanceSwitch leaf1 = named("leaf1"), leaf2 = named("leaf2");
  EXPECT_EQ(leaf1.ports.size(), 4u);
  ASSERT_EQ(leaf1.groups.size(), 1u);
  EXPECT_EQ(leaf1.groups[0].lb.mode, LoadBalanceMode::Flowlet);
  EXPECT_EQ(leaf1.groups[0].gap_wall_ns, 200'000u);  // 20us x 10
  EXPECT_EQ(leaf1.groups[0].members.size(), 2u);
  ASSERT_EQ(leaf2.groups.size(), 1u);
  EXPECT_EQ(leaf2.groups[0].lb.mode, LoadBalanceMode::Spray);
  EXPECT_NE(leaf2.groups[0].id, leaf1.groups[0].id);
  int grouped = 0, fib = 0;
  for (const auto& r : leaf1.routes) (r.group == BalanceSwitch::kNoGroup ? fib : grouped)++;
  EXPECT_GE(grouped, 1);
  EXPECT_GE(fib, 4 + 1);  // its ports' subnets and its loopback at least
  EXPECT_NE(describe(Action{leaf1}).find("flowlet (gap 20us) over 2 members"), std::string::npos)
      << describe(Action{leaf1});
  // ecmp everywhere: the kernel's FIB, no balancer and no link model for an unshaped lab.
  auto plain = apply_fake(
      "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, "
      "hosts_per_leaf: 1}\n");
  ASSERT_TRUE(plain);
  for (const Action& act : plain->plan.actions) {
    EXPECT_FALSE(std::holds_alternative<BalanceSwitch>(act));
    EXPECT_FALSE(std::holds_alternative<LoadShaper>(act));
  }
}

TEST(PlanShaping, EveryPortOfAShapedLabGetsTheModelWithALabUniqueIfindex) {
  auto m = build_model(load(kShaped), 0);
  ASSERT_TRUE(m.ok()) << m.error().what();
  LabPaths paths;
  paths.lab = "sh";
  Plan plan = make_plan(*m, paths, 0);
  auto ports = shape_ports(plan);
  ASSERT_EQ(ports.size(), 2 * m->topo.links.size());
  EXPECT_EQ(plan.shaped_ports, int(ports.size()));
  std::set<uint32_t> ifindexes;
  for (const auto& p : ports) {
    ifindexes.insert(p.ifindex);
    EXPECT_FALSE(p.policer);
    ASSERT_TRUE(p.fq);
    EXPECT_EQ(p.seed, link_seed(7, p.direction));
  }
  EXPECT_EQ(ifindexes.size(), ports.size());
  // The journal names the pin dir, so `down` (and a crash) removes the maps.
  EXPECT_NE(std::find(plan.journal.begin(), plan.journal.end(),
                      JournalEntry{JournalEntry::Kind::Pins, paths.pin_dir()}),
            plan.journal.end());
  // Scenario levels: class over default, the override on one direction only.
  auto find = [&](const std::string& dir) {
    for (const auto& p : ports)
      if (p.direction == dir) return p;
    ADD_FAILURE() << "no port for " << dir;
    return ShapePort{};
  };
  EXPECT_EQ(find("leaf1>spine2").shape.loss, 0.01);
  EXPECT_FALSE(find("spine2>leaf1").shape.loss);
  EXPECT_EQ(find("spine2>leaf1").shape.delay_ns, 20'000'000u);
  EXPECT_EQ(find("h1>leaf1").shape.rate_bps, 10'000'000'000u);
  EXPECT_FALSE(find("h1>leaf1").shape.delay_ns);
  // Shaped veths carry one packet per skb.
  for (const Action& a : plan.actions)
    if (const auto* v = std::get_if<CreateVeth>(&a)) {
      EXPECT_EQ(v->gso_max_segs, 1u);
      EXPECT_NE(v->ifindex_a, 0u);
    }
}

TEST(PlanShaping, WithoutFqPortsArePolicedAndDelayIsReported) {
  auto m = build_model(load(kShaped), 0);
  ASSERT_TRUE(m.ok());
  LabPaths paths;
  paths.lab = "sh";
  PlanOptions no_fq;
  no_fq.fq = false;
  no_fq.no_fq_reason = "no sch_fq";
  for (const auto& p : shape_ports(make_plan(*m, paths, 0, no_fq))) {
    EXPECT_TRUE(p.policer);
    EXPECT_FALSE(p.fq);
  }
  auto need = needs_fq(*m);
  EXPECT_EQ(need.size(), 8u);  // both directions of 4 leaf-spine links
  EXPECT_EQ(need.front(), "leaf1>spine1: delay 20ms");
  auto mode = parse_shaping_mode(format_shaping_mode(no_fq), "f");
  ASSERT_TRUE(mode.ok());
  EXPECT_FALSE(mode->fq);
  EXPECT_EQ(mode->no_fq_reason, "no sch_fq");
  EXPECT_TRUE(parse_shaping_mode(format_shaping_mode({}), "f")->fq);
}

// It loads the model at its first use (link set, status), not in `up`; `down` still knows the
// pin dir.
TEST(PlanShaping, AnUnshapedLabLeavesTheModelForItsFirstUseAndAttachesNothing) {
  auto m = build_model(load(kLeafSpine), 0);
  ASSERT_TRUE(m.ok());
  LabPaths paths;
  paths.lab = "ls";
  Plan plan = make_plan(*m, paths, 0);
  EXPECT_TRUE(shape_ports(plan).empty());
  EXPECT_TRUE(std::none_of(plan.actions.begin(), plan.actions.end(),
                           [](const Action& a) { return std::holds_alternative<LoadShaper>(a); }));
  EXPECT_NE(std::find(plan.journal.begin(), plan.journal.end(),
                      JournalEntry{JournalEntry::Kind::Pins, paths.pin_dir()}),
            plan.journal.end());
  for (const Action& a : plan.actions)
    if (const auto* v = std::get_if<CreateVeth>(&a)) {
      EXPECT_EQ(v->gso_max_segs, 0u);
    }
}

TEST(PlanShaping, TheFakeKernelAcceptsTheShapedPlanAndDownRemovesThePins) {
  auto a = apply_fake(kShaped);
  ASSERT_TRUE(a);
  int shaped = 0;
  for (const auto& [name, ns] : a->fake.namespaces)
    for (const auto& [ifname, iface] : ns.ifaces) shaped += iface.shaped.has_value();
  EXPECT_EQ(shaped, 2 * int(a->model.topo.links.size()));
  EXPECT_EQ(a->fake.bpf_pins.count(a->paths.pin_dir()), 1u);
}

TEST(PlanShaping, CpuMasksUseTheKernelsFormat) {
  EXPECT_EQ(cpu_mask(1), "1");
  EXPECT_EQ(cpu_mask(2), "3");
  EXPECT_EQ(cpu_mask(32), "ffffffff");
  EXPECT_EQ(cpu_mask(40), "ff,ffffffff");
  EXPECT_EQ(cpu_mask(64), "ffffffff,ffffffff");
}

TEST(Directions, LinkNamesSelectOneOrBothDirections) {
  auto m = build_model(load(kShaped), 0);
  ASSERT_TRUE(m.ok());
  const Topology& t = m->topo;
  auto both = find_directions(t, "spine2:leaf1");
  ASSERT_TRUE(both.ok());
  ASSERT_EQ(both->size(), 2u);
  auto one = find_directions(t, "spine2>leaf1");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ(direction_name(t, one->front().link, one->front().b_to_a), "spine2>leaf1");
  auto fwd = find_directions(t, "leaf1>spine2");
  ASSERT_TRUE(fwd.ok());
  EXPECT_EQ(direction_name(t, fwd->front().link, fwd->front().b_to_a), "leaf1>spine2");
  EXPECT_FALSE(find_directions(t, "leaf1:spine9").ok());
  EXPECT_FALSE(find_directions(t, "h1:spine1").ok());  // no such link
  EXPECT_FALSE(find_directions(t, "leaf1").ok());
}

// ---------------------------------------------------------------------------------------------
// Soft-RoCE

const char* kSmallLeafSpine =
    "name: rd\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\n";

std::vector<CreateRxe> rxe_actions(const Plan& plan) {
  std::vector<CreateRxe> out;
  for (const Action& a : plan.actions)
    if (const auto* r = std::get_if<CreateRxe>(&a)) out.push_back(*r);
  return out;
}

TEST(PlanRdma, OnGivesEveryHostOneRxeDeviceOnItsNicAndAJournalEntry) {
  auto m = build_model(load(kSmallLeafSpine), 0);
  ASSERT_TRUE(m.ok());
  LabPaths paths;
  paths.lab = "rd";
  PlanOptions options;
  options.rdma.rxe = true;
  Plan plan = make_plan(*m, paths, 0, options);
  const Topology& t = m->topo;
  auto rxe = rxe_actions(plan);
  ASSERT_EQ(rxe.size(), t.hosts().size());
  EXPECT_EQ(plan.rxe_devices, int(rxe.size()));
  std::set<std::string> names;
  for (size_t i = 0; i < rxe.size(); ++i) {
    const int h = t.hosts()[i];
    const std::string& host = t.nodes[h].name;
    EXPECT_EQ(rxe[i].name, "fabemu-rd-" + host);
    EXPECT_EQ(rxe[i].ns, paths.ns_name(host));
    EXPECT_EQ(rxe[i].netdev, t.links[t.links_of(h).front()].end(h).ifname);
    names.insert(rxe[i].name);
    // Journalled, so that `down` and crash recovery delete it.
    EXPECT_NE(std::find(plan.journal.begin(), plan.journal.end(),
                        JournalEntry{JournalEntry::Kind::Rdma, rxe[i].name}),
              plan.journal.end());
  }
  EXPECT_EQ(names.size(), rxe.size());
  // Created once the host's NIC has its address: after the last AddAddress of the host.
  size_t last_address = 0, first_rxe = plan.actions.size();
  for (size_t i = 0; i < plan.actions.size(); ++i) {
    if (std::holds_alternative<AddAddress>(plan.actions[i])) last_address = i;
    if (std::holds_alternative<CreateRxe>(plan.actions[i])) first_rxe = std::min(first_rxe, i);
  }
  EXPECT_LT(last_address, first_rxe);
  EXPECT_NE(describe(Action{rxe.front()}).find("create rxe device fabemu-rd-h1 on"),
            std::string::npos);
}

TEST(PlanRdma, DcqcnGoesOnHostsOwnPortsDilatedWithAiAndHaiScaledToTheLineRate) {
  auto m = build_model(load(R"(name: dc
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
time_scale: 100
links: {default: {rate: 100gbit}}
rdma: {cc: dcqcn, dcqcn: {cnp_interval: 40us}}
)"),
                       0);
  ASSERT_TRUE(m.ok()) << m.error().what();
  LabPaths paths;
  paths.lab = "dc";
  PlanOptions options;
  options.rdma.rxe = true;
  Plan plan = make_plan(*m, paths, 0, options);
  int hosts = 0;
  for (const ShapePort& p : shape_ports(plan)) {
    const bool host = p.direction.rfind("h", 0) == 0;
    EXPECT_EQ(p.dcqcn.has_value(), host) << p.direction;
    if (!p.dcqcn) continue;
    ++hosts;
    // 100 Gbit/s at x100: 1 Gbit/s of wall clock; HPCC's 5 and 50 Mbit/s per 25 Gbit/s.
    EXPECT_EQ(p.dcqcn->line_bps, 1'000'000'000u);
    EXPECT_EQ(p.dcqcn->ai_bps, 200'000u);
    EXPECT_EQ(p.dcqcn->hai_bps, 2'000'000u);
    EXPECT_EQ(p.dcqcn->min_bps, 10'000'000u);
    EXPECT_EQ(p.dcqcn->alpha_ns, 100'000u);
    EXPECT_EQ(p.dcqcn->rp_timer_ns, 30'000'000u);
    EXPECT_EQ(p.dcqcn->cnp_interval_ns, 4'000'000u);
    EXPECT_DOUBLE_EQ(p.dcqcn->g, 1.0 / 256);
    EXPECT_TRUE(to_cfg(p).flags & FABEMU_LINK_DCQCN);
    // fq holds a send queue paced at the minimum rate (10 Mbit/s of wall clock) whole.
    ASSERT_TRUE(p.fq);
    EXPECT_GE(p.fq->horizon_ns, uint64_t(2 * 1024 * 8.0 * 1500 / 10e6 * 1e9));
  }
  EXPECT_EQ(hosts, 2);
  options.rdma.rxe = false;  // no rxe: nothing to pace
  for (const ShapePort& p : shape_ports(make_plan(*m, paths, 0, options)))
    EXPECT_FALSE(p.dcqcn) << p.direction;
}

// RED is a switch's: the hosts' own ports (their NICs) do not mark, even where the links'
// default gives every direction `ecn`; a step threshold (ecn_threshold) stays where it is given.
TEST(PlanRdma, RedMarksAtSwitchPortsOnlyNotAtTheHostsNics) {
  auto m = build_model(load(R"(name: red
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {default: {rate: 100gbit, ecn: {kmin: 40K, kmax: 160K, pmax: 20%}, ecn_threshold: 1M}}
)"),
                       0);
  ASSERT_TRUE(m.ok()) << m.error().what();
  LabPaths paths;
  paths.lab = "red";
  int hosts = 0, switches = 0;
  for (const ShapePort& p : shape_ports(make_plan(*m, paths, 0, PlanOptions{}))) {
    const fabemu_link_cfg cfg = to_cfg(p);
    const bool host = p.direction.rfind("h", 0) == 0;
    (host ? hosts : switches)++;
    EXPECT_EQ(cfg.ecn_kmax_bytes, host ? 0u : 160u << 10) << p.direction;
    EXPECT_EQ(cfg.ecn_threshold_bytes, 1u << 20) << p.direction;
  }
  EXPECT_EQ(hosts, 2);
  EXPECT_EQ(switches, 6);
}

TEST(PlanSwitchBuffers, SwitchPortsShareTheirSwitchsBufferByTierAndNameWithoutTheDefaultQueue) {
  auto m = build_model(load(R"(name: sb
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}
time_scale: 10
links:
  default: {rate: 100gbit}
  overrides: [{link: "leaf2:spine1", queue: 64K}]
switches: {buffer: 1M, alpha: 1/2, spine: {buffer: 4M}, leaf2: {alpha: 4}}
)"),
                       0);
  ASSERT_TRUE(m.ok()) << m.error().what();
  LabPaths paths;
  paths.lab = "sb";
  int switch_ports = 0;
  for (const ShapePort& p : shape_ports(make_plan(*m, paths, 0, PlanOptions{}))) {
    const std::string from = p.direction.substr(0, p.direction.find('>'));
    const fabemu_link_cfg cfg = to_cfg(p);
    if (from[0] == 'h') {  // hosts keep a queue of their own
      EXPECT_FALSE(p.buffer) << p.direction;
      EXPECT_EQ(cfg.buffer_id, 0u);
      EXPECT_NE(cfg.queue_ns, 0u) << p.direction;
      continue;
    }
    ++switch_ports;
    ASSERT_TRUE(p.buffer) << p.direction;
    EXPECT_EQ(cfg.buffer_id, p.buffer->id);
    EXPECT_EQ(p.buffer->id, uint32_t(m->topo.find(from) + 1));
    // 100 Gbit/s at x10: the buffer drains at 10 Gbit/s; slots of an eighth of that.
    const uint64_t bytes = from == "spine1" ? 4u << 20 : 1u << 20;
    EXPECT_EQ(p.buffer->bytes, bytes) << p.direction;
    EXPECT_EQ(p.buffer->slot_ns, bytes * 8 / 10 / 8) << p.direction;
    EXPECT_DOUBLE_EQ(p.buffer->alpha, from == "leaf2" ? 4.0 : 0.5) << p.direction;
    EXPECT_EQ(to_buffer_cfg(*p.buffer).alpha, from == "leaf2" ? 1024u : 128u);
    // The shared buffer is the port's queue; a link's own queue still caps it.
    if (p.direction == "leaf2>spine1" || p.direction == "spine1>leaf2")
      EXPECT_EQ(cfg.queue_bytes, 64u << 10) << p.direction;
    else
      EXPECT_EQ(cfg.queue_ns | cfg.queue_bytes, 0u) << p.direction;
  }
  EXPECT_EQ(switch_ports, 8);
  // An override names a tier or a switch of the topology.
  auto bad = build_model(load(R"(name: sb
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}
switches: {buffer: 8M, leaf9: {buffer: 16M}}
)"),
                         0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.error().what()).find("switches.leaf9: not a switch of this topology"),
            std::string::npos)
      << bad.error().what();
}

TEST(PlanSwitchBuffers, ADynamicXoffFollowsTheReceivingSwitchsBufferAndHostsNeverPause) {
  auto m = build_model(load(R"(name: sb
topology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 1}
links: {default: {rate: 100gbit, pfc: {xoff: dynamic, xon_offset: 20K}}}
switches: {buffer: 1M, spine: {buffer: 4M}}
)"),
                       0);
  ASSERT_TRUE(m.ok()) << m.error().what();
  LabPaths paths;
  paths.lab = "sb";
  for (const ShapePort& p : shape_ports(make_plan(*m, paths, 0, PlanOptions{}))) {
    const std::string to = p.direction.substr(p.direction.find('>') + 1);
    const fabemu_link_cfg cfg = to_cfg(p);
    EXPECT_EQ(cfg.pfc_xoff_bytes, FABEMU_PFC_XOFF_DYNAMIC) << p.direction;
    EXPECT_EQ(cfg.pfc_xon_bytes, 20u << 10) << p.direction;  // the offset
    if (to[0] == 'h') {  // a host's NIC has no shared buffer: it never pauses the link
      EXPECT_FALSE(p.pfc_buffer) << p.direction;
      continue;
    }
    ASSERT_TRUE(p.pfc_buffer) << p.direction;
    EXPECT_EQ(p.pfc_buffer->id, uint32_t(m->topo.find(to) + 1)) << p.direction;
    EXPECT_EQ(cfg.pfc_slot_ns, p.pfc_buffer->slot_ns) << p.direction;
  }
}

TEST(PlanRdma, OffCreatesNoDeviceAndRecordsWhy) {
  auto m = build_model(load(kSmallLeafSpine), 0);
  ASSERT_TRUE(m.ok());
  LabPaths paths;
  paths.lab = "rd";
  PlanOptions options;
  options.rdma.why_not = "this kernel has no rdma_rxe";
  Plan plan = make_plan(*m, paths, 0, options);
  EXPECT_TRUE(rxe_actions(plan).empty());
  EXPECT_EQ(plan.rxe_devices, 0);
  for (const auto& e : plan.journal) EXPECT_NE(e.kind, JournalEntry::Kind::Rdma);
  bool recorded = false;
  for (const Action& a : plan.actions)
    if (const auto* w = std::get_if<WriteFile>(&a); w && w->path == paths.rdma_file()) {
      recorded = true;
      auto back = parse_rdma_choice(w->content, w->path);
      ASSERT_TRUE(back.ok());
      EXPECT_FALSE(back->rxe);
      EXPECT_EQ(back->why_not, "this kernel has no rdma_rxe");
    }
  EXPECT_TRUE(recorded);
  EXPECT_TRUE(parse_rdma_choice(format_rdma_choice({true, ""}), "f")->rxe);
  EXPECT_FALSE(parse_rdma_choice("maybe\n", "f").ok());
}

TEST_F(LabLifecycle, RxeDevicesGoOnDownBeforeTheNamespacesAndTheRunDirKeepsTheChoice) {
  FakeBackend fake;
  UpOptions options{"", "rd.yaml", nullptr};
  options.plan.rdma.rxe = true;
  const std::string text = kSmallLeafSpine;
  options.scenario_text = text;
  auto up = lab_up(load(kSmallLeafSpine), paths_, fake, options);
  ASSERT_TRUE(up.ok()) << up.error().what();
  EXPECT_EQ(fake.rxe.size(), 4u);
  EXPECT_EQ(fake.rxe.count(paths_.rxe_name("h3")), 1u);
  EXPECT_TRUE(up->model.rdma.rxe);
  // A later process (exec, status, perf) reads the choice back from the run dir (where the
  // kernel backend writes it; the fake only notes the write).
  ASSERT_EQ(fake.files.count(paths_.rdma_file()), 1u);
  ASSERT_TRUE(write_file(paths_.rdma_file(), format_rdma_choice(options.plan.rdma)).ok());
  auto model = lab_model(paths_);
  ASSERT_TRUE(model.ok()) << model.error().what();
  EXPECT_TRUE(model->rdma.rxe);

  fake.calls.clear();
  ASSERT_TRUE(lab_down(paths_, fake).ok());
  EXPECT_TRUE(fake.rxe.empty());
  auto at = [&](const std::string& call) {
    return std::find(fake.calls.begin(), fake.calls.end(), call) - fake.calls.begin();
  };
  const auto unmount = at("remove " + paths_.run_dir());
  ASSERT_LT(size_t(unmount), fake.calls.size());
  for (const char* h : {"h1", "h2", "h3", "h4"}) {
    const auto removed = at("remove " + paths_.rxe_name(h));
    EXPECT_LT(removed, unmount) << h << "'s device must go before its namespace";
  }
}

TEST(HostEnv, RanksUseTheirOwnRxeDeviceWhereTheLabHasOne) {
  auto m = build_model(load(kSmallLeafSpine), 0);
  ASSERT_TRUE(m.ok());
  LabPaths paths;
  paths.lab = "rd";
  auto env_of = [&](const LabModel& model, const char* host) {
    std::map<std::string, std::string> env;
    for (const auto& [k, v] : node_context(model, paths, model.topo.find(host)).env) env[k] = v;
    return env;
  };
  auto plain = env_of(*m, "h3");
  EXPECT_EQ(plain["UCX_NET_DEVICES"], "eth0");
  EXPECT_EQ(plain.count("NCCL_IB_HCA"), 0u);
  EXPECT_EQ(plain.count("FABEMU_RDMA_DEVICE"), 0u);

  m->rdma.rxe = true;
  auto rdma = env_of(*m, "h3");
  EXPECT_EQ(rdma["FABEMU_RDMA_DEVICE"], "fabemu-rd-h3");
  EXPECT_EQ(rdma["NCCL_IB_HCA"], "=fabemu-rd-h3");  // exact: not h30's as well
  EXPECT_EQ(rdma["NCCL_IB_GID_INDEX"], "1");
  EXPECT_EQ(rdma["UCX_NET_DEVICES"], "fabemu-rd-h3:1");
  EXPECT_EQ(rdma["NCCL_SOCKET_IFNAME"], "eth0");
}

TEST(Journal, RdmaEntriesRoundTrip) {
  JournalFile j{"demo", 0, "", {{JournalEntry::Kind::Rdma, "fabemu-demo-h1"}}, true, false};
  auto back = parse_journal(format_journal(j), "j");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->entries, j.entries);
  EXPECT_NE(format_journal(j).find("\nrdma fabemu-demo-h1\n"), std::string::npos);
}

}  // namespace
}  // namespace fabemu
