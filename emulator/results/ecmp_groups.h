// ECMP groups and how evenly their members carried a run's bytes: a switch's next hops for a
// route, as the ports leaving it, and each member's bytes and frames beside the others'.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/lab_model.h"
#include "results/telemetry.h"
#include "util/json.h"

namespace fabemu {

// One set of next hops of one switch: every route of the switch with exactly these members is
// one group (a leaf's default route and its routes to other leaves over the same uplinks).
struct EcmpGroup {
  int node = -1;
  std::vector<size_t> dirs;  // members: directions leaving `node`, 2 * link + (b_to_a ? 1 : 0)
  int routes = 0;            // routes of the node over exactly these members
};

// The groups of every switch with more than one next hop toward hosts (routes to switches'
// loopbacks left out), in node order, from the model's routes: the static plan's, which BGP
// converges to on a fabric that has not failed.
std::vector<EcmpGroup> ecmp_groups(const LabModel& m);

struct MemberLoad {
  size_t dir = 0;
  std::string name;  // "leaf1>spine1"
  uint64_t bytes = 0, frames = 0;
};

// A group's members over an interval. A member's figures are its port's: traffic of every
// route leaving through it, which on a leaf-spine's or fat-tree's upward ports is the group's.
struct GroupBalance {
  int node = -1;
  std::string name;  // "leaf1 > spine1|spine2"
  int routes = 0;
  std::vector<MemberLoad> members;
  uint64_t bytes = 0;  // all members
  // The busiest member over the mean (1: even; n: one member carried everything) and Jain's
  // index, (sum x)^2 / (n sum x^2) (1: even; 1/n: one member). Both 0 when nothing was carried.
  double max_over_mean = 0, jain = 0;
};

// `g`'s balance, each member's figures from `dir` (the growth of its counters over the run).
GroupBalance group_balance(const Topology& t, const EcmpGroup& g,
                           const std::function<DirectionSample(size_t)>& dir);

// Every group's balance, each member's figures from `dir`, busiest group first (ties: node
// order).
std::vector<GroupBalance> group_balances(const LabModel& m,
                                         const std::function<DirectionSample(size_t)>& dir);

// A balance as JSON: switch, name, routes, members (direction, bytes, frames), bytes,
// max_over_mean, jain; what report.jsonl's ecmp_group records and `status --json`'s
// ecmp_groups hold.
Json group_json(const Topology& t, const GroupBalance& g);

}  // namespace fabemu
