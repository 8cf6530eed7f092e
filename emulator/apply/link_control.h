// The link model of a running lab, live: what each direction of each link enforces and has
// counted, and changing it (`fabemu link set/down/up`, scenario faults) through the lab's
// pinned maps, without re-attaching anything.
#pragma once

#include <string>
#include <vector>

#include "apply/lab_datapath.h"
#include "model/topology.h"
#include "plan/lab_paths.h"
#include "plan/plan.h"
#include "shaping/link_shaper.h"

namespace fabemu {

struct DirectionState {
  Direction dir;
  std::string name;      // "leaf1>spine2"
  bool shaped = false;   // the program is on the port and has a config for it
  LinkShape shape;       // what the datapath enforces, in the real fabric's units (empty: unshaped)
  LinkShape wall_shape;  // the same as the port runs it (a dilated lab's rate / N, delay x N)
  LinkCounters counters;
};

// A switch's shared buffer (switches: {buffer, alpha}) as the datapath counts it.
struct SwitchBufferState {
  int node = -1;
  std::string name;
  double alpha = 1;
  BufferOccupancy occupancy;  // bytes (not dilated)
};

// A host NIC's DCQCN (rdma: {cc: dcqcn}): its counters and the QPs its reaction point paces.
struct HostDcqcnState {
  int node = -1;
  std::string name;
  DcqcnCounters counters;
  std::vector<DcqcnQp> qps;  // rates in the lab's wall units
};

struct LinkModelState {
  PlanOptions mode;                        // fq or policer, as the lab was built
  std::vector<DirectionState> dirs;        // every direction of every link, in link order
  std::vector<SwitchBufferState> buffers;  // this machine's switches with a shared buffer
  std::vector<HostDcqcnState> dcqcn;       // this machine's hosts, where the lab runs DCQCN
};

// The switches' shared buffers and the hosts' DCQCN that `shaper` (this machine's maps) holds,
// into st.buffers and st.dcqcn.
void read_buffers_and_dcqcn(const LabModel& model, const LinkShaper& shaper, LinkModelState& st);

// Upper bound (ns) of the histogram bucket holding quantile q (0..1) of the queue delays; 0
// when nothing was counted.
uint64_t queue_delay_quantile(const LinkCounters& c, double q);

// The mode the lab's link model runs in (fq, htb or policer and why), as `up` recorded it.
Result<PlanOptions> read_link_mode(const LabPaths& paths);

// Reads the mode file and the pinned maps of a lab that is up; through `open` when given (a
// sampler reading many times keeps one), else through maps opened for this call.
Result<LinkModelState> read_link_model(const LabPaths& paths, const LabModel& model,
                                       LinkShaper* open = nullptr);
// The lab's pinned maps, for repeated reads and changes (opening them loads and verifies the
// program: ~15 ms here).
Result<LinkShaper> open_link_model(const LabPaths& paths);
// Loads the link model with its maps pinned in pin_dir (bpffs mounted at bpffs_root first when
// missing) and, for PFC's queue mode, registers the lab's BPF qdisc under that kind.
Result<LinkShaper> load_link_model(const std::string& bpffs_root, const std::string& pin_dir,
                                   const std::string& pfc_qdisc = "");

struct LinkChange {
  std::string name;           // "leaf1>spine2"
  LinkShape before, after;    // in the real fabric's units
  bool attached_now = false;  // the port had no link model yet
};

struct ChangeOptions {
  bool accept_degraded = false;  // allow delay/jitter on a policer lab (they are not added)
};

// The links `link` names ("a:b", "a>b"), each once: what a down or up of it fails or repairs.
Result<std::vector<int>> links_named(const Topology& topo, const std::string& link);

// Merges `change` (in the real fabric's units) into the live shape of every direction `link` names
// ("a:b" both, "a>b" one) and writes it through `dp`: the next packet sees it; queues, loss
// sequences and counters carry on. A port without the model gets it first. Zero values turn a
// setting off. In a lab across machines only the directions that leave this machine's nodes
// change (none here: an empty list).
Result<std::vector<LinkChange>> change_links(const LabPaths& paths, const LabModel& model,
                                             const std::string& link, const LinkShape& change,
                                             const ChangeOptions& options, LabDatapath& dp);

}  // namespace fabemu
