// Tests of the scenario loader: the documented example, the shipped scenarios, every section's
// checks, and a corpus of malformed files whose errors must name file, line, column and field.
#include "scenario/loader.h"
#include "model/lab_model.h"
#include "plan/port_params.h"
#include "scenario/link_shape_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fabemu {
namespace {

namespace fs = std::filesystem;

const fs::path kSourceDir = FABEMU_SOURCE_DIR;

// The example of DESIGN.md's "Scenario file (YAML)" section, verbatim.
constexpr const char* kDesignExample = R"(name: leaf-spine-8            # default lab name
seed: 42                      # all randomness (loss, jitter, ECMP seed) derives from it
topology:
  kind: leaf-spine            # leaf-spine | fat-tree | rail-optimized | explicit
  leaves: 4
  spines: 2
  hosts_per_leaf: 2
  # fat-tree:       k: 4                      (k^3/4 hosts, 5k^2/4 switches, 3 tiers)
  # rail-optimized: nodes: 4, gpus_per_node: 4, spines: 2, scale_up: {rate: 400gbit}
  # explicit:       nodes: [{name, role: host|switch}], links: [{a: h1, b: sw1, ...}]
fabric:
  switch: router              # router (L3 namespace, ECMP routes) | bridge | ovs
  ecmp_hash: l4               # l3 | l4 (RoCEv2 entropy is the UDP source port)
  mtu: 4200
hosts: {cpu: 1.0, memory: 1G}  # optional per-host container limits (cgroup); overridable per host
links:                        # the link model, per direction; later keys override earlier
  default:   {rate: 10gbit, delay: 2us}
  host-leaf: {rate: 25gbit}
  leaf-spine: {rate: 100gbit, delay: 1us, ecn_threshold: 40us, queue: 200us}
  overrides:
    - {link: "leaf1:spine2", loss: 0.5%}
rdma: {enabled: auto}         # auto | on | off: rxe on every host NIC
workload:
  - collective: allreduce     # allreduce | allgather | reducescatter | alltoall | broadcast
    library: gloo             # gloo | mpi | ucx | exec
    transport: auto           # tcp | ibverbs | auto
    sizes: [64K, 1M, 16M]
    iterations: 20
  - exec: {hosts: all, command: ["python3", "my_train.py"]}
faults:                       # a timeline, relative to workload start
  - {at: 2s, link: "leaf2:spine1", set: {loss: 2%}}
  - {at: 4s, link: "leaf2:spine1", down: true}
  - {at: 6s, link: "leaf2:spine1", up: true}
)";

// Loads `text`, failing the test on an error.
Scenario load_ok(const std::string& text) {
  auto r = load_scenario_string(text, "test.yaml");
  EXPECT_TRUE(r) << r.error().message;
  return r ? *r : Scenario{};
}

// Loads `text` expecting an error, and returns its message.
std::string load_error(const std::string& text) {
  auto r = load_scenario_string(text, "test.yaml");
  EXPECT_FALSE(r) << "loaded without error:\n" << text;
  return r ? "" : r.error().message;
}

const char* kMinimal =
    "name: t\ntopology: {kind: leaf-spine, leaves: 1, spines: 1, hosts_per_leaf: 1}\n";

TEST(Loader, DesignExample) {
  Scenario s = load_ok(kDesignExample);
  EXPECT_EQ(s.file, "test.yaml");
  EXPECT_EQ(s.name, "leaf-spine-8");
  EXPECT_EQ(s.seed, 42u);

  EXPECT_EQ(s.topology.kind, TopologyKind::LeafSpine);
  EXPECT_EQ(s.topology.leaf_spine.leaves, 4);
  EXPECT_EQ(s.topology.leaf_spine.spines, 2);
  EXPECT_EQ(s.topology.leaf_spine.hosts_per_leaf, 2);
  EXPECT_EQ(s.topology.loc.line, 4);
  EXPECT_EQ(s.topology.loc.column, 3);

  EXPECT_EQ(s.fabric.switch_kind, SwitchKind::Router);
  EXPECT_EQ(s.fabric.ecmp_hash, EcmpHash::L4);
  EXPECT_EQ(s.fabric.mtu, 4200u);

  EXPECT_DOUBLE_EQ(*s.hosts.defaults.cpu, 1.0);
  EXPECT_EQ(*s.hosts.defaults.memory_bytes, 1ull << 30);

  EXPECT_EQ(*s.links.defaults.rate_bps, 10'000'000'000ull);
  EXPECT_EQ(*s.links.defaults.delay_ns, 2'000ull);
  ASSERT_EQ(s.links.classes.size(), 2u);
  EXPECT_EQ(*s.links.classes.at("host-leaf").rate_bps, 25'000'000'000ull);
  const LinkShape& ls = s.links.classes.at("leaf-spine");
  EXPECT_EQ(*ls.rate_bps, 100'000'000'000ull);
  EXPECT_EQ(*ls.delay_ns, 1'000ull);
  EXPECT_EQ(*ls.ecn_threshold_ns, 40'000ull);
  EXPECT_EQ(*ls.queue_ns, 200'000ull);
  EXPECT_FALSE(ls.queue_bytes);
  EXPECT_EQ(s.links.class_locs.at("leaf-spine").line, 19);
  ASSERT_EQ(s.links.overrides.size(), 1u);
  EXPECT_EQ(s.links.overrides[0].link, "leaf1:spine2");
  EXPECT_DOUBLE_EQ(*s.links.overrides[0].shape.loss, 0.005);
  EXPECT_EQ(s.links.overrides[0].loc.line, 21);

  EXPECT_EQ(s.rdma, RdmaMode::Auto);

  ASSERT_EQ(s.workload.size(), 2u);
  const auto& c = std::get<CollectiveStep>(s.workload[0].step);
  EXPECT_EQ(c.collective, "allreduce");
  EXPECT_EQ(c.library, "gloo");
  EXPECT_EQ(c.transport, "auto");
  EXPECT_EQ(c.sizes, (std::vector<uint64_t>{64 << 10, 1 << 20, 16 << 20}));
  EXPECT_EQ(c.iterations, 20);
  EXPECT_EQ(s.workload[0].loc.line, 24);
  const auto& e = std::get<ExecStep>(s.workload[1].step);
  EXPECT_EQ(e.hosts, "all");
  EXPECT_EQ(e.command, (std::vector<std::string>{"python3", "my_train.py"}));

  ASSERT_EQ(s.faults.size(), 3u);
  EXPECT_EQ(s.faults[0].at_ns, 2'000'000'000ull);
  EXPECT_EQ(s.faults[0].link, "leaf2:spine1");
  ASSERT_TRUE(s.faults[0].set);
  EXPECT_DOUBLE_EQ(*s.faults[0].set->loss, 0.02);
  EXPECT_FALSE(s.faults[0].down || s.faults[0].up);
  EXPECT_TRUE(s.faults[1].down);
  EXPECT_FALSE(s.faults[1].set);
  EXPECT_TRUE(s.faults[2].up);
  EXPECT_EQ(s.faults[2].loc.line, 33);
  EXPECT_EQ(s.faults[2].loc.file, "test.yaml");
}

TEST(Loader, DefaultsOfOptionalSections) {
  Scenario s = load_ok(kMinimal);
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.fabric.switch_kind, SwitchKind::Router);
  EXPECT_EQ(s.fabric.ecmp_hash, EcmpHash::L4);
  EXPECT_EQ(s.fabric.mtu, 1500u);
  EXPECT_TRUE(s.hosts.defaults.empty());
  EXPECT_TRUE(s.links.defaults.empty());
  EXPECT_EQ(s.rdma, RdmaMode::Auto);
  EXPECT_TRUE(s.workload.empty());
  EXPECT_TRUE(s.faults.empty());
  // An empty section is the same as an absent one.
  Scenario t = load_ok(std::string(kMinimal) + "workload:\nfaults:\nlinks:\n");
  EXPECT_TRUE(t.workload.empty());
}

TEST(Loader, CollectiveDefaults) {
  Scenario s = load_ok(std::string(kMinimal) + "workload: [{collective: broadcast}]\n");
  const auto& c = std::get<CollectiveStep>(s.workload.at(0).step);
  EXPECT_EQ(c.library, "gloo");
  EXPECT_EQ(c.transport, "auto");
  EXPECT_EQ(c.sizes, std::vector<uint64_t>{1 << 20});
  EXPECT_EQ(c.iterations, 20);
}

TEST(Loader, ExecHostListIsCommaJoined) {
  Scenario s = load_ok(std::string(kMinimal) +
                       "workload:\n  - exec: {hosts: [h1, h2], command: [hostname]}\n");
  EXPECT_EQ(std::get<ExecStep>(s.workload.at(0).step).hosts, "h1,h2");
}

TEST(Loader, OtherTopologyKinds) {
  Scenario ft = load_ok("name: t\ntopology: {kind: fat-tree, k: 4}\n");
  EXPECT_EQ(ft.topology.kind, TopologyKind::FatTree);
  EXPECT_EQ(ft.topology.fat_tree.k, 4);

  Scenario rail = load_ok(
      "name: t\ntopology: {kind: rail-optimized, nodes: 2, gpus_per_node: 8, spines: 1,\n"
      "  scale_up: {rate: 400gbit, delay: 300ns}}\n");
  EXPECT_EQ(rail.topology.kind, TopologyKind::RailOptimized);
  EXPECT_EQ(rail.topology.rail.nodes, 2);
  EXPECT_EQ(rail.topology.rail.gpus_per_node, 8);
  EXPECT_EQ(*rail.topology.rail.scale_up.rate_bps, 400'000'000'000ull);
  EXPECT_EQ(*rail.topology.rail.scale_up.delay_ns, 300ull);

  Scenario ex = load_ok(R"(name: t
topology:
  kind: explicit
  nodes:
    - {name: sw1, role: switch}
    - {name: h1, role: host}
  links:
    - {a: h1, b: sw1, rate: 1gbit, loss: 1%, down: true}
)");
  const ExplicitSpec& spec = ex.topology.explicit_;
  ASSERT_EQ(spec.nodes.size(), 2u);
  EXPECT_EQ(spec.nodes[0].role, Role::Switch);
  EXPECT_EQ(spec.nodes[1].name, "h1");
  EXPECT_EQ(spec.nodes[1].loc.line, 6);
  ASSERT_EQ(spec.links.size(), 1u);
  EXPECT_EQ(spec.links[0].a, "h1");
  EXPECT_EQ(spec.links[0].b, "sw1");
  EXPECT_EQ(*spec.links[0].shape.rate_bps, 1'000'000'000ull);
  EXPECT_TRUE(*spec.links[0].shape.down);
  EXPECT_EQ(spec.links[0].loc.line, 8);
  EXPECT_EQ(spec.links[0].loc.column, 7);
}

TEST(Loader, QueueIsTimeOrBytesByUnit) {
  auto queue_of = [](const std::string& q) {
    return load_ok(std::string(kMinimal) + "links: {default: {queue: " + q + "}}\n").links.defaults;
  };
  EXPECT_EQ(*queue_of("200us").queue_ns, 200'000ull);
  EXPECT_FALSE(queue_of("200us").queue_bytes);
  EXPECT_EQ(*queue_of("64K").queue_bytes, 65'536ull);
  EXPECT_EQ(*queue_of("100000").queue_bytes, 100'000ull);
  EXPECT_FALSE(queue_of("100000").queue_ns);
}

TEST(Loader, HostOverridesKeepTheirPosition) {
  Scenario s = load_ok(std::string(kMinimal) +
                       "hosts:\n  cpu: 2\n  overrides:\n    - {host: h1, memory: 512M}\n");
  EXPECT_DOUBLE_EQ(*s.hosts.defaults.cpu, 2.0);
  ASSERT_EQ(s.hosts.overrides.size(), 1u);
  EXPECT_EQ(s.hosts.overrides[0].host, "h1");
  EXPECT_EQ(*s.hosts.overrides[0].limits.memory_bytes, 512ull << 20);
  EXPECT_FALSE(s.hosts.overrides[0].limits.cpu);
  EXPECT_EQ(s.hosts.overrides[0].loc.line, 6);
  EXPECT_EQ(s.hosts.overrides[0].loc.column, 7);
}

TEST(Loader, HostsClockAndTmp) {
  Scenario d = load_ok(kMinimal);
  EXPECT_EQ(d.hosts.clock, HostClock::Wall);
  EXPECT_EQ(d.hosts.tmp, HostTmp::Private);
  Scenario s = load_ok(std::string(kMinimal) + "hosts: {clock: fabric, tmp: shared}\n");
  EXPECT_EQ(s.hosts.clock, HostClock::Fabric);
  EXPECT_EQ(s.hosts.tmp, HostTmp::Shared);
  Scenario w = load_ok(std::string(kMinimal) + "hosts: {clock: wall, tmp: private}\n");
  EXPECT_EQ(w.hosts.clock, HostClock::Wall);
  EXPECT_EQ(w.hosts.tmp, HostTmp::Private);
  EXPECT_EQ(load_error(std::string(kMinimal) + "hosts: {clock: real}\n"),
            "test.yaml:3:16: hosts.clock: unknown value 'real'; valid: wall, fabric");
  EXPECT_EQ(load_error(std::string(kMinimal) + "hosts:\n  tmp: host\n"),
            "test.yaml:4:8: hosts.tmp: unknown value 'host'; valid: private, shared");
}

// fabric.gso: off or a super-frame size; not where draws per frame (loss, damage) would meet a
// super-frame whole, nor with OVS switches.
TEST(Loader, GsoIsASizeAndRefusesPerFrameDraws) {
  EXPECT_EQ(load_ok(kMinimal).fabric.gso_bytes, 0u);
  EXPECT_EQ(load_ok(std::string(kMinimal) + "fabric: {gso: off}\n").fabric.gso_bytes, 0u);
  Scenario s =
      load_ok(std::string(kMinimal) + "fabric: {gso: 64K}\nlinks: {default: {loss: 0%}}\n");
  EXPECT_EQ(s.fabric.gso_bytes, 65536u);
  EXPECT_EQ(gso_max_segs_for(s.fabric), 45u);  // 65536 / 1448
  EXPECT_EQ(gso_max_segs_for(FabricSpec{}), 1u);
  EXPECT_EQ(load_error(std::string(kMinimal) + "fabric: {gso: 2K}\n"),
            "test.yaml:3:15: fabric.gso: off or a size from two frames (2 x mtu: 3000) to "
            "64K, e.g. 64K");
  EXPECT_NE(load_error(std::string(kMinimal) + "fabric: {switch: ovs, gso: 64K}\n")
                .find("not with switch: ovs"),
            std::string::npos);
  EXPECT_EQ(
      load_error(std::string(kMinimal) + "fabric: {gso: 32K}\nlinks:\n  default: {loss: 1%}\n"),
      "test.yaml:5:19: links.default.loss: loss is drawn per frame, and with fabric.gso a "
      "super-frame of up to 32768 bytes would meet it whole; set gso: off");
  EXPECT_NE(load_error(std::string(kMinimal) +
                       "fabric: {gso: 32K}\nlinks:\n  overrides:\n    - {link: \"h1:leaf1\", "
                       "duplicate: 1%}\n")
                .find("links.overrides[0].duplicate: duplicate is drawn per frame"),
            std::string::npos);
}

// With fabric.gso every rate-limited port queues two super-frames (TCP's small queues keep two of
// a flow's there), and faults may not set what is drawn per frame.
TEST(Loader, GsoNeedsQueuesOfTwoSuperFramesAndNoPerFrameFaults) {
  const std::string gso = std::string(kMinimal) + "fabric: {gso: 64K}\n";
  auto shallow = build_model(load_ok(gso + "links: {default: {rate: 25mbit}}\n"), 0);
  ASSERT_FALSE(shallow);
  EXPECT_NE(shallow.error().message.find("test.yaml:3:15: fabric.gso: a port's queue must hold "
                                         "two super-frames (128K), and h1>leaf1 (rate 25mbit)"),
            std::string::npos)
      << shallow.error().message;
  EXPECT_TRUE(build_model(load_ok(gso + "links: {default: {rate: 25mbit, queue: 128K}}\n"), 0));
  EXPECT_TRUE(build_model(load_ok(gso + "links: {default: {rate: 100gbit}}\n"), 0));  // 10 ms
  auto fault =
      build_model(load_ok(gso + "faults:\n  - {at: 1s, link: \"h1:leaf1\", set: {loss: 1%}}\n"), 0);
  ASSERT_FALSE(fault);
  EXPECT_NE(fault.error().message.find("faults.set: loss and damage are drawn per frame"),
            std::string::npos)
      << fault.error().message;
}

TEST(Loader, OneDirectionLinkOverride) {
  Scenario s = load_ok(std::string(kMinimal) +
                       "links:\n  overrides:\n    - {link: \"h1>leaf1\", delay: 5ms}\n");
  EXPECT_EQ(s.links.overrides.at(0).link, "h1>leaf1");
}

TEST(Loader, RdmaModes) {
  for (auto [word, mode] : {std::pair{"auto", RdmaMode::Auto}, std::pair{"on", RdmaMode::On},
                            std::pair{"off", RdmaMode::Off}}) {
    Scenario s = load_ok(std::string(kMinimal) + "rdma: {enabled: " + word + "}\n");
    EXPECT_EQ(s.rdma, mode) << word;
  }
}

TEST(Loader, ErrorsHaveFileLineColumnFieldAndValidValues) {
  std::string e = load_error(
      "name: t\n"
      "topology:\n"
      "  kind: leaf-spine\n"
      "  leaves: 2\n"
      "  spines: 1\n"
      "  hosts_per_leaf: 1\n"
      "fabric: {switch: router, mtu: 1500, ecmp_hash: l5}\n");
  EXPECT_EQ(e, "test.yaml:7:48: fabric.ecmp_hash: unknown value 'l5'; valid: l3, l4, qp");
}

TEST(Loader, TopologyKindErrorNamesEveryKind) {
  std::string e = load_error("name: t\ntopology:\n  kind:       clos\n");
  EXPECT_EQ(e,
            "test.yaml:3:15: topology.kind: unknown value 'clos'; valid: leaf-spine, fat-tree, "
            "rail-optimized, explicit");
}

TEST(Loader, KeyOfAnotherKind) {
  std::string e = load_error("name: t\ntopology: {kind: fat-tree, k: 4, leaves: 3}\n");
  EXPECT_NE(e.find("test.yaml:2:34: topology.leaves: leaves is for leaf-spine, not fat-tree"),
            std::string::npos)
      << e;
}

TEST(Loader, TooManyHosts) {
  std::string e = load_error(
      "name: t\ntopology: {kind: leaf-spine, leaves: 100, spines: 2, hosts_per_leaf: 50}\n");
  EXPECT_NE(e.find("topology.hosts_per_leaf: 100 leaves x 50 = 5000 hosts; at most 4096"),
            std::string::npos)
      << e;
}

TEST(Loader, EmptyDocument) {
  EXPECT_EQ(load_error(""), "test.yaml:1:1: empty scenario; it needs at least name and topology");
  EXPECT_NE(load_error("# only a comment\n").find("empty scenario"), std::string::npos);
}

TEST(Loader, SecondDocumentIsAnError) {
  std::string e = load_error(std::string(kMinimal) + "---\nname: u\n");
  EXPECT_NE(e.find("test.yaml:4:1: a second YAML document"), std::string::npos) << e;
}

// Found by the fuzzer (tests/fuzz/corpus/scenario/stray-comma-*): yaml-cpp 0.7's LoadAll
// returned empty documents for ever at a stray ','.
TEST(Loader, AStrayCommaIsAnErrorNotAnEndlessListOfDocuments) {
  std::string e = load_error(",\n");
  EXPECT_NE(e.find("test.yaml:1:1: invalid YAML: unexpected ','"), std::string::npos) << e;
}

TEST(Loader, MissingFileNamesThePath) {
  auto r = load_scenario_file("/nonexistent/dir/x.yaml");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("/nonexistent/dir/x.yaml"), std::string::npos);
  EXPECT_NE(r.error().what().find("No such file"), std::string::npos) << r.error().what();
}

TEST(Loader, DirectoryIsNotAScenario) {
  auto r = load_scenario_file(kSourceDir / "scenarios");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().what().find("scenarios"), std::string::npos) << r.error().what();
}

TEST(Loader, LabNames) {
  EXPECT_TRUE(is_valid_lab_name("default"));
  EXPECT_TRUE(is_valid_lab_name("leaf-spine-8"));
  EXPECT_TRUE(is_valid_lab_name("0lab"));
  EXPECT_FALSE(is_valid_lab_name(""));
  EXPECT_FALSE(is_valid_lab_name("leaf-spine-16"));  // 13 characters
  EXPECT_FALSE(is_valid_lab_name("-x"));
  EXPECT_FALSE(is_valid_lab_name("Lab"));
  EXPECT_FALSE(is_valid_lab_name("a_b"));
}

TEST(Loader, NodeNames) {
  EXPECT_TRUE(is_valid_node_name("h1"));
  EXPECT_TRUE(is_valid_node_name("n12-g3"));
  EXPECT_TRUE(is_valid_node_name("abcdefghijklmno"));  // 15, an interface name's limit
  EXPECT_FALSE(is_valid_node_name("abcdefghijklmnop"));
  EXPECT_FALSE(is_valid_node_name("1h"));
  EXPECT_FALSE(is_valid_node_name("h.1"));
}

// --- The small behaviour of the scenario structs.

TEST(LinkShape, MergeTakesTheFieldsSetInOver) {
  LinkShape base{.rate_bps = 10, .delay_ns = 2000, .loss = 0.1};
  base.merge(LinkShape{.delay_ns = 5, .down = true});
  EXPECT_EQ(base, (LinkShape{.rate_bps = 10, .delay_ns = 5, .loss = 0.1, .down = true}));
  EXPECT_FALSE(base.empty());
  EXPECT_TRUE(LinkShape{}.empty());
}

TEST(LinkShape, QueueGivenAsBytesReplacesQueueGivenAsTime) {
  LinkShape cls{.queue_ns = 200'000};
  cls.merge(LinkShape{.queue_bytes = 65'536});
  EXPECT_FALSE(cls.queue_ns);
  EXPECT_EQ(*cls.queue_bytes, 65'536u);
  cls.merge(LinkShape{.rate_bps = 1});  // says nothing about the queue: keeps it
  EXPECT_EQ(*cls.queue_bytes, 65'536u);
}

TEST(HostLimits, Merge) {
  HostLimits limits{.cpu = 1.0, .memory_bytes = 1 << 30};
  limits.merge(HostLimits{.memory_bytes = 1 << 20});
  EXPECT_DOUBLE_EQ(*limits.cpu, 1.0);
  EXPECT_EQ(*limits.memory_bytes, 1u << 20);
}

TEST(SourceLoc, Str) {
  EXPECT_EQ((SourceLoc{"a.yaml", 7, 13}).str(), "a.yaml:7:13");
  EXPECT_EQ((SourceLoc{"a.yaml", 0, 0}).str(), "a.yaml");
}

// --- The shipped scenarios.

std::vector<fs::path> yaml_files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Subdirectories too: scenarios/replay/ reads its workload files at load.
TEST(ShippedScenarios, AllLoad) {
  auto files = yaml_files_in(kSourceDir / "scenarios");
  EXPECT_GE(files.size(), 5u);
  for (const fs::path& f : files) {
    auto r = load_scenario_file(f);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->file, f.string());
  }
}

TEST(ShippedScenarios, Default) {
  auto r = load_scenario_file(kSourceDir / "scenarios/default.yaml");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "default");
  EXPECT_EQ(r->topology.leaf_spine.leaves, 4);
  EXPECT_EQ(r->topology.leaf_spine.hosts_per_leaf, 2);
  EXPECT_EQ(r->topology.leaf_spine.spines, 2);
  EXPECT_EQ(*r->links.defaults.rate_bps, 25'000'000ull);
  const auto& c = std::get<CollectiveStep>(r->workload.at(0).step);
  EXPECT_EQ(c.transport, "tcp");
  EXPECT_EQ(c.iterations, 5);
}

TEST(ShippedScenarios, LeafSpine512) {
  auto r = load_scenario_file(kSourceDir / "scenarios/leaf-spine-512.yaml");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "ls512");
  EXPECT_EQ(r->topology.leaf_spine.leaves * r->topology.leaf_spine.hosts_per_leaf, 512);
  EXPECT_TRUE(r->workload.empty());
}

// --- The malformed-scenario corpus: tests/data/bad/*.yaml, each starting with a line
// "# expect: <substring of the error>".

class BadScenario : public testing::TestWithParam<fs::path> {};

std::string expected_substring(const fs::path& file) {
  std::ifstream in(file);
  std::string first;
  std::getline(in, first);
  const std::string prefix = "# expect: ";
  if (first.rfind(prefix, 0) != 0) return "";
  return first.substr(prefix.size());
}

TEST_P(BadScenario, FailsWithLocatedMessage) {
  const fs::path& file = GetParam();
  std::string expect = expected_substring(file);
  ASSERT_FALSE(expect.empty()) << file << " does not start with '# expect: '";
  auto r = load_scenario_file(file);
  ASSERT_FALSE(r) << file << " loaded without error";
  const std::string& msg = r.error().message;
  EXPECT_EQ(msg.rfind(file.string() + ":", 0), 0u) << msg;
  EXPECT_NE(msg.find(expect), std::string::npos) << "error: " << msg << "\nexpected: " << expect;
}

std::vector<fs::path> bad_files() {
  return yaml_files_in(kSourceDir / "tests/data/bad");
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadScenario, testing::ValuesIn(bad_files()),
                         [](const testing::TestParamInfo<fs::path>& info) {
                           std::string name = info.param.stem().string();
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(BadScenarioCorpus, IsLargeEnough) {
  EXPECT_GE(bad_files().size(), 20u);
}

// fabric.load_balance: a mode for every switch, or `default` with tiers and switches; bad modes,
// parameters and switch kinds are refused naming the key.
TEST(Loader, LoadBalanceModesAndOverrides) {
  const std::string base = std::string(kMinimal) + "fabric:\n  load_balance: ";
  EXPECT_EQ(load_ok(kMinimal).fabric.load_balance.mode, LoadBalanceMode::Ecmp);
  EXPECT_FALSE(load_ok(kMinimal).fabric.ebpf_balancing());
  const FabricSpec flowlet = load_ok(base + "{flowlet: {gap: 20us}}\n").fabric;
  EXPECT_EQ(flowlet.load_balance.mode, LoadBalanceMode::Flowlet);
  EXPECT_EQ(flowlet.load_balance.gap_ns, 20'000u);
  EXPECT_TRUE(flowlet.ebpf_balancing());
  EXPECT_EQ(load_ok(base + "flowlet\n").fabric.load_balance.gap_ns, 50'000u);
  const LoadBalance spray = load_ok(base + "{spray: {order: random}}\n").fabric.load_balance;
  EXPECT_EQ(spray.mode, LoadBalanceMode::Spray);
  EXPECT_TRUE(spray.random);
  const LoadBalance adaptive =
      load_ok(base + "{adaptive: {granularity: flowlet, gap: 10us}}\n").fabric.load_balance;
  EXPECT_EQ(adaptive.mode, LoadBalanceMode::Adaptive);
  EXPECT_TRUE(adaptive.per_flowlet);
  EXPECT_EQ(adaptive.gap_ns, 10'000u);
  EXPECT_TRUE(load_ok(std::string(kMinimal) + "fabric: {ecmp_hash: qp}\n").fabric.ebpf_balancing());

  const FabricSpec mixed =
      load_ok(base + "{default: adaptive, spine: spray, leaf1: {flowlet: {gap: 1us}}}\n").fabric;
  EXPECT_EQ(mixed.load_balance_of("leaf1", 1).mode, LoadBalanceMode::Flowlet);
  EXPECT_EQ(mixed.load_balance_of("leaf2", 1).mode, LoadBalanceMode::Adaptive);
  EXPECT_EQ(mixed.load_balance_of("spine1", 2).mode, LoadBalanceMode::Spray);
  EXPECT_TRUE(build_model(load_ok(base + "{default: spray, leaf1: ecmp, spine: flowlet}\n"), 0));
  auto unknown_switch = build_model(load_ok(base + "{default: spray, leaf9: ecmp}\n"), 0);
  ASSERT_FALSE(unknown_switch);
  EXPECT_NE(unknown_switch.error().message.find(
                "test.yaml:4:34: fabric.load_balance.leaf9: not a switch of this topology"),
            std::string::npos)
      << unknown_switch.error().message;

  EXPECT_EQ(load_error(base + "wrr\n"),
            "test.yaml:4:17: fabric.load_balance: unknown mode 'wrr'; valid: ecmp, flowlet, "
            "spray or adaptive");
  EXPECT_NE(
      load_error(base + "{spray: {order: sideways}}\n").find("fabric.load_balance.spray.order"),
      std::string::npos);
  EXPECT_NE(load_error(base + "{flowlet: {gap: 5s}}\n").find("a gap from 100ns to 1s"),
            std::string::npos);
  EXPECT_NE(load_error(base + "{adaptive: {gap: 5us}}\n").find("gap is for granularity: flowlet"),
            std::string::npos);
  EXPECT_NE(load_error(base + "{default: {teleport: {}}}\n").find("unknown mode 'teleport'"),
            std::string::npos);
  const std::string ovs =
      load_error(std::string(kMinimal) + "fabric:\n  switch: ovs\n  load_balance: spray\n");
  EXPECT_NE(ovs.find("test.yaml:5:17: fabric.load_balance: modes other than ecmp run in fabemu's "
                     "eBPF balancer on router switches; OVS select groups"),
            std::string::npos)
      << ovs;
  EXPECT_NE(load_error(std::string(kMinimal) + "fabric: {switch: bridge, ecmp_hash: qp}\n")
                .find("fabric.ecmp_hash: qp is hashed by fabemu's eBPF balancer"),
            std::string::npos);
}

// A workload step changes the modes between steps; it puts the balancer on every router switch
// and is refused on OVS switches and for switches the topology lacks.
TEST(Loader, LoadBalanceStep) {
  const Scenario s = load_ok(std::string(kMinimal) +
                             "workload:\n  - load_balance: {default: spray, leaf: adaptive}\n"
                             "  - {collective: allreduce}\n");
  ASSERT_EQ(s.workload.size(), 2u);
  const auto* step = std::get_if<LoadBalanceStep>(&s.workload[0].step);
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->lb.mode, LoadBalanceMode::Spray);
  ASSERT_EQ(step->overrides.size(), 1u);
  EXPECT_EQ(step->overrides[0].lb.mode, LoadBalanceMode::Adaptive);
  EXPECT_TRUE(s.has_load_balance_step());
  EXPECT_FALSE(s.fabric.ebpf_balancing());
  EXPECT_TRUE(build_model(s, 0));
  EXPECT_NE(load_error(std::string(kMinimal) + "workload:\n  - load_balance: sideways\n")
                .find("workload[0].load_balance: unknown mode 'sideways'"),
            std::string::npos);
  auto ovs = build_model(load_ok(std::string(kMinimal) +
                                 "fabric: {switch: ovs}\nworkload:\n  - load_balance: spray\n"),
                         0);
  ASSERT_FALSE(ovs);
  EXPECT_NE(ovs.error().message.find("workload.load_balance: fabemu's eBPF balancer runs on "
                                     "router switches"),
            std::string::npos)
      << ovs.error().message;
  auto unknown = build_model(
      load_ok(std::string(kMinimal) + "workload:\n  - load_balance: {spine9: spray}\n"), 0);
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("workload.load_balance.spine9: not a switch"),
            std::string::npos)
      << unknown.error().message;
}

}  // namespace
}  // namespace fabemu

namespace fabemu {
namespace {

const char kPfcLab[] =
    "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 1, hosts_per_leaf: 2}\n";

TEST(LoaderPfc, ThresholdsPerLinkAndTheLosslessClass) {
  auto s = load_scenario_string(std::string(kPfcLab) +
                                    "fabric: {lossless: {udp_port: 4791, dscp: [26, 46]}}\n"
                                    "links:\n  default: {rate: 25gbit, pfc: {xoff: 200K, xon: "
                                    "150K, watchdog: 1ms}}\n  overrides:\n    - {link: "
                                    "leaf1:spine1, pfc: off}\n",
                                "test.yaml");
  ASSERT_TRUE(s) << s.error().what();
  ASSERT_TRUE(s->fabric.lossless);
  EXPECT_EQ(s->fabric.lossless->udp_port, 4791);
  EXPECT_EQ(s->fabric.lossless->dscp, (std::vector<int>{26, 46}));
  ASSERT_TRUE(s->links.defaults.pfc);
  EXPECT_EQ(*s->links.defaults.pfc, (PfcShape{200 * 1024, 150 * 1024, 1'000'000}));
  EXPECT_EQ(s->links.defaults.str(), "rate 25gbit, pfc {xoff 200K, xon 150K, watchdog 1ms}");
  ASSERT_EQ(s->links.overrides.size(), 1u);
  EXPECT_EQ(s->links.overrides[0].shape.pfc, PfcShape{});  // off
  // Without `lossless`, the class is RoCEv2.
  auto r = load_scenario_string(std::string(kPfcLab) + "fabric: {lossless: roce}\n", "t.yaml");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->fabric.lossless_class().udp_port, 4791);
  EXPECT_EQ(load_scenario_string(kPfcLab, "t.yaml")->fabric.lossless_class().udp_port, 4791);
}

TEST(LoaderPfc, HoldInTheQueueAndTheTrafficStep) {
  auto s = load_scenario_string(std::string(kPfcLab) +
                                    "fabric: {lossless: {hold: queue}}\n"
                                    "workload:\n  - traffic: {flows: [[h1, h3], [h2, h4]], "
                                    "transport: udp, duration: 2ms, rate: 1gbit}\n",
                                "test.yaml");
  ASSERT_TRUE(s) << s.error().what();
  ASSERT_TRUE(s->fabric.lossless);
  EXPECT_TRUE(s->fabric.lossless->hold_queue);
  EXPECT_EQ(s->fabric.lossless->udp_port, 4791);  // {hold: queue} alone: RoCEv2
  ASSERT_EQ(s->workload.size(), 1u);
  const auto* t = std::get_if<IncastStep>(&s->workload[0].step);
  ASSERT_TRUE(t);
  EXPECT_TRUE(t->is_traffic());
  EXPECT_EQ(t->flows,
            (std::vector<std::pair<std::string, std::string>>{{"h1", "h3"}, {"h2", "h4"}}));
  EXPECT_EQ(t->transport, "udp");
  EXPECT_EQ(t->duration_ns, 2'000'000u);
  EXPECT_EQ(t->rate_bps, 1'000'000'000u);
  auto d =
      load_scenario_string(std::string(kPfcLab) + "fabric: {lossless: {dscp: [26]}}\n", "t.yaml");
  ASSERT_TRUE(d);
  EXPECT_FALSE(d->fabric.lossless->hold_queue);  // departure unless asked
  EXPECT_NE(load_error(std::string(kPfcLab) + "fabric: {lossless: {dscp: [26], hold: pause}}\n")
                .find("fabric.lossless.hold"),
            std::string::npos);
  EXPECT_NE(
      load_error(std::string(kPfcLab) + "workload:\n  - traffic: {flows: [[h1]], duration: 1ms}\n")
          .find("a list of [from, to] host pairs"),
      std::string::npos);
  auto unknown = load_scenario_string(
      std::string(kPfcLab) + "workload:\n  - traffic: {flows: [[h1, h9]], duration: 1ms}\n",
      "t.yaml");
  ASSERT_TRUE(unknown);
  auto m = build_model(*unknown, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().what().find("t.yaml:4:5: workload.traffic: no host named 'h9'"),
            std::string::npos)
      << m.error().what();
}

TEST(LoaderPfc, BadThresholdsNameTheField) {
  EXPECT_EQ(load_error(std::string(kPfcLab) + "links: {default: {pfc: {xoff: 100K, xon: 150K}}}\n"),
            "test.yaml:3:42: links.default.pfc.xon: xon (153600 bytes) must be below xoff "
            "(102400 bytes): the pause ends when the buffer has drained to xon, e.g. xoff 200K, "
            "xon 150K");
  EXPECT_NE(load_error(std::string(kPfcLab) + "links: {default: {pfc: {xoff: 1K, xon: 0}}}\n")
                .find("links.default.pfc.xoff: xoff of 1024 bytes is below one 1500-byte frame"),
            std::string::npos);
  EXPECT_NE(
      load_error(std::string(kPfcLab) + "links: {default: {pfc: {xoff: 200K}}}\n").find("pfc.xon"),
      std::string::npos);
  EXPECT_NE(load_error(std::string(kPfcLab) + "fabric: {lossless: {dscp: [64]}}\n")
                .find("fabric.lossless.dscp[0]"),
            std::string::npos);
  EXPECT_NE(load_error(std::string(kPfcLab) + "fabric: {lossless: iwarp}\n")
                .find("the lossless class is roce"),
            std::string::npos);
}

TEST(LoaderPfc, LiveChangesTakeTheSameThresholds) {
  LinkShape s;
  EXPECT_TRUE(set_link_shape_field(s, "pfc", "200K,150K,1ms", 1500, ShapeSyntax::Change));
  EXPECT_EQ(s.pfc, (PfcShape{200 * 1024, 150 * 1024, 1'000'000}));
  EXPECT_TRUE(set_link_shape_field(s, "pfc", "off", 1500, ShapeSyntax::Change));
  EXPECT_EQ(s.pfc, PfcShape{});
  EXPECT_FALSE(set_link_shape_field(s, "pfc", "100K,150K", 1500, ShapeSyntax::Change));
  EXPECT_FALSE(set_link_shape_field(s, "pfc", "200K", 1500, ShapeSyntax::Change));
}

}  // namespace
}  // namespace fabemu

namespace fabemu {
namespace {

// qps_per_peer: Gloo's connections per peer, for the collectives that split their buffers.
TEST(Loader, QpsPerPeerIsGloosAndOnlyForCollectivesThatSplit) {
  const std::string step = std::string(kMinimal) + "workload:\n  - {collective: ";
  Scenario s = load_ok(step + "alltoall, qps_per_peer: 4}\n");
  EXPECT_EQ(std::get<CollectiveStep>(s.workload.at(0).step).qps_per_peer, 4);
  EXPECT_EQ(
      std::get<CollectiveStep>(load_ok(step + "allreduce}\n").workload.at(0).step).qps_per_peer, 1);
  EXPECT_NE(load_error(step + "allreduce, qps_per_peer: 0}\n").find("workload[0].qps_per_peer"),
            std::string::npos);
  EXPECT_NE(load_error(step + "allreduce, qps_per_peer: 17}\n").find("qps_per_peer"),
            std::string::npos);
  const std::string mpi = load_error(step + "allreduce, library: mpi, qps_per_peer: 2}\n");
  EXPECT_NE(mpi.find("test.yaml:4:"), std::string::npos) << mpi;
  EXPECT_NE(mpi.find("library: gloo"), std::string::npos) << mpi;
  EXPECT_NE(load_error(step + "allgather, qps_per_peer: 2}\n").find("allgather cannot split"),
            std::string::npos);
}

}  // namespace
}  // namespace fabemu
