// A lab across machines, as the machines and the launcher see it: each machine's own part
// (which it is, the underlay between them) and the record the launching side keeps of the lab.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/lab_model.h"
#include "util/result.h"

namespace fabemu {

// This machine's part of a lab over `machines` (names, in the allocation's order): its index
// (found by its own name: SLURMD_NODENAME, else the hostname), every machine's underlay address
// (what its name resolves to), the device that carries this machine's, and the directory every
// machine shares. EINVAL naming what does not resolve or fit.
Result<MachinePart> this_machine_part(const std::vector<std::string>& machines,
                                      const std::string& shared_dir);

// The underlay's MTU on this machine (of part.underlay_dev).
Result<uint32_t> underlay_mtu(const MachinePart& part);

// What the launching side keeps of a lab it spread over machines, so that `status`, `exec`,
// `link set`, `run` and `down` later reach the right machines.
struct ClusterRecord {
  std::string lab;
  std::string launcher;  // "slurm"
  std::vector<std::string> machines;
  int pool = -1;
  std::string scenario;    // the file it was built from
  std::string shared_dir;  // the directory every machine shares
  double time_scale = 1;   // what the machines agreed on
  std::string time_scale_why;
};

// $FABEMU_STATE_DIR, else $XDG_STATE_HOME/fabemu, else ~/.local/state/fabemu: "clusters/LAB.json"
// under it.
std::string cluster_record_path(const std::string& lab);
Result<void> write_cluster_record(const ClusterRecord& r);
Result<ClusterRecord> read_cluster_record(const std::string& lab);  // ENOENT: none
void remove_cluster_record(const std::string& lab);

// The whole lab as the launching side sees it: the model from the recorded scenario and pool,
// with the placement over the recorded machines (`part->index` -1: no node is built here).
Result<LabModel> cluster_model(const ClusterRecord& r);

// The directory every machine of the cluster shares: $FABEMU_CLUSTER_SHARED (scripts/slurm-sim
// sets it), else the state dir's "shared" (a home directory on a cluster's shared filesystem).
std::string cluster_shared_dir();

}  // namespace fabemu
