// A lab across machines: which machine builds each node, and the links that cross between them
// (which become VXLAN tunnels). Pure and deterministic: every machine computes the same one.
#pragma once

#include <string>
#include <vector>

#include "model/lab_model.h"
#include "util/result.h"

namespace fabemu {

// Places the lab's nodes on `machines` machines: every host stays with the switch it hangs from
// (its leaf or edge; a rail-optimized GPU with its server's scale-up switch), a fat-tree keeps
// its pods whole, these groups are spread to balance host counts, and the remaining switches
// (spines, cores, rail leaves) go where most of their neighbours are, spread evenly where that
// ties. Nodes the scenario's `placement:` names stay on the machine it names; their groups follow
// them. An error when `machines` is less than 1, or the placement names a machine past the last.
Result<Placement> partition(const LabModel& model, int machines);

// The fewest links any placement of the upper switches could cut, with the groups where they
// are: each upper switch on the machine with most of its neighbours (the load be as it may).
int min_cut_links(const LabModel& model, const Placement& p);

// What each machine carries, for `up --dry-run --machines M`.
struct MachineLoad {
  int hosts = 0, switches = 0;
  int links = 0;      // both ends here
  int cut_ends = 0;   // one end here, the other on another machine
  double demand = 0;  // frame-hops/s of the lab's demand (model/time_scale.h) its ports carry
};
std::vector<MachineLoad> machine_loads(const LabModel& model, const Placement& p);

// "h1-h8, leaf1, spine1": a machine's nodes, runs of numbered names folded.
std::string describe_nodes(const Topology& t, const std::vector<int>& nodes);

}  // namespace fabemu
