// Unit-test helpers: scenarios from strings, plans applied to the fake backend, and the
// all-pairs check every fabric must pass there.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fake_backend.h"
#include "plan/partition.h"
#include "plan/plan.h"
#include "scenario/loader.h"

namespace fabemu::unit {

inline Scenario load(const std::string& yaml) {
  auto s = load_scenario_string(yaml, "test.yaml");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().what());
  return s.ok() ? *s : Scenario{};
}

// The scenario's model (pool 0); an empty one, with a failure, when it does not build.
inline LabModel model_of(const std::string& yaml) {
  auto m = build_model(load(yaml), 0);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().what());
  return m.ok() ? *m : LabModel{};
}

struct Applied {
  LabModel model;
  LabPaths paths;
  Plan plan;
  FakeBackend fake;
};

// The scenario's plan (lab "t", address pool `pool`) applied action by action; null (with a
// failure) when an action is refused.
inline std::unique_ptr<Applied> apply_fake(const std::string& yaml, const PlanOptions& options = {},
                                           int pool = 0) {
  auto a = std::make_unique<Applied>();
  auto m = build_model(load(yaml), pool);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().what());
  if (!m.ok()) return nullptr;
  a->model = std::move(*m);
  a->paths.lab = "t";
  a->plan = make_plan(a->model, a->paths, pool, options);
  for (const Action& act : a->plan.actions) {
    auto r = a->fake.apply(act);
    EXPECT_TRUE(r.ok()) << describe(act) << ": " << r.error().what();
    if (!r.ok()) return nullptr;
  }
  return a;
}

// The scenario's lab spread over `machines` machines (plan/partition.h), each machine's part
// planned and applied to a fake kernel of its own, then the machines joined over their tunnels
// (FakeBackend::join). `fake` is the joined view; `parts` what each machine built.
struct AppliedCluster : Applied {
  std::vector<Plan> plans;
  std::vector<FakeBackend> parts;
};

inline std::unique_ptr<AppliedCluster> apply_cluster(const std::string& yaml, int machines,
                                                     const PlanOptions& options = {},
                                                     int pool = 0) {
  auto a = std::make_unique<AppliedCluster>();
  auto m = build_model(load(yaml), pool);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().what());
  if (!m.ok()) return nullptr;
  auto placement = partition(*m, machines);
  EXPECT_TRUE(placement.ok());
  if (!placement.ok()) return nullptr;
  a->paths.lab = "t";
  for (int mi = 0; mi < machines; ++mi) {
    LabModel part = *m;
    part.part = MachinePart{mi, {}, {}, "eth0", "/shared", *placement};
    for (int j = 0; j < machines; ++j) {
      part.part->machines.push_back("m" + std::to_string(j + 1));
      part.part->underlay.push_back(Ipv4{0xc6120001u + static_cast<uint32_t>(j)});  // 198.18.0.x
    }
    a->plans.push_back(make_plan(part, a->paths, pool, options));
    a->parts.emplace_back();
    for (const Action& act : a->plans.back().actions) {
      auto r = a->parts.back().apply(act);
      EXPECT_TRUE(r.ok()) << "machine " << mi << ": " << describe(act) << ": " << r.error().what();
      if (!r.ok()) return nullptr;
    }
    if (mi == 0) a->model = part;
  }
  a->fake = FakeBackend::join(a->parts);
  return a;
}

// Every host reaches every other host's address over each of the first ECMP choices, and the
// reply finds its way back to the source address the kernel would pick. `check_path` sees
// every path there.
inline void expect_all_pairs_reach(
    const Applied& a, const std::function<void(const std::vector<std::string>&)>& check_path = {}) {
  const Topology& t = a.model.topo;
  for (int src : t.hosts())
    for (int dst : t.hosts()) {
      if (src == dst) continue;
      for (size_t choice = 0; choice < 4; ++choice) {
        auto path = a.fake.trace(a.paths.ns_name(t.nodes[src].name),
                                 a.model.addresses.host_address(t, dst), 16, choice);
        ASSERT_FALSE(path.empty()) << t.nodes[src].name << " -> " << t.nodes[dst].name;
        EXPECT_EQ(path.back(), a.paths.ns_name(t.nodes[dst].name));
        if (check_path) check_path(path);
        auto from = a.fake.source_for(path.front(), a.model.addresses.host_address(t, dst));
        ASSERT_TRUE(from);
        auto back = a.fake.trace(path.back(), *from, 16, choice);
        ASSERT_FALSE(back.empty()) << t.nodes[dst].name << " -> " << from->str();
        EXPECT_EQ(back.back(), path.front());
      }
    }
}

}  // namespace fabemu::unit
