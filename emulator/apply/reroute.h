// Routing around failed links without a routing protocol: every switch gets the routes a
// protocol would converge to (the plan's, without those links). The set of failed links is
// kept in the lab's run dir, so that `link down`/`link up` and the fault timeline agree on it.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "apply/ovs.h"
#include "model/lab_model.h"
#include "plan/lab_paths.h"
#include "shaping/link_shaper.h"
#include "util/result.h"

namespace fabemu {

class Rerouter {
 public:
  // The lab's failed links as recorded (none when nothing was recorded).
  static Result<Rerouter> open(const LabModel& model, const LabPaths& paths);

  // Marks `links` failed (or repaired), records the set and moves the routes of every local
  // switch: a router by route changes, an OVS switch by its bridge's flows. Says what changed
  // ("rerouted: 12 route changes on 4 switches"), or why nothing could ("routes unchanged: no
  // way around the failed links (...)"). A BGP lab's routers reroute by themselves: only the
  // set is recorded.
  Result<std::string> set_failed(const std::vector<int>& links, bool failed);

  const std::set<int>& failed() const { return failed_; }

 private:
  Rerouter(const LabModel& model, const LabPaths& paths) : model_(&model), paths_(&paths) {}
  Result<std::string> apply(const std::set<int>& next_failed);
  Result<void> replace_bridge(int sw, const std::vector<Route>& routes);

  const LabModel* model_;
  const LabPaths* paths_;
  std::set<int> failed_;
  std::optional<OvsTools> ovs_tools_;  // OVS switches: found at the first reroute
  int pool_ = -1;                      // the lab's address pool (OVS MACs carry it)
};

// A BGP lab's balancers (fabric.load_balance) follow the routers' FIBs: every local balanced
// router's groups rebuilt from the multipath routes its kernel holds now, as FRR installed them
// (a member BGP withdrew leaves its groups), in the lab's maps `maps`. For a lab that balances
// (balance_switches found some): the caller asks once. Says how many switches were written.
Result<size_t> balance_from_fibs(const LabModel& m, const LabPaths& paths, LinkShaper& maps);

}  // namespace fabemu
