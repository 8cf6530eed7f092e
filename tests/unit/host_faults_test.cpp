// Host, NIC and partition faults in the scenario: parsed with positions, checked against the
// topology, expanded into timed steps (a freeze thaws, a partition with `for` heals), and the
// hosts they touch get a cgroup.
#include <gtest/gtest.h>

#include "fake_lab.h"
#include "runtime/faults.h"
#include "scenario/loader.h"

namespace fabemu {
namespace {

const std::string kTopo =
    "name: t\ntopology: {kind: leaf-spine, leaves: 2, spines: 2, hosts_per_leaf: 2}\n";

std::string with_faults(const std::string& faults) {
  return kTopo + "faults:\n" + faults;
}

std::string load_error(const std::string& yaml) {
  auto s = load_scenario_string(yaml, "f.yaml");
  if (!s.ok()) return s.error().what();
  auto m = build_model(*s, 0);
  return m.ok() ? "" : m.error().what();
}

TEST(HostFaults, EachKindIsExpandedIntoItsSteps) {
  const Scenario s =
      unit::load(with_faults("  - {at: 1s, host: h3, crash: true}\n"
                             "  - {at: 3s, host: h3, restart: true}\n"
                             "  - {at: 500ms, host: h1, freeze: 2s}\n"
                             "  - {at: 2s, host: h2, nic_down: eth0}\n"
                             "  - {at: 2500ms, host: h2, nic_up: eth0}\n"
                             "  - {at: 4s, partition: [[h1, h2], [h3, h4]], for: 1s}\n"));
  const auto steps = expand_faults(s);
  std::vector<std::string> what;
  for (const auto& st : steps) what.push_back(st.what);
  EXPECT_EQ(what, (std::vector<std::string>{"h1 frozen for 2s", "h3 crashes", "h2 eth0 down",
                                            "h1 thawed", "h2 eth0 up", "h3 restarts",
                                            "partition h1,h2 | h3,h4", "partition healed"}));
  using K = FaultStep::Kind;
  EXPECT_EQ(steps[3].kind, K::Thaw);
  EXPECT_EQ(steps[3].at_ns, 2'500'000'000u);
  EXPECT_EQ(steps[2].kind, K::NicDown);
  EXPECT_EQ(steps[2].nic, "eth0");
  EXPECT_EQ(steps[7].kind, K::Heal);
  EXPECT_EQ(steps[7].at_ns, 5'000'000'000u);
  EXPECT_EQ(steps[6].groups, (std::vector<std::vector<std::string>>{{"h1", "h2"}, {"h3", "h4"}}));
}

TEST(HostFaults, HostsWithFaultsGetACgroupToFreeze) {
  auto a = unit::apply_fake(with_faults("  - {at: 1s, host: h2, freeze: 1s}\n"));
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->fake.cgroups.count("fabemu/t/h2"));
  EXPECT_FALSE(a->fake.cgroups.count("fabemu/t/h1"));
}

TEST(HostFaults, BadFaultsAreRefusedWithFileLineAndField) {
  EXPECT_NE(load_error(with_faults("  - {at: 1s, host: h3, crash: true, freeze: 1s}\n"))
                .find("f.yaml:4:5: faults[0]: a host fault does exactly one thing"),
            std::string::npos);
  EXPECT_NE(load_error(with_faults("  - {at: 1s, host: h3, freeze: 0s}\n"))
                .find("a host freezes for some time"),
            std::string::npos);
  EXPECT_NE(load_error(with_faults("  - {at: 1s, link: leaf1:spine1, crash: true}\n"))
                .find("crash is for host faults"),
            std::string::npos);
  EXPECT_NE(load_error(with_faults("  - {at: 1s, host: h3, nic_down: eth7}\n"))
                .find("f.yaml:4:5: faults: host h3 has no NIC 'eth7' (it has eth0)"),
            std::string::npos)
      << load_error(with_faults("  - {at: 1s, host: h3, nic_down: eth7}\n"));
  EXPECT_NE(load_error(with_faults("  - {at: 1s, partition: [[h1, h2], [h2, h3]]}\n"))
                .find("host 'h2' is in two groups"),
            std::string::npos);
  EXPECT_NE(load_error(with_faults("  - {at: 1s, partition: [[h1, h2]]}\n"))
                .find("two or more groups of hosts"),
            std::string::npos);
  EXPECT_NE(load_error(with_faults("  - {at: 1s, partition: [[h1], [h9]]}\n"))
                .find("faults.partition: no host named 'h9'"),
            std::string::npos);
  EXPECT_NE(load_error(with_faults("  - {at: 1s, host: h1, crash: true, for: 2s}\n"))
                .find("for goes with partition"),
            std::string::npos);
}

}  // namespace
}  // namespace fabemu
